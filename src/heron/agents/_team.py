"""What agents working together share: the tool call in progress, and running a worker.

While a tool call runs, its :class:`CallScope` is the current one (a context
variable, so tasks the tool starts see it too). Whatever runs another agent
inside that call (an ``as_tool()`` worker, ``delegate()``, ``delegate_later()``)
finds there who is asking, where to forward the worker's chunks, and where to
leave the worker's result so that the caller's tool-call record keeps it and
its tokens are counted into the caller's run.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Awaitable, Iterable, Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from .._core import ChunkCallback, Message, StreamChunk, ToolCall, UserError, emit
from .._core.result import RunResult

if TYPE_CHECKING:
    from ._agent import BaseAgent

__all__ = [
    "CallScope",
    "current_scope",
    "current_tool_call",
    "run_worker",
    "settle",
    "start_worker",
]

_log = logging.getLogger("heron.agents")


class CallScope:
    """One tool call in progress: who made it, and the runs of other agents it made."""

    def __init__(
        self,
        agent_name: str,
        on_chunk: ChunkCallback | None,
        names: dict[str, object] | None = None,
        call: ToolCall | None = None,
    ) -> None:
        self.agent_name = agent_name
        self.call = call
        """The tool call being made (its id ties events and records to it)."""
        """The agent whose run made the call."""
        self.names: dict[str, object] = {} if names is None else names
        """The agents of the whole delegation tree by name (shared by all its calls)."""
        self.on_chunk = on_chunk
        """That run's chunk callback, where workers' chunks are forwarded."""
        self.runs: list[RunResult[Any]] = []
        """Other agents' runs made by the call, in the order they started (each filled
        in as it goes)."""
        self.closed = False
        """Whether the call has ended (no run may join it any more)."""
        self._task = asyncio.current_task()
        self._loop = asyncio.get_running_loop()
        self._tasks: set[asyncio.Task[Any]] = set()

    @contextlib.contextmanager
    def entered(self) -> Iterator[CallScope]:
        """Make this the current scope for the duration of the block."""
        token = _CURRENT.set(self)
        try:
            yield self
        finally:
            # A run abandoned on a closed loop is closed by the garbage collector,
            # in another context, where the token cannot be reset.
            with contextlib.suppress(ValueError):
                _CURRENT.reset(token)

    def record(self, result: RunResult[Any]) -> None:
        """Keep a worker run on the call from its start, so that even a run cancelled
        before it began, or still going when the call ends, is on the record."""
        if all(r is not result for r in self.runs):
            self.runs.append(result)

    def own(self, task: asyncio.Task[Any]) -> None:
        """Tie a task running a worker to the call: it may not outlive it."""
        if task is self._task or task.get_loop() is not self._loop or task.done():
            return  # the call's own task ends with it; another loop's is not ours to stop
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        """End the call: cancel the worker runs still going in other tasks, and wait.

        Their results could be counted nowhere afterwards, so none outlives the
        call that started it.
        """
        for task in self._tasks:
            task.cancel()
        await settle(self._tasks)
        self.closed = True


_CURRENT: ContextVar[CallScope | None] = ContextVar("heron_call_scope", default=None)


def current_scope() -> CallScope | None:
    """The tool call in progress in this task, if any."""
    return _CURRENT.get()


def current_tool_call() -> ToolCall | None:
    """The tool call an agent is making in this task, if any.

    A :class:`~heron.tools.ToolClient` is handed a call's name and arguments; this gives
    it the call itself (its id, to key a record of the call on)::

        async def call_tool(self, name, arguments):
            call = current_tool_call()
            key = call.id if call is not None else None
    """
    scope = _CURRENT.get()
    return scope.call if scope is not None else None


async def settle(tasks: Iterable[asyncio.Future[Any]]) -> None:
    """Wait until every task is done, however often the caller is cancelled meanwhile.

    A cancellation that arrived while waiting is raised again at the end.
    """
    pending = {t for t in tasks if not t.done()}
    cancelled = False
    while pending:
        try:
            _, pending = await asyncio.wait(pending)
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError


def forwarder(worker_name: str, on_chunk: ChunkCallback | None) -> ChunkCallback | None:
    """A callback passing a worker's chunks on to ``on_chunk``, tagged with its name.

    Chunks that already name an agent (from a worker's own worker) keep it.
    """
    if on_chunk is None:
        return None
    target = on_chunk

    async def forward(chunk: StreamChunk) -> None:
        if chunk.agent is None:
            chunk = dataclasses.replace(chunk, agent=worker_name)
        await emit(target, chunk)

    return forward


def start_worker(
    worker: BaseAgent,
    task: object,
    *,
    delegated_by: str | None,
    on_chunk: ChunkCallback | None = None,
    output_type: Any = None,
    fresh: bool = False,
) -> tuple[RunResult[Any], Awaitable[RunResult[Any]]]:
    """Check a worker run's arguments now; return its result-to-be and the run to await.

    The result is filled in as the run goes, so it holds the partial run (its
    tokens, its ``error``) even when the run fails or fails to begin. Inside a
    tool call, the run's chunks go to the caller's ``on_chunk`` unless one is
    given, and the result is on the call's record from now on. A ``fresh`` run
    starts from an empty conversation and leaves the worker's own untouched.
    """
    if not isinstance(task, Message) and (not isinstance(task, str) or not task.strip()):
        raise UserError(f"a task must be a non-empty string, not {task!r}")
    message, spec = worker._prepare(task, output_type)
    result: RunResult[Any] = RunResult(agent_name=worker.name, delegated_by=delegated_by)
    scope = current_scope()
    target = on_chunk if on_chunk is not None else scope.on_chunk if scope is not None else None

    if scope is not None:
        scope.record(result)

    async def go() -> RunResult[Any]:
        if scope is not None:
            # Started in a task of its own (delegate_later(), a task the tool made):
            # the call cancels it if it is still going when the call ends.
            task = asyncio.current_task()
            if task is not None:
                scope.own(task)
        started = time.perf_counter()
        try:
            chunks = forwarder(worker.name, target)
            return await worker._execute(message, chunks, spec, result, fresh=fresh)
        except BaseException as exc:
            if result.stop_reason is None:  # failed before the run began
                ended(result, exc)
            raise
        finally:
            result.duration = time.perf_counter() - started
            if scope is not None and scope.closed:
                _log.warning(
                    "agent %r's run ended after the tool call of %r that started it; "
                    "it is on the call's record, but its tokens are not in %r's totals",
                    worker.name,
                    scope.agent_name,
                    scope.agent_name,
                )

    return result, go()


def ended(result: RunResult[Any], exc: BaseException | None) -> None:
    """Mark a run ended by ``exc`` (``None``: it never began): cancelled, or failed with it."""
    if exc is None or isinstance(exc, asyncio.CancelledError):
        result.stop_reason = "cancelled"
    else:
        result.stop_reason = "error"
        result.error = f"{type(exc).__name__}: {exc}"


async def run_worker(
    worker: BaseAgent,
    task: object,
    *,
    delegated_by: str | None,
    on_chunk: ChunkCallback | None = None,
    output_type: Any = None,
) -> RunResult[Any]:
    """Run ``worker`` on ``task`` to the end (see :func:`start_worker`)."""
    _, run = start_worker(
        worker, task, delegated_by=delegated_by, on_chunk=on_chunk, output_type=output_type
    )
    return await run
