"""Driving a run turn by turn: :meth:`BaseAgent.iter` and the :class:`Turn` it yields."""

from __future__ import annotations

import asyncio
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from .._core import Message, UserError
from .._core.result import RunResult, ToolCallRecord
from ._run import Run

__all__ = ["AgentRun", "Turn"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Turn:
    """One model turn of a run driven with :meth:`BaseAgent.iter`."""

    index: int
    """The step's number in the run, from 1."""
    message: Message | None
    """The assistant message the model produced; ``None`` for the last step when the
    turn limit ended the run without asking the model again."""
    tool_calls: tuple[ToolCallRecord, ...]
    """The tool calls the turn made, finished, in call order."""
    done: bool
    """Whether the run is over after this turn (see ``result.stop_reason``)."""


class AgentRun:
    """A run in progress, advanced one turn per iteration; see :meth:`BaseAgent.iter`.

    Entering it waits for the agent to be free (like :meth:`BaseAgent.run`) and
    appends the prompt; leaving it before the last turn ends the run as
    ``cancelled`` (the history stays consistent: every tool call has a result).
    """

    def __init__(self, running: AbstractAsyncContextManager[Run], prompt: Message) -> None:
        self._running = running
        self._prompt = prompt
        self._run: Run | None = None
        self._done = False
        self._turns = 0
        self._stepping = False

    @property
    def result(self) -> RunResult[Any]:
        """The run's result, filled in as turns complete."""
        return self._active().result

    @property
    def done(self) -> bool:
        """Whether the run is over."""
        return self._done

    async def __aenter__(self) -> AgentRun:
        if self._run is not None:
            raise UserError("an AgentRun can be entered once; call agent.iter() again")
        run = await self._running.__aenter__()
        try:
            await run.start(self._prompt)
        except BaseException as exc:
            await self._running.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        self._run = run
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        run = self._active()
        try:
            if not self._done:
                run.fail(exc if exc is not None else asyncio.CancelledError())
                self._done = True
            run.close()
        finally:
            await self._running.__aexit__(exc_type, exc, tb)
        return None

    def __aiter__(self) -> AgentRun:
        return self

    async def __anext__(self) -> Turn:
        run = self._active()
        if self._done:
            raise StopAsyncIteration
        if self._stepping:
            raise UserError("a turn is already in progress: await it before starting another")
        result = run.result
        calls_before, turns_before = len(result.tool_calls), result.turns
        self._stepping = True
        try:
            self._done = await run.step()
        except BaseException as exc:
            run.fail(exc)
            self._done = True
            raise
        finally:
            self._stepping = False
        self._turns += 1
        took_turn = result.turns > turns_before
        message = next((m for m in reversed(result.messages) if m.role == "assistant"), None)
        return Turn(
            index=self._turns,
            message=message if took_turn else None,
            tool_calls=tuple(result.tool_calls[calls_before:]),
            done=self._done,
        )

    async def add(self, message: str | Message) -> None:
        """Give the model another user message, read at its next turn."""
        run = self._active()
        if self._done:
            raise UserError("the run is over; start another with agent.run() or agent.iter()")
        if self._stepping:
            # Mid-turn, the message would land between a tool call and its result.
            raise UserError("add() between turns, not while one is in progress")
        if isinstance(message, str):
            message = Message.user(message)
        if not isinstance(message, Message) or message.role != "user":
            raise UserError("add() takes a str or a user Message")
        await run.add(message)

    def _active(self) -> Run:
        if self._run is None:
            raise UserError("use the run inside `async with agent.iter(...) as run:`")
        return self._run
