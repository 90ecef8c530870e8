"""Calling tools on MCP servers from a Heron agent."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import mcp_types
from mcp.shared.exceptions import MCPError

from .._core import ToolSchema, UserError
from ..tools import IdGenerator, LocalToolClient, Storage, Tool, ToolClient, ToolResult
from ._connections import Connection
from ._convert import ENV_ID_META_KEY, from_mcp_result, from_mcp_tool
from ._errors import MCPConnectionError
from ._filter import OutputFilter
from ._lifecycle import Lifecycle
from ._link import Link
from ._storage import FileStorage

__all__ = ["MCPClient"]

_log = logging.getLogger("heron.mcp")


class MCPClient(ToolClient, Lifecycle):
    """A :class:`ToolClient` whose tools run on one or more MCP servers.

    Hand it to an agent (``BaseAgent(tool_client=MCPClient(...))``). Every
    call carries ``env_id``, so a Heron server runs the tool with this
    client's share of its state. With several connections the client fans
    out: it lists the tools of every server and routes each call to the
    server offering the tool. **A name offered by two servers goes to the
    one whose connection comes first in the list**; the later one's tool is
    hidden. A tool registered on the client itself with :meth:`register_tool`
    runs right here and shadows any server tool of the same name.

    ``output_filter`` scrubs every result, local or remote, before the model
    sees it. Use it as an async context manager, or call :meth:`start` and
    :meth:`close` (the first call starts it if you did not)::

        async with MCPClient("user-42", UnixSocketConnection(mode="client", path=sock)) as tools:
            agent = BaseAgent(provider=provider, tool_client=tools)
            await agent.run("What is in notes.txt?")

    ``storage`` and ``ids`` serve the client's local tools (storage defaults
    to a :class:`FileStorage` under ``./data``, created on first write).
    ``call_tool`` raises :class:`MCPConnectionError` when a server cannot be
    reached (within ``connect_timeout`` seconds), does not answer within
    ``call_timeout`` seconds (no limit when ``None``) or the link drops
    mid-call; tool failures and protocol errors are error results the model
    can read. The error's text passes through ``output_filter`` too, since an
    agent hands it to the model.

    :meth:`start` fails if any server is unreachable. Without it, the first
    listing or call starts the client and a server that is down does not fail
    the listing (nor does one that goes down later): its last known tools are
    listed (none if it was never reached), a warning is logged, and calls
    routed to it fail on their own. Only when no server ever answered does
    listing raise.
    """

    def __init__(
        self,
        env_id: str,
        connection: Connection | Sequence[Connection],
        storage: Storage | None = None,
        ids: IdGenerator | None = None,
        output_filter: OutputFilter | None = None,
        *,
        connect_timeout: float = 10.0,
        call_timeout: float | None = None,
    ) -> None:
        if not isinstance(env_id, str) or not env_id:
            raise UserError(f"env_id must be a non-empty string, not {env_id!r}")
        connections = [connection] if isinstance(connection, Connection) else list(connection)
        if not all(isinstance(c, Connection) for c in connections):
            raise UserError("connection must be a heron.mcp Connection or a list of them")
        if len(set(map(id, connections))) != len(connections):
            raise UserError("the same connection is listed twice")
        if output_filter is not None and not isinstance(output_filter, OutputFilter):
            raise UserError(f"output_filter must be an OutputFilter, not {output_filter!r}")
        if storage is not None and not isinstance(storage, Storage):
            raise UserError(f"storage must be a heron Storage, not {type(storage).__name__}")
        if ids is not None and not isinstance(ids, IdGenerator):
            raise UserError(f"ids must be a heron IdGenerator, not {type(ids).__name__}")
        if not connect_timeout > 0:
            raise UserError(f"connect_timeout must be positive, not {connect_timeout!r}")
        if call_timeout is not None and not call_timeout > 0:
            raise UserError(f"call_timeout must be positive or None, not {call_timeout!r}")
        self.env_id = env_id
        """Environment id sent with every call, scoping the servers' tool state."""
        self.connections = tuple(connections)
        """The servers' connections, in priority order."""
        self.output_filter = output_filter
        """Redacts tool results before the model sees them."""
        self._local = LocalToolClient(
            env_id=env_id, storage=storage if storage is not None else FileStorage(), ids=ids
        )
        self._links = [
            Link(c, connect_timeout=connect_timeout, call_timeout=call_timeout) for c in connections
        ]
        self._routes: dict[str, Link] = {}
        self._known: dict[Link, list[mcp_types.Tool]] = {}  # each server's last listing
        self._state = "new"
        self._start_lock = asyncio.Lock()

    @property
    def connected(self) -> bool:
        """Whether every server's link is up right now (it reconnects on its own when not)."""
        return self._state == "started" and all(link.connected for link in self._links)

    @property
    def storage(self) -> Storage:
        """Storage handed to the client's local tools."""
        return self._local.storage

    def register_tool(self, tool: Tool) -> None:
        """Run ``tool`` here, in this process, shadowing any server tool of that name."""
        self._local.register_tool(tool)

    async def start(self) -> None:
        """Connect to every server; raise :class:`MCPConnectionError` if one is unreachable."""
        async with self._start_lock:
            if self._state == "closed":
                raise MCPConnectionError("this MCPClient is closed")
            if self._state == "started":
                return
            try:
                await asyncio.gather(*(link.start() for link in self._links))
            except BaseException:
                await asyncio.gather(*(link.close() for link in self._links))
                raise
            self._state = "started"

    async def close(self) -> None:
        """Disconnect from every server (stopping stdio server processes); safe to call twice."""
        self._state = "closed"
        await asyncio.gather(*(link.close() for link in self._links))

    async def list_tools(self) -> list[ToolSchema]:
        """Local tools first, then each server's in connection order, each name once."""
        with self._filtered_errors():
            listed = await self._list_remote()
        local = await self._local.list_tools()
        shadowed = {t.name for t in local}
        return local + [schema for schema, _ in listed if schema.name not in shadowed]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run ``name`` locally if registered here, else on the server that offers it."""
        if self._local.get_tool(name) is not None:
            result = await self._local.call_tool(name, arguments)
        else:
            with self._filtered_errors():
                result = await self._call_remote(name, arguments)
        if self.output_filter is not None:
            result = self.output_filter.filter(result)
        return result

    async def _start_lazily(self) -> None:
        """Start without waiting for any server: each connects, or fails, on first use."""
        async with self._start_lock:
            if self._state == "closed":
                raise MCPConnectionError("this MCPClient is closed")
            if self._state == "new":
                for link in self._links:
                    link.arm()
                self._state = "started"

    async def _call_remote(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        if self._state != "started":
            await self._start_lazily()
        link = self._routes.get(name)
        if link is None:  # not listed yet, or added to a server since
            await self._list_remote()
            link = self._routes.get(name)
        if link is None:
            known = {t.name for t in await self._local.list_tools()} | set(self._routes)
            return ToolResult.unknown_tool(name, known)
        try:
            reply = await link.call_tool(name, arguments, {ENV_ID_META_KEY: self.env_id})
        except MCPError as exc:  # the server refused the request itself
            return ToolResult.error(
                f"{link.connection.describe()} rejected the call to {name!r}: {exc}"
            )
        return from_mcp_result(reply)

    async def _list_remote(self) -> list[tuple[ToolSchema, Link]]:
        if self._state != "started":
            await self._start_lazily()
        answers = await asyncio.gather(
            *(link.list_tools() for link in self._links), return_exceptions=True
        )
        pages: list[list[mcp_types.Tool]] = []
        failures: list[MCPConnectionError] = []
        for link, answer in zip(self._links, answers, strict=True):
            if isinstance(answer, MCPConnectionError):
                failures.append(answer)
                _log.warning("listing without %s: %s", link.connection.describe(), answer)
                pages.append(self._known.get(link, []))
            elif isinstance(answer, BaseException):
                raise answer
            else:
                self._known[link] = answer
                pages.append(answer)
        if failures and len(failures) == len(self._links) and not self._known:
            raise failures[0]  # no server has ever answered: nothing to offer
        listed: list[tuple[ToolSchema, Link]] = []
        routes: dict[str, Link] = {}
        for link, tools in zip(self._links, pages, strict=True):
            for tool in tools:
                if tool.name not in routes:  # the first connection wins a shared name
                    routes[tool.name] = link
                    listed.append((from_mcp_tool(tool), link))
        self._routes = routes
        return listed

    @contextmanager
    def _filtered_errors(self) -> Iterator[None]:
        """Scrub a connection error's text: an agent shows it to the model."""
        try:
            yield
        except MCPConnectionError as exc:
            if self.output_filter is None:
                raise
            text = self.output_filter.filter_text(str(exc))
            if text == str(exc):
                raise
            raise MCPConnectionError(text) from None

    def __repr__(self) -> str:
        where = ", ".join(c.describe() for c in self.connections)
        return f"<MCPClient {self.env_id!r} on {where or 'no servers'}>"
