"""Iterating over a run's chunks instead of passing a callback."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from types import TracebackType
from typing import Any, Generic

from .._core import ChunkCallback, RunError, StreamChunk, UserError
from .._core.result import OutputT, RunResult

__all__ = ["AgentStream"]

_END = object()


class AgentStream(Generic[OutputT]):
    """A run whose :class:`StreamChunk` sequence is read with ``async for``.

    Made by :meth:`BaseAgent.run_stream`. The run starts on first use and
    waits for the reader at each chunk, exactly as it waits for an
    ``on_chunk`` callback, so a reader that stops at a chunk stops the run
    there. Leaving the ``async with`` block cancels a run that has not finished
    (the history stays consistent); :meth:`result` then raises
    :class:`RunError` carrying the partial run. Without ``async with``, a
    ``break`` cancels the run only once the abandoned iterator is collected, so
    use the block whenever you may stop reading early::

        async with agent.run_stream("What time is it?") as stream:
            async for chunk in stream:
                print(chunk.content, end="")
        result = await stream.result()
    """

    def __init__(
        self,
        start: Callable[[ChunkCallback], Awaitable[RunResult[OutputT]]],
        partial: RunResult[Any],
    ) -> None:
        self._start = start
        self._partial = partial
        self._queue: asyncio.Queue[StreamChunk | object] = asyncio.Queue()
        self._taken = asyncio.Event()
        self._task: asyncio.Task[RunResult[OutputT]] | None = None
        self._detached = False
        self._iterated = False

    def _ensure_started(self) -> asyncio.Task[RunResult[OutputT]]:
        if self._task is None:
            self._task = asyncio.ensure_future(self._start(self._offer))
            self._task.add_done_callback(self._finished)
        return self._task

    def _finished(self, task: asyncio.Task[RunResult[OutputT]]) -> None:
        # Runs however the task ended, even cancelled before it began.
        self._queue.put_nowait(_END)
        if not task.cancelled():
            task.exception()  # raised to the reader; read here so it is never logged as lost

    async def _offer(self, chunk: StreamChunk) -> None:
        self._queue.put_nowait(chunk)
        if not self._detached:
            self._taken.clear()
            await self._taken.wait()  # until the reader comes back for the next chunk

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
                self._taken.set()
            ended = True
        finally:
            # The reader broke out and the iterator was closed: the run is no
            # longer wanted.
            if not ended:
                task.cancel()
        await asyncio.wait([task])
        if not task.cancelled() and (failure := task.exception()) is not None:
            raise failure

    async def result(self) -> RunResult[OutputT]:
        """Wait for the run to end and return its result.

        Chunks not read yet stay readable. A run cancelled because the stream
        was left early raises :class:`RunError` with the partial run; cancelling
        the caller of ``result()`` cancels the run.
        """
        self._detached = True  # nobody may be reading any more: stop waiting for them
        self._taken.set()
        task = self._ensure_started()
        try:
            await asyncio.wait([task])
        except asyncio.CancelledError:
            task.cancel()
            await asyncio.wait([task])
            raise
        if task.cancelled():
            raise RunError(
                "the run was cancelled before it finished",
                result=self._partial,
            )
        return task.result()

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
