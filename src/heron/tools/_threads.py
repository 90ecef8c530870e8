"""The threads blocking tool calls run in: reused, and never too few.

A fixed pool would let hung tools starve the rest (a thread cannot be stopped), and a
thread per call costs a thread's start on every call (a daemon running many nodes makes
thousands). :class:`WorkerThreads` does neither: an idle thread takes the next call; when
none is idle a new one starts, so a call never waits behind another; a thread idle for
:data:`IDLE_SECONDS` ends. The threads are daemons: neither ``asyncio.run()`` nor the
program's exit waits for a tool that hangs.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import os
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["IDLE_SECONDS", "WorkerThreads", "in_worker_thread"]

T = TypeVar("T")

IDLE_SECONDS = 30.0
"""How long a worker thread waits for another call before it ends."""

_Job = Callable[[], Callable[[], None] | None]
"""A call to run: it returns what delivers its result (called once its thread counts as
idle again, so a caller that makes the next call at once reuses it), if anything."""


class WorkerThreads:
    """Daemon threads for blocking calls: idle ones are reused, and a new one starts
    whenever none is idle (see the module docstring)."""

    def __init__(self, idle_seconds: float = IDLE_SECONDS, name: str = "heron-tool") -> None:
        self.idle_seconds = idle_seconds
        self.name = name
        self._reset()

    def _reset(self) -> None:
        # One lock for all of it. Every job appended is promised to a waiting thread:
        # ``_idle`` counts the waiting threads no submit has claimed yet.
        self._ready = threading.Condition(threading.Lock())
        self._jobs: collections.deque[_Job] = collections.deque()
        self._idle = 0
        self._threads = 0
        self._started = 0

    def after_fork(self) -> None:
        """Forget the threads (a forked child has none of them)."""
        self._reset()

    @property
    def threads(self) -> int:
        """How many worker threads are alive."""
        return self._threads

    @property
    def idle(self) -> int:
        """How many of them wait for a call."""
        return self._idle

    @property
    def started(self) -> int:
        """How many threads were ever started (a measure of reuse)."""
        return self._started

    def submit(self, job: _Job) -> None:
        """Run ``job`` in an idle thread, or in a new one if none is idle."""
        with self._ready:
            if self._idle > 0:
                self._idle -= 1
                self._jobs.append(job)
                self._ready.notify()
                return
            self._threads += 1
            self._started += 1
            number = self._started
        try:
            threading.Thread(
                target=self._work, args=(job,), name=f"{self.name}-{number}", daemon=True
            ).start()
        except BaseException:
            with self._ready:
                self._threads -= 1
            raise

    def _work(self, job: _Job) -> None:
        while True:
            deliver = job()
            with self._ready:
                self._idle += 1
            if deliver is not None:
                deliver()
            with self._ready:
                deadline = time.monotonic() + self.idle_seconds
                while not self._jobs:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        # Nothing appended is waiting: no submit claimed this thread.
                        self._idle -= 1
                        self._threads -= 1
                        return
                    self._ready.wait(left)
                job = self._jobs.popleft()


_WORKERS = WorkerThreads()
"""The threads every blocking tool call of this process runs in."""

if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_WORKERS.after_fork)


async def in_worker_thread(func: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Run a blocking ``func`` in a worker thread, with the caller's context vars.

    A thread cannot be stopped: when the caller gives up (a timeout, a cancellation) the
    function runs on and its result is dropped; the thread it holds is not reused until
    it returns, and the next call gets another (hung tools never starve the others).
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()

    def settle(value: Any, failure: BaseException | None) -> None:
        if future.done():  # the caller gave up
            return
        if failure is not None:
            future.set_exception(failure)
        else:
            future.set_result(value)

    def job() -> Callable[[], None]:
        try:
            value, failure = context.run(func, *args, **kwargs), None
        except BaseException as exc:
            value, failure = None, exc

        def deliver() -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed while we worked
                loop.call_soon_threadsafe(settle, value, failure)

        return deliver

    _WORKERS.submit(job)
    return await future
