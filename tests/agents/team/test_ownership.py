"""Worker runs and the tool calls that made them: who records, counts and stops them."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import threading
from typing import Any

import pytest

from heron import (
    DelegationFuture,
    Pipeline,
    ProviderError,
    RunResult,
    SimpleAgent,
    StreamChunk,
    tool,
)
from heron.testing import Reply, ScriptedProvider, Step, call


def agent(name: str, *steps: Step, tools: list[Any] | None = None) -> SimpleAgent:
    return SimpleAgent(provider=ScriptedProvider(steps), name=name, tools=tools or [])


async def test_two_workers_calling_each_other_do_not_freeze_the_parent() -> None:
    # lead asks alpha and beta in one turn; each one's model then asks the other.
    @tool
    async def ask_beta(task: str) -> str:
        """Ask beta."""
        return (await alpha.delegate(to=beta, task=task)).reply

    @tool
    async def ask_alpha(task: str) -> str:
        """Ask alpha."""
        return (await beta.delegate(to=alpha, task=task)).reply

    def script(other: str) -> list[Step]:
        # The refused one answers at once; the waiting one's worker answers it later.
        first = Reply(tool_calls=[call(f"ask_{other}", task="help me")], delay=0.05)
        return [first, "I did it alone.", "Here is help."]

    alpha = agent("alpha", *script("beta"), tools=[ask_beta])
    beta = agent("beta", *script("alpha"), tools=[ask_alpha])
    lead = agent(
        "lead",
        [call("alpha", task="part A"), call("beta", task="part B")],
        "Both parts done.",
        tools=[alpha.as_tool(), beta.as_tool()],
    )

    result = await asyncio.wait_for(lead.run("go"), 3)

    assert result.reply == "Both parts done."
    inner = [c for run in result.sub_runs for c in run.tool_calls]
    refused = [c for c in inner if c.is_error]
    assert len(refused) == 1 and len(inner) == 2
    assert "would wait for each other forever" in refused[0].result
    # The refused run is on the record, failed (not "cancelled"), with the reason.
    (never,) = refused[0].runs
    assert never.stop_reason == "error"
    assert "UserError" in (never.error or "") and never.turns == 0
    # The other wait went through once the refused worker's run had ended.
    (waited,) = next(c for c in inner if not c.is_error).runs
    assert (waited.stop_reason, waited.reply) == ("end_turn", "Here is help.")
    assert sum(i for i, _ in result.tokens_by_agent().values()) == result.input_tokens


async def test_the_same_worker_asked_twice_at_once_just_queues() -> None:
    helper = agent("helper", Reply(text="one", delay=0.02), "two")
    lead = agent(
        "lead",
        [call("helper", task="first"), call("helper", task="second")],
        "ok",
        tools=[helper.as_tool()],
    )
    result = await asyncio.wait_for(lead.run("go"), 3)
    assert [c.result for c in result.tool_calls] == ["one", "two"]


async def test_a_delegation_in_a_task_the_tool_made_is_recorded_stopped_and_counted() -> None:
    # The worker finishes a tool turn (spending tokens), then would think for a minute.
    worker = agent("worker", call("missing"), Reply(text="never", delay=60))
    busy = asyncio.Event()

    def on_chunk(chunk: StreamChunk) -> None:
        if chunk.role == "tool":
            busy.set()

    tasks: list[asyncio.Task[Any]] = []

    @tool
    async def fire_and_forget() -> str:
        """Start work in a task of its own and return."""
        run = lead.delegate(to=worker, task="background", on_chunk=on_chunk)
        tasks.append(asyncio.create_task(run))
        await busy.wait()
        return "started"

    lead = agent("lead", call("fire_and_forget"), "ok", tools=[fire_and_forget])
    result = await asyncio.wait_for(lead.run("go"), 3)

    assert tasks[0].cancelled()  # the call did not let it outlive it
    (record,) = result.tool_calls
    assert record.runs == (worker.last_result,)
    (sub,) = record.runs
    assert sub.stop_reason == "cancelled" and sub.input_tokens > 0
    assert result.input_tokens == result.own_input_tokens + sub.input_tokens
    assert result.tokens_by_agent()["worker"] == (sub.input_tokens, sub.output_tokens)


async def test_a_delegation_started_outside_and_awaited_in_a_tool_is_on_its_record() -> None:
    worker = agent("worker", "Early work.")
    futures: list[DelegationFuture[Any]] = []

    @tool
    async def collect() -> str:
        """Collect the early work."""
        return (await futures[0]).reply

    lead = agent("lead", call("collect"), "ok", tools=[collect])
    futures.append(lead.delegate_later(to=worker, task="start now"))
    (future,) = futures
    result = await lead.run("go")

    (record,) = result.tool_calls
    assert record.result == "Early work."
    assert record.runs == (future.partial,)
    assert result.input_tokens == result.own_input_tokens + future.partial.input_tokens > 0


async def test_an_unawaited_failure_is_logged_when_its_future_is_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    loop = asyncio.get_running_loop()
    reports: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: reports.append(context))
    try:
        future = agent("lead").delegate_later(to=agent("broken", ProviderError("x")), task="t")
        done = asyncio.Event()
        future.asyncio_task.add_done_callback(lambda _: done.set())
        future._observed = False  # looking at the task above is not looking at the outcome
        await done.wait()
        with caplog.at_level(logging.ERROR, logger="heron.agents"):
            del future
            gc.collect()
    finally:
        loop.set_exception_handler(previous)
    assert reports == []  # asyncio's own "never retrieved" report is replaced by ours
    assert "delegation to 'broken' (task 't') failed and nobody awaited it" in caplog.text


async def test_a_looked_at_failure_is_not_logged(caplog: pytest.LogCaptureFixture) -> None:
    future = agent("lead").delegate_later(to=agent("broken", ProviderError("x")), task="t")
    with pytest.raises(ProviderError):
        await future
    assert isinstance(future.exception(), ProviderError)
    with pytest.raises(ProviderError):
        future.result()
    with caplog.at_level(logging.ERROR, logger="heron.agents"):
        del future
    assert caplog.text == ""


async def test_each_run_says_which_provider_and_model_did_the_work() -> None:
    worker = SimpleAgent(provider=ScriptedProvider(["Done."], model="small-1"), name="worker")
    lead = SimpleAgent(
        provider=ScriptedProvider([call("worker", task="t"), "ok"], model="big-2"),
        name="lead",
        tools=[worker.as_tool()],
    )
    result = await lead.run("go")
    assert [(r.agent_name, r.provider, r.model) for r in result.walk()] == [
        ("lead", "scripted", "big-2"),
        ("worker", "scripted", "small-1"),
    ]
    restored = RunResult.from_dict(json.loads(result.to_json()))
    assert [(r.provider, r.model) for r in restored.walk()] == [
        ("scripted", "big-2"),
        ("scripted", "small-1"),
    ]


async def test_two_different_agents_sharing_a_name_in_one_tree_are_warned_about() -> None:
    first, second = agent("agent", "one"), agent("agent", "two")

    @tool
    async def both() -> str:
        """Ask both."""
        a = await lead.delegate(to=first, task="x")
        b = await lead.delegate(to=second, task="y")
        return a.reply + b.reply

    lead = agent("lead", call("both"), "ok", tools=[both])
    with pytest.warns(UserWarning, match="two different agents named 'agent' work in one run"):
        result = await lead.run("go")
    assert result.tool_calls[0].result == "onetwo"


async def test_one_agent_called_twice_in_a_tree_is_not_warned_about() -> None:
    helper = agent("helper", "one", "two")
    lead = agent(
        "lead", call("helper", task="a"), call("helper", task="b"), "ok", tools=[helper.as_tool()]
    )
    result = await lead.run("go")  # warnings are errors here
    assert [r.reply for r in result.sub_runs] == ["one", "two"]
    assert Pipeline([helper, lead, helper]).agents[0] is helper  # no warning either


def test_a_pipeline_of_different_agents_sharing_a_name_is_warned_about() -> None:
    with pytest.warns(UserWarning, match="two different agents of team 'pipeline' are named"):
        Pipeline([agent("agent"), agent("agent")])


async def test_a_worker_run_ending_after_its_call_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    worker = agent("worker", Reply(text="late", delay=0.2))
    ended = threading.Event()

    @tool(timeout=0.05)
    def blocking() -> str:
        """Run the worker on an event loop of its own (a thread the call cannot stop)."""
        try:
            return asyncio.run(lead.delegate(to=worker, task="t")).reply
        finally:
            ended.set()

    lead = agent("lead", call("blocking"), "ok", tools=[blocking])
    with caplog.at_level(logging.WARNING, logger="heron.agents"):
        result = await lead.run("go")
        assert await asyncio.to_thread(ended.wait, 5)

    (record,) = result.tool_calls
    assert record.is_error and "timed out" in record.result
    assert record.runs == (worker.last_result,)  # on the record from its start
    assert "agent 'worker''s run ended after the tool call of 'lead'" in caplog.text
