"""One run of a node as a DBOS workflow: begin, converse turn by turn, end.

``begin`` and ``end`` are steps (their results are recorded) and the
conversation's model turns and tool calls are steps too (``_durable``), so a
recovered workflow replays everything that finished and carries on from there.
The agent is rebuilt from the node's row each time; the conversation is driven
with ``agent.iter()``, reading the node's inbox between turns.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import TYPE_CHECKING, Any

from dbos import DBOS

from ..._core import ProviderError
from ...agents import BaseAgent
from ...tools import LocalToolClient
from ._durable import DurableProvider, DurableToolClient, Steps
from ._engine import Engine, current_engine
from ._feature import RunSetup, RunTools, Section
from ._runs import (
    NO_RESULT,
    NOT_STARTED,
    SETTLED,
    Active,
    Stop,
    failure_outcome,
    run_workflow_id,
)
from ._tools import ASK_TOOL, NodeTools, admits, node_tools, schema_text
from ._types import NodeRow, Outcome, RunEnd, RunPlan, StopRecord

if TYPE_CHECKING:
    from ...providers import Provider

__all__ = ["node_run"]

NUDGES = 2
"""How many times a node that must submit a result is reminded before it fails."""

NUDGE = (
    "You have not finished: call `submit-result` with a result matching the schema, or "
    "`decline` if the task cannot honestly be done."
)


@DBOS.workflow(name="heron.node_run")
async def node_run(node_id: str, run: int) -> str:
    """Run a node's conversation from its unread messages to the end; returns its new status."""
    return await _Run(current_engine(), node_id, run).drive()


class _Run:
    def __init__(self, engine: Engine, node_id: str, run: int) -> None:
        self.engine = engine
        self.node_id = node_id
        self.run = run
        self.tools: NodeTools | None = None
        self._reads = 0  # inbox reads between turns so far (each one's key)
        self._fresh = False  # its begin step ran in this process (it is no recovered run)

    async def drive(self) -> str:
        engine, node_id = self.engine, self.node_id
        plan = await DBOS.run_step_async({"name": "begin"}, self._begin)
        if plan is None:
            return "skipped"
        await engine.events.prime(node_id)
        # Steps DBOS recorded before a restart are replayed, not run: until the replay
        # has caught up, a stop must wait, or the run's steps would no longer line up.
        if self._fresh:
            steps = Steps(0, node_id=node_id, run=self.run)
        else:
            # Recovered (its begin recorded before): even with no other step recorded, its
            # first turn may have ended unrecorded, and must then run again quietly.
            recorded = await engine.store.recorded_steps(run_workflow_id(node_id, self.run))
            steps = Steps(recorded - 1, node_id=node_id, run=self.run, recovered=True)
        current = await engine.store.node(node_id)  # the model as PATCHed since begin
        model = current["model"] if current is not None else plan["model"]
        # A run recovered after a restart is running as the log says (unless a SIGKILL
        # took its `running` event): no second one, so the log reads as the node lived and
        # a joiner finds the run's start. Not if its end was saved: it replays to its end.
        # (A warm node's create announces it.)
        if not plan.get("warm") and current is not None and current["status"] == "running":
            await engine.events.repair_status(node_id, "running")
        active = engine.register(node_id, self.run, model, steps)
        try:
            try:
                await engine.providers.prepare(model)
                agent: BaseAgent | None = self._agent(plan, active, steps)
                active.agent = agent
            except Exception as exc:  # a vanished cwd, a model without its API key ...
                agent, failure = None, _failed(exc)
            prompt, nudges = plan["prompt"], 0
            if plan.get("warm"):
                # A node made ahead of a create: all set up, it waits for a create to hand
                # it a prompt (or is discarded, never served).
                if not await _warm(engine, node_id, plan, None if agent else failure.message):
                    engine.forget(active)
                    return "discarded"
                prompt = "\n\n".join(await steps.run("inbox", self._inbox)) or "Continue."
            while True:
                if agent is None:
                    stop, state = failure, plan["state"]
                else:
                    stop = await self._converse(agent, prompt, active, steps)
                    state = agent.state()
                end = await steps.run("end", self._end, state, dataclasses.asdict(stop), nudges)
                if not end.get("continue"):
                    break
                prompt, nudges = end["prompt"], end.get("nudges", nudges)
        except BaseException:
            # Shutdown (or a fault of the daemon's own): the run's end was not saved,
            # so DBOS resumes it at the next start; nobody is told it ended.
            engine.forget(active)
            raise
        finally:
            if self.tools is not None:
                await self.tools.aclose()
        await engine.ended(active, end)
        return str(end["status"])

    async def _begin(self) -> RunPlan | None:
        engine = self.engine
        self._fresh = True
        row = await engine.store.node(self.node_id)
        if row is None or row["status"] in SETTLED:
            return None  # closed before its run got going
        unread = await engine.store.claim_messages(self.node_id, self.run, _step_id())
        # What a run is prepared from before its prompt: each field read here (and by the
        # features' ``begin``) must be in _types.LAUNCH_FIELDS, or a warm node could serve
        # a create it does not fit.
        plan: RunPlan = {
            "warm": row["warm"] is not None,
            "kind": row["kind"],
            "profile": row["profile"],
            "model": row["model"],
            "state": row["state"],
            "scopes": row["scopes"],
            "output_schema": row["output_schema"],
            "situational_context": row["situational_context"],
            "cwd": row["cwd"],
            "branch": None,
            "mode": row["mode"],
            "prompt": "\n\n".join(unread) or "Continue.",
        }
        for feature in engine.features.having("begin"):
            feature.begin(row, plan)
        return plan

    def _agent(self, plan: RunPlan, active: Active, steps: Steps) -> BaseAgent:
        engine, node_id = self.engine, self.node_id
        schema = plan["output_schema"]

        async def submit(value: Any) -> None:
            await engine.submit_result(node_id, value)

        async def decline(reason: str, code: str | None, retryable: bool) -> None:
            await engine.decline(node_id, reason, code, retryable)

        workspace = engine.workspace(node_id, plan["cwd"])
        small = _small_model(engine.providers.get(active.model))
        setup = RunSetup(
            node_id=node_id,
            run=self.run,
            plan=plan,
            workspace=workspace,
            small=small,
            # ``net`` (every scope, when none are given): its commands reach the network.
            network=plan["scopes"] is None or "net" in plan["scopes"],
        )
        _say_own(setup)
        for feature in engine.features.having("setup"):
            feature.setup(setup)
        if setup.shell is None:
            raise RuntimeError("no feature gives the node a shell")
        run = RunTools(
            node_id=node_id, run=self.run, plan=plan, admits=admits(plan["scopes"], setup.keep)
        )
        tools = self.tools = node_tools(
            scopes=plan["scopes"],
            output_schema=schema,
            workspace=workspace,
            submit=submit,
            decline=decline,
            shell=setup.shell,
            keep=setup.keep,
            granted=[tool for feature in engine.features for tool in feature.tools(run)],
            hidden=setup.hidden,
            small=small,
        )
        # A small model gets no skills: their instructions and tools would bury the task.
        skills = [] if small or setup.skills is None else setup.skills(tools)
        context = setup.context
        local = LocalToolClient(
            tools.tools,
            env_id=context.env_id if context is not None else "local",
            storage=setup.storage,
            ids=context.ids if context is not None else None,
        )
        client = DurableToolClient(
            local, node_id=node_id, events=engine.events, steps=steps, store=engine.store
        )
        provider = DurableProvider(
            steps=steps,
            node_id=node_id,
            model=lambda: active.model,
            providers=engine.providers,
            store=engine.store,
            events=engine.events,
        )
        return BaseAgent(
            provider=provider,
            tool_client=client,
            instruction=setup.instruction_text(),
            skills=skills,
            name=node_id,
            state=plan["state"],
            on_tool_result=client.on_tool_result,
        )

    async def _converse(self, agent: BaseAgent, prompt: str, active: Active, steps: Steps) -> Stop:
        if active.stop is not None and steps.caught_up.is_set():
            return active.stop

        async def talk() -> Stop:
            async with agent.iter(prompt) as conversation:
                async for turn in conversation:
                    if turn.done:
                        break
                    unread = await self._between_turns(steps)
                    for body in unread:
                        await conversation.add(body)
                result = conversation.result
                calls = result.tool_calls
                # Any call of the last turn, not only its last one: a model may ask
                # alongside other calls (a successful ask ends the run, so it is there).
                asked = result.stop_reason == "tool_stop" and any(
                    c.name == ASK_TOOL and not c.is_error for c in calls
                )
                return Stop(
                    kind="done",
                    reply=result.reply or None,
                    asked=asked,
                    stop_reason=result.stop_reason,
                )

        task: asyncio.Task[Stop] = asyncio.ensure_future(talk())
        active.task = task
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if active.stop is None or (current is not None and current.cancelling()):
                raise  # the daemon is going down: the workflow resumes at the next start
            return active.stop
        except ProviderError as exc:
            return Stop(
                kind="failed", reason="provider_error", message=str(exc), error_type="ProviderError"
            )
        except Exception as exc:
            return Stop(
                kind="failed", reason="crashed", message=str(exc), error_type=type(exc).__name__
            )
        finally:
            active.task = None

    async def _inbox(self) -> list[str]:
        return await self.engine.store.claim_messages(self.node_id, self.run, _step_id())

    async def _between_turns(self, steps: Steps) -> list[str]:
        """Messages that came while the turn ran, for the next one. Not a step (a step
        costs two writes, and most turns find none): each read has a key of its own, the
        count of reads so far (negative: never a step's id), and a run replaying its
        recorded steps only reads back what it took then (see ``read_inbox``)."""
        self._reads += 1
        return await self.engine.store.read_inbox(
            self.node_id, self.run, -self._reads, claim=steps.caught_up.is_set()
        )

    async def _end(self, state: Any, stop: StopRecord, nudges: int) -> RunEnd:
        engine, node_id, step = self.engine, self.node_id, _step_id()
        row = await engine.store.node(node_id)
        assert row is not None
        record = (row["extra"] or {}).get("ended")
        if record is not None and record.get("key") == [self.run, step]:
            # DBOS ran this step again after a crash: the end was saved; it is announced
            # unless that was written too (whatever the kill's timing, once).
            ended = record["value"].copy()
            key = f"{self.run}:{step}"
            if await engine.store.step_mark(node_id) != key:
                await self._announce(ended, key)
            return ended
        outcome: Outcome | None = None
        more = False
        already_settled = row["settled_at"] is not None
        if stop["kind"] == "done" and stop["asked"] and row["pending_result"] is None:
            # The agent asked the human something: it waits, dormant, for the answer.
            status, more = "dormant", True
        elif stop["kind"] == "done" and (
            row["pending_result"] is None and await _held(engine, node_id)
        ):
            # Its turn is over but children are still working for it: it waits, dormant,
            # and their outcomes wake it.
            status, more = "dormant", True
        elif stop["kind"] == "done":
            pending = row["pending_result"]
            if row["output_schema"] is not None and pending is None and nudges < NUDGES:
                await engine.store.update_node(node_id, state=state)
                return {"continue": True, "prompt": NUDGE, "nudges": nudges + 1}
            final_report = await _final_report(engine, row)
            outcome = _done_outcome(row, pending, stop, final_report)
            if row["root_lifecycle"] == "resident":
                status = "dormant"
            else:
                status = "completed" if outcome["kind"] == "result" else "failed"
            more = True
        elif stop["kind"] == "interrupted":
            status = "interrupted"
        elif stop["kind"] == "yielded":
            # Handed the turn back (yield, wait): dormant; messages already queued go on.
            status, more = "dormant", True
        elif stop["kind"] == "closed":
            status, outcome = "cancelled", failure_outcome(Stop(**stop))
        else:
            status, outcome = "failed", failure_outcome(Stop(**stop))
        # A node alive with an outcome (a resident root that answered before) takes the
        # new one: its outcome is its latest answer (see Store.end_run).
        settled_now = outcome is not None and (not already_settled or row["status"] not in SETTLED)
        done: RunEnd = {"continue": False, "status": status, "settled": settled_now}
        if settled_now:
            done["outcome"] = outcome  # announced as is (see _announce)
        async with engine.locked(node_id):
            unread = await engine.store.end_run(
                node_id,
                self.run,
                state=state,
                status=status,
                outcome=outcome,
                continue_with_messages=more,
                step=step,
                record={"key": [self.run, step], "value": done},
            )
        if unread:
            return {"continue": True, "prompt": "\n\n".join(unread), "nudges": 0}
        await self._announce(done, f"{self.run}:{step}")
        return done

    async def _announce(self, done: RunEnd, key: str) -> None:
        """Publish the run's end (its status, and its outcome if it settled one) and write
        it with the step's mark, before the end step's result is recorded."""
        events, node_id = self.engine.events, self.node_id
        events.publish(node_id, "node.status.changed", {"status": done["status"]})
        if done.get("settled"):
            # The outcome the run settled, not one read back: a revive may already have
            # taken it back (an end recorded before it was kept has none: read back).
            outcome = done.get("outcome")
            if outcome is None:
                outcome = await self.engine.store.outcome(node_id)
            events.publish(node_id, "node.settled", {"outcome": outcome})
        await events.step_done(node_id, key)


async def _warm(engine: Engine, node_id: str, plan: RunPlan, failure: str | None) -> bool:
    """Whether a node made ahead of a create goes on to serve one (the features that make
    such nodes say; one that could not be set up is discarded unless a create claimed it
    already: it then fails as that create made cold would)."""
    for feature in engine.features.having("warm"):
        if not await feature.warm(node_id, plan, failure):
            return False
    return True


async def _held(engine: Engine, node_id: str) -> bool:
    """Whether a feature holds the node dormant (children still working for it ...)."""
    for feature in engine.features.having("holds"):
        if await feature.holds(node_id):
            return True
    return False


async def _final_report(engine: Engine, row: NodeRow) -> str | None:
    """The node's final report file, as the first feature naming one says."""
    for feature in engine.features.having("final_report"):
        path = await feature.final_report(row)
        if path is not None:
            return path
    return None


def _step_id() -> int:
    """The DBOS step being run (a key that is the same when DBOS runs it again)."""
    step = DBOS.step_id
    return step if step is not None else 0


def _failed(exc: Exception) -> Stop:
    return Stop(
        kind="failed",
        reason="crashed",
        message=f"the run could not start: {type(exc).__name__}: {exc}",
        error_type=NOT_STARTED,  # running again as it is would fail the same way
    )


def _done_outcome(
    row: NodeRow, pending: Any, stop: StopRecord, final_report: str | None
) -> Outcome:
    reply, stop_reason = stop.get("reply"), stop.get("stop_reason")  # (older records: none)
    if row["output_schema"] is None:
        if reply is None and stop_reason == "max_tokens":
            # Cut off before it wrote a word: there is no answer, and saying "completed"
            # would hide that. (Cut off mid-answer, the text it wrote is its result.)
            return failure_outcome(
                Stop(
                    kind="failed",
                    reason="max_tokens",
                    message="the model's answer was cut off by its token limit (max_tokens) "
                    "before it wrote any text",
                )
            )
        return {
            "kind": "result",
            "structured_result": None,
            "output_text": reply,
            "final_report_path": final_report,
            "stop_reason": stop_reason,
        }
    if pending is None:
        failed = Stop(
            kind="failed",
            reason="no_result",
            message=(
                f"the agent ended without submitting a result or declining "
                f"(reminded {NUDGES} times)"
            ),
            error_type=NO_RESULT,
        )
        return failure_outcome(failed)
    if pending["kind"] == "declined":
        return {
            "kind": "failure",
            "reason": "declined",
            "declined": pending["declined"],
            "detail": None,
        }
    return {
        "kind": "result",
        "structured_result": pending["value"],
        "output_text": reply,
        "final_report_path": final_report,
        "stop_reason": stop_reason,
    }


def _small_model(provider: Provider) -> bool:
    """Whether ``provider`` runs a model too small to choose its tools: the embedded
    model (a :class:`~heron.providers.LocalProvider` routing tools, as it does for
    models under a billion parameters)."""
    return getattr(provider, "route_tools", False) is True


def _say_own(setup: RunSetup) -> None:
    """The kernel's parts of a node's instruction. A small model's is only what the task
    needs: a persona, advice and a JSON schema in prose crowd its context (``heron run``,
    which answers well on it, has none); the tools' own schemas carry the rest."""
    plan = setup.plan
    if setup.small:
        if plan["output_schema"] is not None:
            setup.say(Section.TASK, "When you have the answer, call `submit-result` with it.")
    else:
        setup.say(
            Section.PERSONA,
            "You are a Heron node: an agent working on the task in the user's messages.",
        )
        if plan["cwd"]:
            setup.say(
                Section.WORKSPACE,
                f"Working directory (file and shell tools work here): {plan['cwd']}",
            )
        if plan["output_schema"] is not None:
            schema = schema_text(plan["output_schema"])
            setup.say(
                Section.TASK,
                "Finish by calling `submit-result` with a result matching this JSON schema "
                f"(or `decline` if the task cannot honestly be done):\n{schema}",
            )
    if plan["situational_context"]:
        context = plan["situational_context"]
        setup.say(Section.CONTEXT, f"Situational context (background, not a request):\n{context}")
