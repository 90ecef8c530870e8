"""The embedded model's worker process: a :class:`LocalProvider` served over a socket.

Started by :class:`~heron.providers._local_process.LocalProcessProvider` as
``python -m heron.providers._local_worker FD OPTIONS_JSON``, where ``FD`` is its
end of a socket pair. It loads the model, says ``ready``, then serves chat
requests (several at once: the model's lock takes them in turn) until the
parent closes the socket. A native crash here ends only this process.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
from typing import Any

from .._core import Message, ProviderError, StreamChunk, ToolSchema
from ._local_wire import chunk_to, error_to, frame, read_frame, response_to
from .local import LocalProvider

__all__ = ["CRASH_ENV", "main"]

CRASH_ENV = "HERON_TEST_LOCAL_WORKER_CRASH"
"""Test hook: the path of a file. A worker that finds it when a request arrives deletes
it and kills itself with SIGSEGV, as a native crash in llama.cpp would (once per file)."""


class _Server:
    def __init__(self, provider: LocalProvider, writer: asyncio.StreamWriter) -> None:
        self.provider = provider
        self.writer = writer
        self.turns: dict[int, asyncio.Task[None]] = {}

    def send(self, message: dict[str, Any]) -> None:
        self.writer.write(frame(message))

    async def serve(self, reader: asyncio.StreamReader) -> None:
        while True:
            try:
                message = await read_frame(reader)
            except (asyncio.IncompleteReadError, ConnectionError):
                break  # the parent closed its end (or died): nothing left to serve
            op, turn = message.get("op"), int(message.get("id", -1))
            if op == "chat":
                _crash_if_asked()
                self.turns[turn] = asyncio.create_task(self.chat(turn, message))
            elif op == "cancel" and turn in self.turns:
                self.turns[turn].cancel()
        for task in self.turns.values():
            task.cancel()

    async def chat(self, turn: int, request: dict[str, Any]) -> None:
        def on_chunk(chunk: StreamChunk) -> None:
            self.send({"id": turn, "kind": "chunk", "chunk": chunk_to(chunk)})

        try:
            response = await self.provider.chat(
                [Message.from_dict(m) for m in request["messages"]],
                tools=[ToolSchema(**t) for t in request["tools"]],
                on_chunk=on_chunk if request.get("stream") else None,
            )
        except asyncio.CancelledError:
            return  # the parent stopped waiting for it
        except ProviderError as exc:
            self.send({"id": turn, "kind": "error", "error": error_to(exc)})
        except Exception as exc:  # a bad request: reported, not a dead worker
            error = ProviderError(f"local model failed: {exc}", provider=self.provider.name)
            self.send({"id": turn, "kind": "error", "error": error_to(error)})
        else:
            self.send({"id": turn, "kind": "done", "response": response_to(response)})
        finally:
            self.turns.pop(turn, None)
        await self.writer.drain()


def _crash_if_asked() -> None:
    marker = os.environ.get(CRASH_ENV)
    if marker:
        try:
            os.unlink(marker)
        except OSError:
            return
        os.kill(os.getpid(), signal.SIGSEGV)


async def _run(fd: int, options: dict[str, Any]) -> None:
    sock = socket.socket(fileno=fd)
    reader, writer = await asyncio.open_unix_connection(sock=sock)
    try:
        provider = LocalProvider(options.pop("model_path"), **options)
        await asyncio.to_thread(provider._load)
    except Exception as exc:
        error = exc if isinstance(exc, ProviderError) else ProviderError(str(exc))
        writer.write(frame({"kind": "fatal", "error": error_to(error)}))
        await writer.drain()
        return
    writer.write(frame({"kind": "ready", "pid": os.getpid()}))
    await writer.drain()
    await _Server(provider, writer).serve(reader)
    writer.close()


def main(argv: list[str]) -> None:
    """Serve the model on the socket ``argv[0]`` with the provider options ``argv[1]``."""
    fd, options = int(argv[0]), json.loads(argv[1])
    # Ctrl-C in a terminal reaches the whole process group: the parent decides, not us.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    asyncio.run(_run(fd, options))


if __name__ == "__main__":
    main(sys.argv[1:])
