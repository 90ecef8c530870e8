"""A loopback HTTP/1.1 server that fails on purpose, for the client's transport tests.

Each path has a script of steps; every request to it takes the next step (the last
one repeats). A step is a :class:`Reply`, or one of:

- ``"reset"``: read the request, then reset the connection without a word;
- ``"hang"``: never answer (until the client goes away).

It counts attempts per path, keeps each request's headers, and records when a
client closes a connection it was left hanging on.
"""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import struct
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["FlakyServer", "Reply"]


@dataclass(frozen=True, kw_only=True)
class Reply:
    """An HTTP answer."""

    status: int = 200
    """The status code."""
    body: Any = None
    """Bytes or text as they are, anything else as JSON (``None``: an empty body)."""
    headers: dict[str, str] = field(default_factory=dict)
    """Extra response headers."""
    cut: bool = False
    """Send the headers and half the body, then reset the connection."""

    def encode(self) -> tuple[bytes, dict[str, str]]:
        """The body bytes and the headers that go with them."""
        headers = {"content-type": "application/json", **self.headers}
        if self.body is None:
            body = b""
        elif isinstance(self.body, bytes):
            body = self.body
        elif isinstance(self.body, str):
            body = self.body.encode()
            headers.setdefault("content-type", "text/plain")
        else:
            body = json.dumps(self.body).encode()
        headers["content-length"] = str(len(body))
        return body, headers


Step = Reply | str


class FlakyServer:
    """The server, on ``127.0.0.1:0`` (or a Unix socket), run by a thread's own loop;
    over TLS with ``tls`` (a server context)."""

    def __init__(self, unix: Path | None = None, *, tls: ssl.SSLContext | None = None) -> None:
        self.unix = unix
        self.tls = tls
        self.scripts: dict[str, list[Step]] = {}
        self.attempts: Counter[str] = Counter()
        self.requests: list[tuple[str, str, dict[str, str], bytes]] = []
        """``(method, target, headers, body)`` of every request, in order."""
        self.arrived = threading.Event()
        """Set whenever a request arrives."""
        self.hung_up = threading.Event()
        """Set when a client closes a connection the server was hanging on."""
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (``https`` over TLS)."""
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://127.0.0.1:{self.port}"

    def script(self, path: str, *steps: Step) -> None:
        """Answer requests to ``path`` with ``steps`` in turn (the last one repeats)."""
        self.scripts[path] = list(steps)

    def start(self) -> FlakyServer:
        """Start listening."""
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._listen(), self._loop).result(10)
        return self

    async def _listen(self) -> None:
        if self.unix is not None:
            self._server = await asyncio.start_unix_server(self._serve, path=str(self.unix))
        else:
            self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.tls)
            self.port = self._server.sockets[0].getsockname()[1]

    def stop(self) -> None:
        """Stop listening, drop every connection, end the thread."""

        async def shutdown() -> None:
            assert self._server is not None
            self._server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            await self._server.wait_closed()

        asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def __enter__(self) -> FlakyServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            while await self._one(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        head = await reader.readuntil(b"\r\n\r\n")
        line, *lines = head.decode("latin-1").split("\r\n")
        method, target, _ = line.split(" ", 2)
        headers = {}
        for item in lines:
            if item:
                name, _, value = item.partition(":")
                headers[name.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        path = target.split("?", 1)[0]
        self.attempts[path] += 1
        self.requests.append((method, target, headers, body))
        self.arrived.set()
        script = self.scripts.get(path) or [Reply(status=404, body={"error": {"code": "nope"}})]
        step = script[min(self.attempts[path], len(script)) - 1]
        if step == "hang":
            await reader.read()  # returns at EOF: the client hung up
            self.hung_up.set()
            return False
        if step == "reset":
            _reset(writer)
            return False
        assert isinstance(step, Reply)
        payload, extra = step.encode()
        text = f"HTTP/1.1 {step.status} Flaky\r\n"
        text += "".join(f"{k}: {v}\r\n" for k, v in extra.items()) + "\r\n"
        if step.cut:
            writer.write(text.encode("latin-1") + payload[: len(payload) // 2])
            await writer.drain()
            _reset(writer)
            return False
        writer.write(text.encode("latin-1") + (b"" if method == "HEAD" else payload))
        await writer.drain()
        return True


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with an RST (SO_LINGER 0), not a FIN."""
    sock = writer.get_extra_info("socket")
    if sock is not None and sock.family != socket.AF_UNIX:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()
