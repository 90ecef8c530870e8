"""MCP over a Unix domain socket: one JSON-RPC message per line."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import stat
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Literal

from ._base import (
    MAX_MESSAGE_BYTES,
    TOO_BIG,
    Connection,
    SessionHandler,
    SessionStreams,
    message_streams,
)

__all__ = ["UnixSocketConnection"]


class UnixSocketConnection(Connection):
    """Client and server in two processes on one machine, over a Unix domain socket.

    The server side creates the socket file (readable and writable by its
    owner only: whoever can connect can run its tools) and removes it on
    close; a stale file left by a crashed server is replaced. A client
    reconnects on its own, every ``reconnect_delay`` seconds, after the
    server goes away::

        UnixSocketConnection(mode="server", path="/tmp/heron.sock")  # in the tool process
        UnixSocketConnection(mode="client", path="/tmp/heron.sock")  # in the agent process
    """

    auto_reconnect = True

    def __init__(
        self,
        *,
        mode: Literal["server", "client"],
        path: str | os.PathLike[str],
        reconnect_delay: float = 0.5,
    ) -> None:
        if mode not in ("server", "client"):
            raise ValueError(f"mode must be 'server' or 'client', not {mode!r}")
        if not reconnect_delay > 0:
            raise ValueError(f"reconnect_delay must be a positive number, not {reconnect_delay!r}")
        self.mode: Literal["server", "client"] = mode
        """Which side of the socket this connection is."""
        self.path = Path(path)
        """The socket file."""
        self.reconnect_delay = reconnect_delay
        self._server: asyncio.Server | None = None
        self._sessions: set[asyncio.Task[None]] = set()

    async def listen(self, serve: SessionHandler) -> None:
        """Bind the socket file and serve every client that connects."""
        if self.mode != "server":
            await super().listen(serve)
        if self._server is not None:
            raise RuntimeError(f"already listening on {self.describe()}")
        _remove_stale_socket(self.path)

        async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            self._sessions.add(task)
            try:
                async with _line_streams(reader, writer, None) as (read, write):
                    await serve(read, write)
            except asyncio.CancelledError:
                # Only stop_listening() cancels a session, and asyncio would log the
                # cancelled connection task as an error: end quietly instead.
                if self._server is not None:
                    raise
            finally:
                self._sessions.discard(task)
                writer.close()
                with contextlib.suppress(OSError):
                    await writer.wait_closed()

        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(str(self.path))
            # Private before listen(): no window in which another user could connect.
            os.chmod(self.path, 0o600)
            self._server = await asyncio.start_unix_server(
                accepted, sock=sock, limit=MAX_MESSAGE_BYTES
            )
        except BaseException:
            sock.close()
            raise

    async def stop_listening(self) -> None:
        """Close the socket, end the running sessions and remove the socket file."""
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        sessions, self._sessions = set(self._sessions), set()
        for task in sessions:
            task.cancel()
        await asyncio.gather(*sessions, return_exceptions=True)
        await server.wait_closed()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    def open(self) -> AbstractAsyncContextManager[SessionStreams]:
        """Connect to the server's socket file."""
        if self.mode != "client":
            return super().open()
        return self._open()

    @asynccontextmanager
    async def _open(self) -> AsyncIterator[SessionStreams]:
        self.end_reason = None
        reader, writer = await asyncio.open_unix_connection(str(self.path), limit=MAX_MESSAGE_BYTES)
        try:
            async with _line_streams(reader, writer, self) as streams:
                yield streams
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    def describe(self) -> str:
        """``unix socket PATH``."""
        return f"unix socket {self.path}"


def _line_streams(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client: Connection | None
) -> AbstractAsyncContextManager[SessionStreams]:
    async def receive() -> bytes | None:
        try:
            line = await reader.readline()
        except ValueError:  # a line longer than the reader's limit: the link cannot go on
            if client is not None:
                client.end_reason = TOO_BIG
            return None
        return line or None

    async def send(text: str) -> None:
        writer.write(text.encode() + b"\n")
        await writer.drain()

    return message_streams(receive, send)


def _remove_stale_socket(path: Path) -> None:
    """Remove a socket file nobody listens on; refuse to touch anything else."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise FileExistsError(f"{path} exists and is not a socket; not replacing it")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
    except (ConnectionRefusedError, FileNotFoundError):
        path.unlink(missing_ok=True)  # left behind by a server that died
        return
    finally:
        probe.close()
    raise OSError(f"another server is already listening on {path}")
