"""Teams of agents run as one: :class:`Pipeline`, and the :class:`TeamResult` teams return."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, TypeAlias

from .._core import ChunkCallback, Message, RunError, UserError
from .._core.result import RunResult
from ._agent import BaseAgent
from ._team import start_worker

__all__ = ["Pipeline", "TeamResult", "TeamStopReason"]

TeamStopReason: TypeAlias = Literal["done", "max_steps", "cancelled", "error"]
"""Why a team run ended: its work was done, the step limit was reached, it was
cancelled, or a step failed."""


@dataclass(kw_only=True, slots=True)
class TeamResult:
    """What one run of a :class:`Pipeline` or a ``Network`` produced.

    ``steps`` holds each acting agent's :class:`RunResult` in order (so
    ``history`` says who acted); a network's router agent's own runs are in
    ``routing``. Token counts add up every run of both, sub-runs included::

        result = await Pipeline([researcher, writer]).run("Write about herons")
        for step in result.steps:
            print(step.agent_name, step.input_tokens, step.duration)
        print(result.reply, result.input_tokens, result.duration)
    """

    team: str
    """Name of the team that ran."""
    prompt: str
    """The prompt the team was given (its text, when it was a :class:`Message`)."""
    steps: list[RunResult[Any]] = field(default_factory=list)
    """Each acting agent's run, in the order they acted."""
    routing: list[RunResult[Any]] = field(default_factory=list)
    """A network's router agent's runs, one per decision (empty otherwise)."""
    duration: float = 0.0
    """Wall-clock seconds the whole run took."""
    stop_reason: TeamStopReason | None = None
    """Why the run ended."""
    error: str | None = None
    """What went wrong, when ``stop_reason`` is ``"error"``."""
    id: str = field(default_factory=lambda: str(uuid.uuid4()))
    """Unique id of this team run (UUID4)."""
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    """When the team run started (UTC)."""
    prompt_message: Message | None = None
    """The prompt as given, when it was a :class:`Message` (images and all; not exported)."""

    @property
    def reply(self) -> str:
        """The last step's reply ("" before any step)."""
        return self.steps[-1].reply if self.steps else ""

    @property
    def history(self) -> list[str]:
        """Names of the agents that acted, in order."""
        return [s.agent_name for s in self.steps]

    @property
    def runs(self) -> list[RunResult[Any]]:
        """Every run of the team: the steps, then the router's runs."""
        return [*self.steps, *self.routing]

    @property
    def input_tokens(self) -> int:
        """Tokens read over every run of the team, failed ones included."""
        return sum(r.input_tokens for r in self.runs)

    @property
    def output_tokens(self) -> int:
        """Tokens generated over every run of the team."""
        return sum(r.output_tokens for r in self.runs)

    def tokens_by_agent(self) -> dict[str, tuple[int, int]]:
        """``{agent_name: (input_tokens, output_tokens)}``; adds up to the team's totals."""
        totals: dict[str, tuple[int, int]] = {}
        for run in self.runs:
            for name, (tokens_in, tokens_out) in run.tokens_by_agent().items():
                seen_in, seen_out = totals.get(name, (0, 0))
                totals[name] = (seen_in + tokens_in, seen_out + tokens_out)
        return totals

    def export(self) -> dict[str, Any]:
        """JSON-ready data: each run as :meth:`RunResult.export` gives it, no ``None`` values."""
        data: dict[str, Any] = {
            "team": self.team,
            "id": self.id,
            "created_at": self.created_at.isoformat(),
            "prompt": self.prompt,
            "steps": [s.export() for s in self.steps],
            "routing": [r.export() for r in self.routing] or None,
            "duration": round(self.duration, 6),
            "stop_reason": self.stop_reason,
            "error": self.error,
        }
        return {k: v for k, v in data.items() if v is not None}

    def to_json(self, **kwargs: Any) -> str:
        """:meth:`export` as a JSON string; ``kwargs`` go to :func:`json.dumps`."""
        return json.dumps(self.export(), **kwargs)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TeamResult:
        """Rebuild a result from :meth:`export` output (each run's checksum is checked)."""
        created = data.get("created_at")
        return cls(
            team=str(data["team"]),
            id=str(data.get("id") or uuid.uuid4()),
            created_at=datetime.fromisoformat(created) if created else datetime.now(UTC),
            prompt=str(data["prompt"]),
            steps=[RunResult.from_dict(s) for s in data.get("steps", ())],
            routing=[RunResult.from_dict(r) for r in data.get("routing", ())],
            duration=float(data.get("duration", 0.0)),
            stop_reason=data.get("stop_reason"),
            error=data.get("error"),
        )


class Team:
    """What :class:`Pipeline` and ``Network`` share: naming, timing, failure bookkeeping."""

    def __init__(self, agents: Sequence[BaseAgent], name: str) -> None:
        if isinstance(agents, str | bytes) or not isinstance(agents, Sequence) or not agents:
            raise UserError("a team needs a non-empty list of agents")
        for a in agents:
            if not isinstance(a, BaseAgent):
                raise UserError(f"team members must be heron agents, not {type(a).__name__}")
        if not isinstance(name, str) or not name:
            raise UserError(f"a team's name must be a non-empty string, not {name!r}")
        by_name: dict[str, BaseAgent] = {}
        for a in agents:
            if by_name.setdefault(a.name, a) is not a:
                # One agent acting twice is fine; two under one name blur the record.
                warnings.warn(
                    f"two different agents of team {name!r} are named {a.name!r}: its "
                    "history and tokens_by_agent() cannot tell them apart; give each "
                    "its own name=",
                    UserWarning,
                    stacklevel=3,
                )
        self.agents: tuple[BaseAgent, ...] = tuple(agents)
        """The members, in the order given."""
        self.name = name
        """The team's name, carried on its results."""
        self.last_result: TeamResult | None = None
        """The most recent run's result, failed and cancelled runs included."""

    async def run(self, prompt: str | Message, on_chunk: ChunkCallback | None = None) -> TeamResult:
        """Run the team on ``prompt`` and return its :class:`TeamResult`.

        ``prompt`` is a string, or a user :class:`Message` (with images, say),
        given whole to the first agent to act. Every member's chunks reach
        ``on_chunk`` tagged with its name. A failing step raises its error; the
        steps up to it are on :attr:`last_result`.
        """
        message = prompt if isinstance(prompt, Message) else None
        text = prompt.text if isinstance(prompt, Message) else prompt
        if not isinstance(text, str) or not text.strip():
            raise UserError(
                "a team's prompt must be a non-empty string or a user Message with text, "
                f"not {prompt!r}"
            )
        if message is not None and message.role != "user":
            raise UserError(f"a team's prompt must be a user message, not {message.role!r}")
        result = TeamResult(team=self.name, prompt=text, prompt_message=message)
        started = time.perf_counter()
        try:
            await self._play(result, on_chunk)
        except asyncio.CancelledError:
            result.stop_reason = "cancelled"
            raise
        except BaseException as exc:
            result.stop_reason = "error"
            result.error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            result.duration = time.perf_counter() - started
            self.last_result = result
        return result

    def run_sync(self, prompt: str | Message, on_chunk: ChunkCallback | None = None) -> TeamResult:
        """Blocking :meth:`run`, for scripts; refused inside a running event loop."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.run(prompt, on_chunk))
        raise UserError("run_sync() cannot be called from a running event loop; use `await run()`")

    async def _play(self, result: TeamResult, on_chunk: ChunkCallback | None) -> None:
        raise NotImplementedError


class Pipeline(Team):
    """Agents in a row: each one's reply is the next one's prompt.

    ``await pipeline.run(prompt)`` returns a :class:`TeamResult` with every
    step's :class:`RunResult`, the total tokens and the duration. A step
    that ends without a reply to pass on fails the pipeline with
    :class:`RunError`. Members keep their conversations between runs, as any
    agent does, so a second run builds on the first; build new agents for an
    unrelated job::

        pipeline = Pipeline([researcher, writer, editor])
        result = await pipeline.run("Herons of Europe")
        print(result.reply, result.input_tokens + result.output_tokens)
    """

    def __init__(self, agents: Sequence[BaseAgent], *, name: str = "pipeline") -> None:
        super().__init__(agents, name)

    async def _play(self, result: TeamResult, on_chunk: ChunkCallback | None) -> None:
        for agent in self.agents:
            text = handed_on(self, result)
            step, running = start_worker(agent, text, delegated_by=None, on_chunk=on_chunk)
            result.steps.append(step)  # kept, with what it spent, even if it fails
            await running
        result.stop_reason = "done"


def handed_on(team: Team, result: TeamResult) -> str | Message:
    """What the next step is given: the last step's reply, or the prompt before any.

    A step that ended without a reply (its turn limit, say) has nothing to pass
    on: :class:`RunError`, rather than a confusing complaint about an empty task.
    """
    if not result.steps:
        return result.prompt_message or result.prompt
    last = result.steps[-1]
    if not last.reply.strip():
        raise RunError(
            f"{type(team).__name__.lower()} {team.name!r}: step {len(result.steps)} "
            f"({last.agent_name!r}) ended ({last.stop_reason}) without a reply to pass on",
            result=last,
        )
    return last.reply
