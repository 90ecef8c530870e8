"""Iterating over a run's chunks instead of passing a callback."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Generic

from .._core import ChunkCallback, StreamChunk
from ._result import OutputT, RunResult

__all__ = ["AgentStream"]

_END = object()


class AgentStream(Generic[OutputT]):
    """A run whose :class:`StreamChunk` sequence is read with ``async for``.

    Made by :meth:`BaseAgent.run_stream`. The run starts on first use; after
    the chunks, :meth:`result` gives the :class:`RunResult`. Leaving the
    ``async with`` block early cancels the run (the history stays consistent)::

        async with agent.run_stream("What time is it?") as stream:
            async for chunk in stream:
                print(chunk.content, end="")
        result = await stream.result()
    """

    def __init__(self, start: Callable[[ChunkCallback], Awaitable[RunResult[OutputT]]]) -> None:
        self._start = start
        self._queue: asyncio.Queue[StreamChunk | object] = asyncio.Queue()
        self._task: asyncio.Task[RunResult[OutputT]] | None = None
        self._finished = False

    def _ensure_started(self) -> asyncio.Task[RunResult[OutputT]]:
        if self._task is None:
            self._task = asyncio.ensure_future(self._drive())
        return self._task

    async def _drive(self) -> RunResult[OutputT]:
        try:
            return await self._start(self._queue.put_nowait)
        finally:
            self._queue.put_nowait(_END)

    def __aiter__(self) -> AgentStream[OutputT]:
        return self

    async def __anext__(self) -> StreamChunk:
        task = self._ensure_started()
        if self._finished:
            raise StopAsyncIteration
        item = await self._queue.get()
        if item is _END:
            self._finished = True
            failure = None if task.cancelled() else task.exception()
            if failure is not None:
                raise failure
            raise StopAsyncIteration
        assert isinstance(item, StreamChunk)
        return item

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
