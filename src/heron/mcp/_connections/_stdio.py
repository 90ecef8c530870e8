"""MCP over a subprocess's stdin and stdout, the way most MCP servers are run."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import TextIO

from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server.stdio import stdio_server

from ._base import Connection, SessionHandler, SessionStreams

__all__ = ["StdioConnection", "StdioServerConnection"]


class StdioConnection(Connection):
    """Runs an MCP server as a subprocess and talks to it over its stdin and stdout.

    Any MCP server works, Heron's or not::

        StdioConnection("uvx", ["mcp-server-time"])
        StdioConnection(sys.executable, ["-m", "heron.mcp", "serve", "my_tools:TOOLS"])

    The process starts when the client connects and is stopped when it
    closes. It inherits only a safe part of this environment (``PATH``,
    ``HOME``...) plus ``env``. If it dies, the next call starts a new one.
    """

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        *,
        cwd: str | os.PathLike[str] | None = None,
        stderr: TextIO | None = None,
    ) -> None:
        if isinstance(args, str):
            raise TypeError("args must be a list of strings, not one string")
        self.command = command
        """The program to run."""
        self.args = tuple(args)
        """Its arguments."""
        self.env = dict(env) if env is not None else None
        """Extra environment variables for it."""
        self.cwd = Path(cwd) if cwd is not None else None
        """Its working directory (this process's when ``None``)."""
        self.stderr = stderr
        """Where its standard error goes (this process's when ``None``)."""

    def open(self) -> AbstractAsyncContextManager[SessionStreams]:
        """Start the server process; it is stopped when the context exits."""
        return self._open()

    @asynccontextmanager
    async def _open(self) -> AsyncIterator[SessionStreams]:
        params = StdioServerParameters(
            command=self.command, args=list(self.args), env=self.env, cwd=self.cwd
        )
        async with stdio_client(params, errlog=self.stderr or sys.stderr) as streams:
            yield streams

    def describe(self) -> str:
        """``stdio server NAME``: the program's name only.

        Arguments often carry secrets (``--api-key ...``), and this text ends up
        in errors an agent shows its model.
        """
        return f"stdio server {Path(self.command).name}"


class StdioServerConnection(Connection):
    """Serves one MCP session over this process's stdin and stdout.

    For a tool server that MCP clients start as a subprocess; it is done when
    the client closes its end. While it serves, stray prints go to stderr
    instead of corrupting the protocol stream.
    """

    def __init__(self) -> None:
        self._task: asyncio.Task[None] | None = None
        self._finished = asyncio.Event()

    async def listen(self, serve: SessionHandler) -> None:
        """Start serving the session on stdin and stdout."""
        if self._task is not None:
            raise RuntimeError("this process's stdio is already being served")

        async def run() -> None:
            try:
                async with stdio_server() as (read, write):
                    await serve(read, write)
            finally:
                self._finished.set()

        self._task = asyncio.create_task(run())

    async def stop_listening(self) -> None:
        """End the session."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def wait_finished(self) -> None:
        """Return once the client has closed the session."""
        await self._finished.wait()

    def describe(self) -> str:
        """``stdio``."""
        return "stdio"
