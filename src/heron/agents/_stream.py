"""Iterating over a run's chunks instead of passing a callback."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from types import TracebackType
from typing import Generic

from .._core import ChunkCallback, StreamChunk, UserError
from ._result import OutputT, RunResult

__all__ = ["AgentStream"]

_END = object()


class AgentStream(Generic[OutputT]):
    """A run whose :class:`StreamChunk` sequence is read with ``async for``.

    Made by :meth:`BaseAgent.run_stream`. The run starts on first use; after
    the chunks, :meth:`result` gives the :class:`RunResult`. Leaving the
    ``async with`` block early, or breaking out of the loop and dropping the
    iterator, cancels the run (the history stays consistent)::

        async with agent.run_stream("What time is it?") as stream:
            async for chunk in stream:
                print(chunk.content, end="")
        result = await stream.result()
    """

    def __init__(self, start: Callable[[ChunkCallback], Awaitable[RunResult[OutputT]]]) -> None:
        self._start = start
        self._queue: asyncio.Queue[StreamChunk | object] = asyncio.Queue()
        self._task: asyncio.Task[RunResult[OutputT]] | None = None
        self._iterated = False

    def _ensure_started(self) -> asyncio.Task[RunResult[OutputT]]:
        if self._task is None:
            self._task = asyncio.ensure_future(self._drive())
            # The failure is raised to whoever iterates or awaits result();
            # reading it here keeps an unread one from being logged as lost.
            self._task.add_done_callback(lambda t: t.cancelled() or t.exception())
        return self._task

    async def _drive(self) -> RunResult[OutputT]:
        try:
            return await self._start(self._queue.put_nowait)
        finally:
            self._queue.put_nowait(_END)

    def __aiter__(self) -> AsyncIterator[StreamChunk]:
        if self._iterated:
            raise UserError("an AgentStream can be iterated once")
        self._iterated = True
        return self._chunks()

    async def _chunks(self) -> AsyncIterator[StreamChunk]:
        task = self._ensure_started()
        ended = False
        try:
            while (item := await self._queue.get()) is not _END:
                assert isinstance(item, StreamChunk)
                yield item
            ended = True
        finally:
            # The consumer broke out and the iterator was closed: the run is no
            # longer wanted.
            if not ended:
                task.cancel()
        await asyncio.wait([task])
        failure = None if task.cancelled() else task.exception()
        if failure is not None:
            raise failure

    async def result(self) -> RunResult[OutputT]:
        """Wait for the run to end and return its result (unread chunks are discarded)."""
        return await self._ensure_started()

    async def cancel(self) -> None:
        """Cancel the run if it is still going, and wait until it has stopped."""
        task = self._task
        if task is None or task.done():
            return
        task.cancel()
        await asyncio.wait([task])

    async def __aenter__(self) -> AgentStream[OutputT]:
        self._ensure_started()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.cancel()
