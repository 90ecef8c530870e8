"""A daemon's worker processes (``heron daemon --workers N``, PostgreSQL only).

The daemon's own process (the *front*) serves the API, fires crons and keeps the warm
pool; its N workers, on the same ``HERON_HOME`` and database, run the nodes: each is the
engine with its features but no listener, taking runs from the queues the front puts
them in (ARCHITECTURE.md, ``nodes/``: a daemon with workers). The front starts them,
starts again one that exits, and stops them (SIGTERM, then waits) when it stops. Their
output is the front's (its log, when detached).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import time

from .._config import RuntimeConfig
from ..db import DatabaseUnavailable
from ..nodes import Engine
from ..server import DaemonError
from ._features import FEATURES

__all__ = ["WORKER_OPTION", "Workers", "serve_worker"]

log = logging.getLogger("heron.runtime")

WORKER_OPTION = "--worker"
"""The (hidden) option of ``heron daemon`` that makes the process worker ``n`` of a front."""

STOP_TIMEOUT = 30.0
"""Seconds a stopping front waits for its workers to stop before it kills them."""

_QUICK_EXIT = 10.0
"""A worker that exits within this many seconds of its start is started again later
and later (up to :data:`_MAX_BACKOFF`): one that cannot start does not spin."""

_MAX_BACKOFF = 30.0


class Workers:
    """The front's worker processes: started, started again when one exits, stopped."""

    def __init__(self, config: RuntimeConfig) -> None:
        self.config = config
        self.processes: dict[int, asyncio.subprocess.Process] = {}
        """The process of each worker running now, by its number (1, 2 …)."""
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = False

    def start(self) -> None:
        """Start every worker, each supervised by a task of its own."""
        for n in range(1, self.config.workers + 1):
            self._tasks.append(asyncio.create_task(self._supervise(n), name=f"heron-worker-{n}"))

    async def _spawn(self, n: int) -> asyncio.subprocess.Process:
        env = {**os.environ, "HERON_HOME": str(self.config.home)}
        env["HERON_WORKERS"] = str(self.config.workers)
        if self.config.sandbox == "require":
            env["HERON_SANDBOX"] = "require"
        command = [sys.executable, "-m", "heron", "daemon", WORKER_OPTION, str(n)]
        # Its output is the front's (inherited): the daemon's log. A session of its own:
        # a Ctrl-C at the terminal reaches the front alone, which stops the workers in turn
        # (a worker whose front is gone stops by itself: see serve_worker).
        process = await asyncio.create_subprocess_exec(
            *command, stdin=asyncio.subprocess.DEVNULL, env=env, start_new_session=True
        )
        log.info("worker %d started (pid %d)", n, process.pid)
        return process

    async def _supervise(self, n: int) -> None:
        backoff = 0.5
        while not self._stopping:
            started = time.monotonic()
            try:
                process = await self._spawn(n)
            except OSError as exc:
                log.error("worker %d could not start: %s", n, exc)
            else:
                self.processes[n] = process
                code = await process.wait()
                self.processes.pop(n, None)
                if self._stopping:
                    return
                log.warning(
                    "worker %d (pid %d) exited with %s: starting it again", n, process.pid, code
                )
            if time.monotonic() - started > _QUICK_EXIT:
                backoff = 0.5
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, _MAX_BACKOFF)

    async def stop(self) -> None:
        """SIGTERM every worker and wait for them (killing those that outlast
        :data:`STOP_TIMEOUT`); none is started again."""
        self._stopping = True
        processes = list(self.processes.values())
        for process in processes:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                await asyncio.wait_for(process.wait(), STOP_TIMEOUT)
            except TimeoutError:
                log.error(
                    "worker pid %d did not stop in %.0f s: killing it", process.pid, STOP_TIMEOUT
                )
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()


async def _front_gone(front: int) -> None:
    """Return once the process ``front`` has exited (a pidfd turns readable then)."""
    try:
        fd = os.pidfd_open(front)
    except ProcessLookupError:
        return
    gone = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_reader(fd, gone.set)
    try:
        await gone.wait()
    finally:
        loop.remove_reader(fd)
        os.close(fd)


async def serve_worker(config: RuntimeConfig) -> None:
    """Be worker ``config.worker`` of the front on ``config.home`` until SIGTERM/SIGINT:
    the engine and its features, with no listener, pid file or home lock (the front's).
    It stops, too, when its front is gone (killed: nobody would stop it)."""
    front = os.getppid()
    engine = Engine(config, FEATURES)
    try:
        await engine.start()
    except DatabaseUnavailable as exc:  # one readable line, no traceback, no password
        raise DaemonError(str(exc)) from None
    log.info("worker %d running as %s", config.worker, engine.cluster.executor_id)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    orphaned = asyncio.create_task(_front_gone(front), name="heron-front-watch")
    try:
        await asyncio.wait(
            [orphaned, asyncio.create_task(stop.wait())], return_when=asyncio.FIRST_COMPLETED
        )
        if orphaned.done():
            log.error("worker %d: its front (pid %d) is gone: stopping", config.worker, front)
    finally:
        orphaned.cancel()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
        await engine.stop()
