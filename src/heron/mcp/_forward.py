"""TCP ports forwarded into a sandbox's own network namespace, through Unix sockets.

A bubblewrap :class:`~heron.mcp.Computer` has a network of its own (a loopback
only). For each of its ``ports`` the host side listens on ``127.0.0.1:PORT`` and
hands every connection to a Unix socket in the folder both sides share; inside,
the tool server (``python -m heron.mcp serve ... --forward PORT=SOCKET``) accepts
there and connects to ``127.0.0.1:PORT`` in the sandbox. Nothing else of the
host network is reachable from inside, and nothing else inside from the host.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["forward_socket_name", "serve_inside", "serve_outside"]

Opener = Callable[[], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]

_CHUNK = 65_536


def forward_socket_name(port: int) -> str:
    """The shared folder's socket that carries connections to ``port``."""
    return f"port-{port}.sock"


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(_CHUNK):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()  # a half-close passes through: HTTP/1.0 clients use it
    except (ConnectionError, OSError):
        writer.close()


def _relay(open_far: Opener) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Any]:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            far_reader, far_writer = await open_far()
        except OSError:
            writer.close()  # nothing listens on the far side: refuse, as a closed port does
            return
        try:
            await asyncio.gather(_copy(reader, far_writer), _copy(far_reader, writer))
        finally:
            for end in (writer, far_writer):
                end.close()
                with contextlib.suppress(ConnectionError, OSError):
                    await end.wait_closed()

    return handle


async def serve_outside(port: int, socket_path: str) -> asyncio.Server:
    """On the host: listen on ``127.0.0.1:port``, each connection relayed to ``socket_path``."""
    return await asyncio.start_server(
        _relay(lambda: asyncio.open_unix_connection(socket_path)), "127.0.0.1", port
    )


async def serve_inside(port: int, socket_path: str) -> asyncio.Server:
    """In the sandbox: listen on ``socket_path``, each connection relayed to ``127.0.0.1:port``."""
    server = await asyncio.start_unix_server(
        _relay(lambda: asyncio.open_connection("127.0.0.1", port)), socket_path
    )
    os.chmod(socket_path, 0o600)
    return server
