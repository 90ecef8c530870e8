"""Client and server in one process: direct dispatch, or memory streams."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from ._base import Connection, DirectServer, SessionHandler, SessionStreams

__all__ = ["InProcessConnection"]


class InProcessConnection(Connection):
    """Joins an :class:`MCPServer` and an :class:`MCPClient` living in the same process.

    Pass the same object to both. The client dispatches its MCP requests
    straight to the server's handlers (the SDK's in-process path: no streams,
    no JSON), still as MCP requests and results; :meth:`open` also offers
    the server over memory streams, for clients that want a stream pair::

        connection = InProcessConnection()
        async with MCPServer(connection) as server, MCPClient("me", connection) as client:
            ...
    """

    def __init__(self) -> None:
        self._serve: SessionHandler | None = None
        self._direct: DirectServer | None = None
        self._sessions: set[asyncio.Task[None]] = set()

    async def listen(self, serve: SessionHandler) -> None:
        """Accept the sessions that clients of this connection open."""
        if self._serve is not None:
            raise RuntimeError("an MCPServer is already serving this InProcessConnection")
        self._serve = serve

    def offer_direct(self, server: DirectServer) -> None:
        """Let this process's clients dispatch to ``server`` directly."""
        self._direct = server

    def direct(self) -> DirectServer | None:
        """The listening server, and the event set when it stops."""
        return self._direct

    async def stop_listening(self) -> None:
        """Stop serving; running sessions end as their clients see the link close."""
        self._serve = None
        direct, self._direct = self._direct, None
        if direct is not None:
            direct.stopped.set()  # direct clients learn that the server is gone
        sessions, self._sessions = self._sessions, set()
        for task in sessions:
            task.cancel()
        await asyncio.gather(*sessions, return_exceptions=True)

    def open(self) -> AbstractAsyncContextManager[SessionStreams]:
        """Open a session with the server listening on this connection."""
        return self._open()

    @asynccontextmanager
    async def _open(self) -> AsyncIterator[SessionStreams]:
        serve = self._serve
        if serve is None:
            raise ConnectionRefusedError("no MCPServer is listening on this InProcessConnection")
        to_server: MemoryObjectSendStream[SessionMessage | Exception]
        server_in: MemoryObjectReceiveStream[SessionMessage | Exception]
        to_server, server_in = anyio.create_memory_object_stream(32)
        to_client: MemoryObjectSendStream[SessionMessage | Exception]
        client_in: MemoryObjectReceiveStream[SessionMessage | Exception]
        to_client, client_in = anyio.create_memory_object_stream(32)

        async def run() -> None:
            async with server_in, to_client:
                await serve(server_in, to_client)

        task = asyncio.create_task(run())
        self._sessions.add(task)
        task.add_done_callback(self._sessions.discard)
        try:
            yield client_in, to_server
        finally:
            # Ending the server's read side ends its session the ordinary way.
            await to_server.aclose()
            await client_in.aclose()
            # A well-behaved session ends at once; one stuck in a tool is cut off.
            done, _ = await asyncio.wait({task}, timeout=2.0)
            if not done:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    def describe(self) -> str:
        """``in-process connection``."""
        return "in-process connection"
