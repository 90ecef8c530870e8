"""A loopback HTTP server that replays vendor wire formats and records what it was sent.

Each test queues canned responses (built from the fixture files, which follow
the vendors' API references); the server answers requests with them in order
and records every request, so tests check both directions of the wire.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from tests.support.polling import eventually

FIXTURES = Path(__file__).parent / "fixtures"


def fixture(name: str) -> str:
    """The text of a fixture file."""
    return (FIXTURES / name).read_text()


def sse_events(name: str) -> list[bytes]:
    """A ``.sse`` fixture split into its events (blank-line separated), each sent alone."""
    return [e.strip().encode() + b"\n\n" for e in fixture(name).split("\n\n") if e.strip()]


def ndjson_lines(name: str) -> list[bytes]:
    """An ``.ndjson`` fixture split into lines, each sent alone."""
    return [line.encode() + b"\n" for line in fixture(name).splitlines() if line.strip()]


@dataclass
class Gate:
    """A point in a canned stream where the server waits until the test opens it."""

    event: threading.Event = field(default_factory=threading.Event)

    def open(self) -> None:
        """Let the server go on sending."""
        self.event.set()


@dataclass
class Pause:
    """A point in a canned stream where the server goes quiet for ``seconds``.

    It plays a slow server; if the client hangs up meanwhile, the response ends there.
    """

    seconds: float


@dataclass
class Canned:
    """One response the server will give."""

    pieces: list[bytes | Gate | Pause]
    """Body pieces, each written separately (so the client sees a real stream)."""
    status: int = 200
    """HTTP status."""
    headers: dict[str, str] = field(default_factory=dict)
    """Extra headers (``Retry-After`` …)."""
    content_type: str = "text/event-stream"
    """The body's media type."""
    cut: bool = False
    """Drop the connection after the pieces instead of ending the body."""
    stall: bool = False
    """Stop sending after the pieces and hold the connection open."""
    disconnected: threading.Event = field(default_factory=threading.Event)
    """Set when the client hangs up during a stall or a pause."""
    sent: int = 0
    """Body pieces sent so far."""


def sse(name: str, **kwargs: Any) -> Canned:
    """A streamed SSE fixture."""
    return Canned(sse_events(name), **kwargs)


def ndjson(name: str, **kwargs: Any) -> Canned:
    """A streamed NDJSON fixture (Ollama)."""
    return Canned(ndjson_lines(name), content_type="application/x-ndjson", **kwargs)


def body(data: Any, status: int = 200, **kwargs: Any) -> Canned:
    """A plain JSON response."""
    return Canned(
        [json.dumps(data).encode()], status=status, content_type="application/json", **kwargs
    )


@dataclass
class Recorded:
    """One request the server received."""

    path: str
    headers: dict[str, str]
    json: Any
    at: float


class WireServer:
    """The server's state, shared between the test and the server thread."""

    def __init__(self) -> None:
        self.base_url = ""
        self.queue: deque[Canned] = deque()
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()

    def reply(self, *canned: Canned) -> None:
        """Queue responses, answered in order."""
        with self._lock:
            self.queue.extend(canned)

    def reset(self) -> None:
        with self._lock:
            self.queue.clear()
            self.requests.clear()

    # The builders, for tests (which cannot import this conftest module).
    fixture = staticmethod(fixture)
    sse = staticmethod(sse)
    ndjson = staticmethod(ndjson)
    body = staticmethod(body)
    Gate = Gate
    Pause = Pause
    Canned = Canned

    @property
    def last(self) -> Any:
        """The JSON body of the latest request."""
        return self.requests[-1].json

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        raw = b""
        while True:
            message = await receive()
            raw += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        with self._lock:
            self.requests.append(
                Recorded(
                    path=scope["path"],
                    headers=headers,
                    json=json.loads(raw) if raw else None,
                    at=time.monotonic(),
                )
            )
            canned = self.queue.popleft() if self.queue else None
        if canned is None:
            canned = body({"error": {"message": "no canned response queued"}}, status=599)
        await send(
            {
                "type": "http.response.start",
                "status": canned.status,
                "headers": [
                    (b"content-type", canned.content_type.encode()),
                    *((k.encode(), v.encode()) for k, v in canned.headers.items()),
                ],
            }
        )
        for piece in canned.pieces:
            if isinstance(piece, Gate):
                opened = await asyncio.to_thread(piece.event.wait, 10)
                if not opened:  # the client never saw what it should have: fail loudly
                    raise RuntimeError("gate never opened")
                continue
            if isinstance(piece, Pause):
                try:
                    message = await asyncio.wait_for(receive(), piece.seconds)
                except TimeoutError:
                    continue
                if message["type"] == "http.disconnect":
                    canned.disconnected.set()
                    return
                continue
            await send({"type": "http.response.body", "body": piece, "more_body": True})
            canned.sent += 1
        if canned.cut:
            raise RuntimeError("connection cut on purpose")
        if canned.stall:
            while (await receive())["type"] != "http.disconnect":
                pass
            canned.disconnected.set()
            return
        await send({"type": "http.response.body", "body": b"", "more_body": False})


@pytest.fixture(scope="session")
def wire_server() -> Iterator[WireServer]:
    app = WireServer()
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="critical", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()

    def started() -> bool:
        if not thread.is_alive():
            raise RuntimeError("the test server's thread ended before it started")
        return bool(server.started)

    eventually(started, timeout=10, interval=0.01, what="the test server starting")
    port = server.servers[0].sockets[0].getsockname()[1]
    app.base_url = f"http://127.0.0.1:{port}"
    yield app
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture
def wire(wire_server: WireServer) -> Iterator[WireServer]:
    """The replay server, emptied for this test."""
    wire_server.reset()
    yield wire_server
    wire_server.reset()


class Closer:
    """Providers made by a test, closed when it ends (their HTTP pools hold sockets)."""

    def __init__(self) -> None:
        self.providers: list[Any] = []

    def __call__(self, provider: Any) -> Any:
        self.providers.append(provider)
        return provider


@pytest.fixture
async def closing() -> AsyncIterator[Closer]:
    """Register a provider with ``closing(provider)``; it is closed after the test."""
    closer = Closer()
    yield closer
    for provider in closer.providers:
        await provider.aclose()


CancelMidStream = Callable[[Callable[[Any], Awaitable[Any]]], Awaitable[None]]


@pytest.fixture
def cancel_mid_stream() -> CancelMidStream:
    """Run ``start(on_chunk)``, cancel it inside its first chunk, check it raised CancelledError.

    The callback never returns, as a slow consumer: the provider is cancelled
    while its stream is open and suspended, the case that leaks a connection.
    """

    async def run(start: Callable[[Any], Awaitable[Any]]) -> None:
        first = asyncio.Event()

        async def on_chunk(chunk: Any) -> None:
            first.set()
            await asyncio.Event().wait()

        task = asyncio.ensure_future(start(on_chunk))
        await asyncio.wait_for(first.wait(), 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    return run
