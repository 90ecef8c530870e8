"""The embedded model out of process: a worker the provider starts, watches and restarts.

llama.cpp is native code: a crash in it (a segfault on an unsupported CPU path)
kills the whole process. The daemon and ``heron run``/``heron chat`` therefore
run the model in a worker process (:mod:`._local_worker`); when it dies, only
the turns it was serving fail, with a retryable :class:`ProviderError` (code
``model_crashed``) that says what crashed and which override to try, and the
next turn starts a fresh worker. The SDK's :class:`LocalProvider` in a plain
script stays in-process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

from .._core import (
    Capabilities,
    ChatResponse,
    ChunkCallback,
    Message,
    ProviderError,
    ToolSchema,
    emit,
)
from ._base import Provider
from ._local_cpu import REPACK_ENV
from ._local_wire import chunk_from, error_from, frame, read_frame, response_from
from .local import LocalProvider

__all__ = ["MODEL_CRASHED", "LocalProcessProvider", "out_of_process"]

MODEL_CRASHED = "model_crashed"
"""The :attr:`ProviderError.code` of a turn whose model worker died under it."""


def out_of_process(provider: Provider) -> Provider:
    """``provider`` run in a worker process if it is a :class:`LocalProvider`, else itself."""
    if isinstance(provider, LocalProvider):
        return LocalProcessProvider.like(provider)
    return provider


class LocalProcessProvider(Provider):
    """A :class:`LocalProvider` whose model runs in a worker process.

    Takes the same arguments. The worker is started at once (the model loads
    while the caller gets ready), and again at the first turn after one died.
    """

    name = "local"

    def __init__(self, model_path: str | os.PathLike[str] | None = None, **options: Any) -> None:
        self.local = LocalProvider(model_path, **options)
        """The provider the worker runs, built here too: it checks the options and
        reads the model's metadata (the model itself is only loaded in the worker)."""
        self.model = self.local.model
        self._options = {
            "model_path": str(self.local.model_path),
            "n_ctx": self.local.n_ctx,
            "threads": self.local.threads,
            "think_effort": self.local.think_effort,
            "temperature": self.local.temperature,
            "max_tokens": self.local.max_tokens,
            "route_tools": self.local.route_tools,
            "repack": self.local.repack,
        }
        self._lock = threading.Lock()
        self._worker: _Worker | None = _Worker(self._options)
        self.crashes = 0
        """Workers that died while this provider used them."""

    @classmethod
    def like(cls, provider: LocalProvider) -> LocalProcessProvider:
        """A worker-backed provider with ``provider``'s settings."""
        return cls(
            provider.model_path,
            n_ctx=provider.n_ctx,
            threads=provider.threads,
            think_effort=provider.think_effort,
            temperature=provider.temperature,
            max_tokens=provider.max_tokens,
            route_tools=provider.route_tools,
            repack=provider.repack,
        )

    @property
    def capabilities(self) -> Capabilities:
        """The same as the in-process provider's: from the model file's metadata."""
        return self.local.capabilities

    @property
    def worker_pid(self) -> int | None:
        """The current worker's process id (``None`` before a restart starts one)."""
        worker = self._worker
        return None if worker is None else worker.process.pid

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] | None = None,
        on_chunk: ChunkCallback | None = None,
    ) -> ChatResponse:
        """Generate one reply in the worker, streaming its chunks to ``on_chunk``."""
        worker = await self._current()
        turn, queue = worker.open_turn()
        worker.send(
            {
                "op": "chat",
                "id": turn,
                "messages": [m.to_dict() for m in messages],
                "tools": [t.to_dict() for t in tools or ()],
                "stream": on_chunk is not None,
            }
        )
        try:
            while True:
                message = await queue.get()
                kind = message.get("kind")
                if kind == "chunk":
                    await emit(on_chunk, chunk_from(message["chunk"]))
                elif kind == "done":
                    return response_from(message["response"])
                elif kind == "error":
                    raise error_from(message["error"])
                else:  # the worker died
                    self.crashes += 1
                    raise self._crash_error(worker)
        except asyncio.CancelledError:
            worker.send({"op": "cancel", "id": turn})
            raise
        finally:
            worker.close_turn(turn)

    async def _current(self) -> _Worker:
        """The live worker, connected to the running loop; a fresh one if it died."""
        loop = asyncio.get_running_loop()
        with self._lock:
            worker = self._worker
            if (
                worker is None
                or worker.dead
                or worker.process.poll() is not None
                or worker.loop not in (None, loop)
            ):
                if worker is not None:
                    worker.stop()  # (subprocess reaps it with the next Popen)
                worker = self._worker = _Worker(self._options)
        await worker.connect(loop)
        return worker

    def _crash_error(self, worker: _Worker) -> ProviderError:
        if worker.fatal is not None:
            return worker.fatal
        code = worker.returncode
        how = "closed its connection"
        if code is not None and code < 0:
            try:
                how = f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"was killed by signal {-code}"
        elif code is not None:
            how = f"exited with status {code}"
        hint = (
            f"if it happens again, try {REPACK_ENV}=off (no weight repacking)"
            if self.local.repack
            else "weight repacking was already off"
        )
        return ProviderError(
            f"the embedded model crashed: its worker process (pid {worker.process.pid}, "
            f"model {self.local.model_path.name}) {how}; {hint}",
            code=MODEL_CRASHED,
            retryable=True,
            provider=self.name,
        )

    async def aclose(self) -> None:
        """Stop the worker; the next turn starts a new one."""
        with self._lock:
            worker, self._worker = self._worker, None
        if worker is not None:
            worker.stop()
            await worker.exited()


class _Worker:
    """One worker process and the turns it is serving."""

    def __init__(self, options: dict[str, Any]) -> None:
        ours, theirs = socket.socketpair()
        with theirs:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "heron.providers._local_worker",
                    str(theirs.fileno()),
                    json.dumps(options),
                ],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
            )
        self.sock = ours
        self.loop: asyncio.AbstractEventLoop | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.turns: dict[int, asyncio.Queue[dict[str, Any]]] = {}
        self.next_turn = 0
        self.dead = False
        self.fatal: ProviderError | None = None
        """Why the worker could not load its model, when it could not."""
        self.returncode: int | None = None
        self._connecting = asyncio.Lock()
        self._reading: asyncio.Task[None] | None = None

    async def connect(self, loop: asyncio.AbstractEventLoop) -> None:
        async with self._connecting:
            if self.loop is not None:
                return
            reader, self.writer = await asyncio.open_unix_connection(sock=self.sock)
            self.loop = loop
            self._reading = loop.create_task(self._read(reader))

    def open_turn(self) -> tuple[int, asyncio.Queue[dict[str, Any]]]:
        self.next_turn += 1
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        if self.dead:
            queue.put_nowait({"kind": "crashed"})
        self.turns[self.next_turn] = queue
        return self.next_turn, queue

    def close_turn(self, turn: int) -> None:
        self.turns.pop(turn, None)

    def send(self, message: dict[str, Any]) -> None:
        if self.writer is not None and not self.dead:
            with contextlib.suppress(ConnectionError, RuntimeError):
                self.writer.write(frame(message))

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                message = await read_frame(reader)
                kind = message.get("kind")
                if kind == "fatal":
                    self.fatal = error_from(message["error"])
                    break
                queue = self.turns.get(message.get("id", -1))
                if queue is not None:
                    queue.put_nowait(message)
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        self.dead = True
        self.returncode = await self.exited()
        for queue in self.turns.values():
            queue.put_nowait({"kind": "crashed"})

    async def exited(self) -> int:
        """Wait for the process to exit (killing it if it hangs); its exit status.

        Polled rather than waited for on a thread: a daemon shutting down has no
        executor left to wait on.
        """
        deadline = time.monotonic() + 10
        while self.process.poll() is None:
            if time.monotonic() > deadline:
                self.process.kill()
                deadline = float("inf")
            await asyncio.sleep(0.02)
        return self.process.returncode

    def stop(self) -> None:
        """Close the worker's socket, which ends it (:meth:`reap` waits for that).

        Called on the loop it is connected to, or once that loop is gone.
        """
        self.dead = True
        if self._reading is not None:
            with contextlib.suppress(RuntimeError):
                self._reading.cancel()
        if self.writer is not None:
            with contextlib.suppress(RuntimeError):
                self.writer.close()
        self.sock.close()
