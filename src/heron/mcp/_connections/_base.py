"""The transport seam: how an MCP server listens and how an MCP client connects."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.abc
import mcp_types
from mcp.server.lowlevel.server import Server
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage

from ..._core.closing import AsyncClosing

__all__ = [
    "TOO_BIG",
    "Connection",
    "DirectCall",
    "DirectServer",
    "SessionHandler",
    "SessionStreams",
    "message_streams",
]

SessionStreams = tuple[ReadStream[SessionMessage | Exception], WriteStream[SessionMessage]]
"""What an MCP session runs on: incoming messages (or parse errors) and outgoing messages."""

SessionHandler = Callable[
    [ReadStream[SessionMessage | Exception], WriteStream[SessionMessage]], Awaitable[None]
]
"""Serves one MCP session over its two streams until the read side ends."""

DirectCall = Callable[[mcp_types.CallToolRequestParams, str], Awaitable[mcp_types.CallToolResult]]
"""A server's ``tools/call`` handler: the request's params and the negotiated protocol version."""


@dataclass(frozen=True, slots=True)
class DirectServer:
    """A server that clients in the same process reach without streams or JSON."""

    server: Server[Any]
    """The SDK server: the handshake and every request but ``tools/call`` go through it."""
    stopped: asyncio.Event
    """Set when the server stops listening."""
    call_tool: DirectCall
    """``tools/call`` straight to the server's handler: the same MCP params and result,
    without the SDK's per-request dispatch (which costs about 0.1 ms per call)."""


# Tool results may carry images: allow large frames, but not unbounded ones.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
TOO_BIG = f"a message exceeded the {MAX_MESSAGE_BYTES // (1024 * 1024)} MB limit"


class Connection(ABC):
    """A transport between an MCP client and an MCP server.

    A server calls :meth:`listen` and serves every session that arrives; a
    client calls :meth:`open` for one session at a time. Some connections
    are one-sided (a Unix socket is built with ``mode="server"`` or
    ``mode="client"``); :class:`InProcessConnection` is both at once.
    """

    auto_reconnect: bool = False
    """Whether a client keeps trying to reconnect in the background after the link drops."""
    reconnect_delay: float = 0.5
    """Seconds between reconnection attempts."""
    end_reason: str | None = None
    """Why the client's last session ended, when the transport knows (a message too big)."""

    async def listen(self, serve: SessionHandler) -> None:
        """Start accepting sessions, each served by ``serve``; return once listening."""
        raise TypeError(f"{self.describe()} cannot serve: it is a client-side connection")

    async def stop_listening(self) -> None:
        """Stop accepting sessions and end the ones running (no-op when not listening)."""
        return None

    async def wait_finished(self) -> None:
        """Return when the connection will serve no more sessions on its own.

        Listening sockets serve until :meth:`stop_listening`; a stdio server is
        done once its one session ends.
        """
        await asyncio.Event().wait()

    def offer_direct(self, server: DirectServer) -> None:
        """Let clients in this process reach ``server`` without streams, if the link allows.

        Called by :class:`MCPServer` once it listens; only an in-process
        connection takes the offer.
        """
        return None

    def direct(self) -> DirectServer | None:
        """The server a client may dispatch to directly, if any."""
        return None

    def open(self) -> AbstractAsyncContextManager[SessionStreams]:
        """Open one client session; the streams close when the context exits."""
        raise TypeError(f"{self.describe()} cannot connect: it is a server-side connection")

    @abstractmethod
    def describe(self) -> str:
        """A short human description for error messages (``unix socket /tmp/x.sock``)."""


def encode(message: SessionMessage) -> str:
    """The JSON-RPC text of ``message``, as every MCP transport writes it."""
    return message.message.model_dump_json(by_alias=True, exclude_unset=True)


def decode(text: str | bytes) -> SessionMessage | Exception:
    """Parse one JSON-RPC frame; a malformed frame becomes the exception the session reports."""
    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(text, by_name=False))
    except Exception as exc:
        return exc


@asynccontextmanager
async def message_streams(
    receive: Callable[[], Awaitable[str | bytes | None]],
    send: Callable[[str], Awaitable[None]],
) -> AsyncIterator[SessionStreams]:
    """Session streams over a framed text link.

    ``receive`` returns the next frame, or ``None`` at the end of the link;
    ``send`` writes one frame. When the link ends, the read stream ends too,
    which is how an MCP session learns that its peer is gone (and fails the
    requests it was waiting on instead of hanging).

    The streams call ``receive`` and ``send`` in the session's own tasks: no
    pump task or memory queue sits between the session and the link, so a
    message costs no extra event-loop turn on its way in or out.
    """
    reader, writer = _FrameReader(receive), _FrameWriter(send)
    try:
        yield reader, writer
    finally:
        await writer.aclose()
        await reader.aclose()


class _FrameReader(anyio.abc.ObjectReceiveStream[SessionMessage | Exception]):
    """The read side: each ``receive`` reads and decodes the next frame of the link."""

    def __init__(self, receive: Callable[[], Awaitable[str | bytes | None]]) -> None:
        self._receive = receive
        self._ended = False
        self._closed = False

    async def receive(self) -> SessionMessage | Exception:
        if self._closed:
            raise anyio.ClosedResourceError
        if self._ended:
            raise anyio.EndOfStream
        frame = await _receive_or_none(self._receive)
        if frame is None:
            self._ended = True
            raise anyio.EndOfStream
        return decode(frame)

    async def aclose(self) -> None:
        self._closed = True


class _FrameWriter(AsyncClosing):
    """The write side: each ``send`` encodes a message and writes it as one frame."""

    def __init__(self, send: Callable[[str], Awaitable[None]]) -> None:
        self._send = send
        self._broken = False
        self._closed = False

    async def send(self, item: SessionMessage, /) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        if self._broken:
            raise anyio.BrokenResourceError
        try:
            await self._send(encode(item))
        except (OSError, ConnectionError, anyio.BrokenResourceError):
            # The peer is gone: the read side sees the end of the link and fails the
            # requests waiting on it; later writes fail at once.
            self._broken = True

    async def aclose(self) -> None:
        self._closed = True


async def _receive_or_none(receive: Callable[[], Awaitable[str | bytes | None]]) -> Any:
    try:
        return await receive()
    except (OSError, EOFError, ValueError):  # ValueError: a frame over the size limit
        return None
