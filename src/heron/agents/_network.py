"""A :class:`Network`: agents taking turns, in the order a router decides."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, Field, create_model

from .._core import ChunkCallback, UserError
from .._core.result import RunResult
from ._agent import BaseAgent
from ._pipeline import Team, TeamResult, handed_on
from ._team import start_worker

__all__ = ["DEFAULT_MAX_STEPS", "DONE", "Network", "Route", "Router"]

DONE = "done"
"""What a router returns (or a router agent answers) when the work is finished."""

DEFAULT_MAX_STEPS = 10
"""Agent turns one network run may take before it stops with ``stop_reason="max_steps"``."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Route:
    """A router's decision: who acts next, and optionally on what."""

    agent: str
    """Name of the agent to act next (or :data:`DONE`)."""
    task: str | None = None
    """What to tell it; ``None`` passes on the previous step's reply (the prompt, first)."""

    def __post_init__(self) -> None:
        if not isinstance(self.agent, str):
            raise UserError(f"a Route's agent must be an agent's name, not {self.agent!r}")
        if self.task is not None and (not isinstance(self.task, str) or not self.task.strip()):
            raise UserError(
                f"a Route's task must be a non-empty string, or None to pass on the "
                f"previous reply; not {self.task!r}"
            )


Router: TypeAlias = Callable[[TeamResult], "str | Route | Awaitable[str | Route | None] | None"]
"""Picks who acts next from the run so far: an agent's name, a :class:`Route`,
or ``None`` / :data:`DONE` to finish. Sync or async."""


class Network(Team):
    """Agents that take turns until a router says the work is done.

    ``router`` is a function of the run so far (a :class:`TeamResult`: the
    prompt and every step), or an agent asked for a structured answer naming
    the next agent (``{"next": "writer", "task": "..."}``) or ``"done"``. Each
    step's agent gets the route's task, else the previous step's reply (the
    prompt for the first); a step that ended without a reply, routed on with
    no task, fails the run with :class:`RunError`. ``max_steps`` bounds the
    agent turns. Members keep their conversations between runs, as any agent
    does; a router agent decides each step from a fresh briefing (the task,
    the members, this run's replies) and keeps nothing between decisions::

        def router(run: TeamResult) -> str | None:
            if not run.steps:
                return "researcher"
            return "writer" if run.history[-1] == "researcher" else None

        result = await Network([researcher, writer], router=router).run("Herons")
        print(result.history, result.reply)
    """

    def __init__(
        self,
        agents: Sequence[BaseAgent],
        *,
        router: Router | BaseAgent,
        max_steps: int = DEFAULT_MAX_STEPS,
        name: str = "network",
    ) -> None:
        # Checked before Team's warning about shared names: here they are an error.
        names = [a.name for a in agents if isinstance(a, BaseAgent)]
        if len(set(names)) != len(names):
            raise UserError(f"a network routes by name, so names must differ: {names}")
        super().__init__(agents, name)
        names = [a.name for a in self.agents]
        if DONE in names:
            raise UserError(f"no agent of a network may be named {DONE!r}: it means finished")
        if not isinstance(router, BaseAgent) and not callable(router):
            raise UserError(f"router must be a function or an agent, not {type(router).__name__}")
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise UserError(f"max_steps must be a whole number of at least 1, not {max_steps!r}")
        self.router = router
        """Who picks the next agent."""
        self.max_steps = max_steps
        """Agent turns one run may take."""
        self._by_name = {a.name: a for a in self.agents}
        choices: Any = Literal[(*names, DONE)]  # built at run time: opaque to mypy
        self._decision: type[BaseModel] = create_model(
            "NextAgent",
            next=(choices, Field(description="The agent to act next.")),
            task=(
                str | None,
                Field(default=None, description="What to tell it (optional)."),
            ),
        )

    async def _play(self, result: TeamResult, on_chunk: ChunkCallback | None) -> None:
        while True:
            if len(result.steps) >= self.max_steps:  # checked first: asking costs a run
                result.stop_reason = "max_steps"
                return
            route = await self._route(result, on_chunk)
            if route is None:
                result.stop_reason = "done"
                return
            agent = self._by_name[route.agent]
            task = route.task if route.task is not None else handed_on(self, result)
            step, running = start_worker(agent, task, delegated_by=None, on_chunk=on_chunk)
            result.steps.append(step)
            await running

    async def _route(self, result: TeamResult, on_chunk: ChunkCallback | None) -> Route | None:
        if isinstance(self.router, BaseAgent):
            decision, running = start_worker(
                self.router,
                self._briefing(result),
                delegated_by=None,
                on_chunk=on_chunk,
                output_type=self._decision,
                # Each decision starts afresh: the briefing says all there is to know,
                # and a kept conversation would resend every earlier briefing.
                fresh=True,
            )
            result.routing.append(decision)
            value = (await running).output_value
            task = value.task if value.task and value.task.strip() else None
            choice: object = Route(agent=value.next, task=task)
        else:
            choice = self.router(result)
            if inspect.isawaitable(choice):
                choice = await choice
        if choice is None or choice == DONE:
            return None
        if isinstance(choice, str):
            choice = Route(agent=choice)
        if not isinstance(choice, Route):
            raise UserError(
                f"router returned {choice!r}: expected an agent's name, a Route, or None"
            )
        if choice.agent == DONE:
            return None
        if choice.agent not in self._by_name:
            raise UserError(
                f"router chose {choice.agent!r}, which is not in network {self.name!r} "
                f"(agents: {', '.join(self._by_name)})"
            )
        return choice

    def _briefing(self, result: TeamResult) -> str:
        """What the router agent is asked before each step."""
        members = "\n".join(
            f"- {a.name}: {a.instruction.strip().splitlines()[0] if a.instruction.strip() else ''}"
            for a in self.agents
        )
        done = "\n".join(
            f"{i}. {s.agent_name}: {_outcome(s)}" for i, s in enumerate(result.steps, start=1)
        )
        return (
            f"Task: {result.prompt}\n\nAgents:\n{members}\n\n"
            f"Steps so far:\n{done or '(none yet)'}\n\n"
            f"Name the agent to act next, or {DONE!r} if the task is complete."
        )


def _outcome(step: RunResult[Any]) -> str:
    """A step's reply as the router is told it, saying when there is none or it is cut."""
    if not step.reply:
        return f"(no reply: {step.stop_reason})"
    if step.stop_reason == "max_tokens":
        return f"{step.reply} (cut off by the token limit)"
    return step.reply
