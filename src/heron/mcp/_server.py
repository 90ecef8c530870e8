"""Serving Heron tools to any MCP client."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import mcp_types as types
from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from opentelemetry import trace

from .._core import UserError
from .._core.version import __version__
from ..tools import IdGenerator, Storage, Tool, ToolContext, ToolResult
from ._connections import Connection, DirectServer
from ._convert import ENV_ID_META_KEY, meta_value, to_mcp_result, to_mcp_tool
from ._lifecycle import Lifecycle
from ._server_calls import ToolCallRouter
from ._storage import FileStorage, ScopedStorage

__all__ = ["DEFAULT_ENV_ID", "MCPServer"]

DEFAULT_ENV_ID = "default"
"""The environment of calls that name none (clients other than Heron's)."""

IdGeneratorFactory = Callable[[Storage, str], IdGenerator]


class MCPServer(Lifecycle):
    """Serves Heron tools over the Model Context Protocol, to Heron's client or any other.

    Each tool is listed with its name, description and input schema; its
    results travel as MCP text and image content plus structured content.
    A call runs with a :class:`ToolContext` for the *calling* client: its
    ``env_id`` (sent by :class:`MCPClient` with every call), this server's
    storage seen under that environment's prefix, and that environment's id
    generator. Two clients with different env ids sharing one server thus
    keep separate state::

        async with MCPServer(UnixSocketConnection(mode="server", path=sock)) as server:
            server.register_tool(read_file)
            await server.serve_forever()

    Env ids separate state; they are **not access control**: any client that
    can connect may name any env id and reach that environment's state. Keep
    clients apart by who can connect (socket permissions, tokens, TLS), or
    with one server per trust domain.

    ``storage`` defaults to a :class:`FileStorage` in a new folder under
    ``./data`` (created only when a tool first stores something); ``ids``
    builds each environment's :class:`IdGenerator` from its storage and env id.
    The contexts of the ``max_environments`` most recently used environments
    are kept; older ones are rebuilt when needed (state lives in storage).

    A call to a tool the server does not have is an error *result* (not a
    JSON-RPC error), naming the tools it does have, so that a model can pick
    again. A tool registered after the server started shows in the next
    ``tools/list``; no notification announces it (the server declares
    ``listChanged: false``), so clients that cache listings see it when they
    list again (:class:`MCPClient` does when asked for a tool it has not seen).
    """

    def __init__(
        self,
        connection: Connection,
        storage: Storage | None = None,
        ids: IdGeneratorFactory | None = None,
        *,
        name: str = "heron",
        max_environments: int = 1024,
    ) -> None:
        if not isinstance(connection, Connection):
            raise UserError(f"connection must be a heron.mcp Connection, not {connection!r}")
        self.connection = connection
        """Where the server listens."""
        self.storage: Storage = storage if storage is not None else FileStorage()
        """Tool state of every environment, each under its own key prefix."""
        if not isinstance(max_environments, int) or max_environments < 1:
            raise UserError(f"max_environments must be a positive int, not {max_environments!r}")
        self._ids = ids if ids is not None else IdGenerator
        self._tools: dict[str, Tool] = {}
        self._contexts: OrderedDict[str, ToolContext] = OrderedDict()
        self._max_environments = max_environments
        self._started = False
        self._closed = asyncio.Event()
        self._lowlevel: Server[Any] = Server(
            name,
            version=__version__,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    def register_tool(self, tool: Tool) -> None:
        """Serve ``tool``; a different tool with the same name is a :class:`UserError`.

        Tools registered after the server started are listed from the next
        ``tools/list`` on (no ``list_changed`` notification is sent).
        """
        if not isinstance(tool, Tool):
            hint = " (decorate functions with @tool)" if callable(tool) else ""
            raise UserError(f"not a Tool: {tool!r}{hint}")
        seen = self._tools.get(tool.name)
        if seen is not None and seen is not tool and not seen.same_definition(tool):
            raise UserError(f"a different tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool

    @property
    def tools(self) -> list[Tool]:
        """The served tools, in registration order."""
        return list(self._tools.values())

    def context(self, env_id: str) -> ToolContext:
        """The context tools get when called from environment ``env_id``."""
        found = self._contexts.get(env_id)
        if found is None:
            # Quoted, so that env "a/b" can never read env "a"'s key "b/...".
            storage = ScopedStorage(self.storage, f"env/{quote(env_id, safe='')}/")
            found = ToolContext(env_id=env_id, storage=storage, ids=self._ids(storage, env_id))
            self._contexts[env_id] = found
            if len(self._contexts) > self._max_environments:
                self._contexts.popitem(last=False)  # any client may invent env ids: stay bounded
        else:
            self._contexts.move_to_end(env_id)
        return found

    async def start(self) -> None:
        """Start listening on the connection."""
        if self._started:
            raise RuntimeError("this MCPServer was already started")
        self._started = True
        if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
            # No tracer provider is set: the SDK's span around each request would record
            # nothing and still cost every call tens of microseconds. A provider set before
            # start() keeps the spans.
            self._lowlevel.middleware = [
                m for m in self._lowlevel.middleware if not isinstance(m, OpenTelemetryMiddleware)
            ]
        await self.connection.listen(self._serve_session)
        self.connection.offer_direct(
            DirectServer(server=self._lowlevel, stopped=asyncio.Event(), call_tool=self._answer)
        )

    async def close(self) -> None:
        """Stop listening and end every session; safe to call twice."""
        if self._started and not self._closed.is_set():
            self._closed.set()
            await self.connection.stop_listening()

    async def serve_forever(self) -> None:
        """Serve until :meth:`close` is called or the connection is done (stdin closed)."""
        if not self._started:
            await self.start()
        finished = asyncio.create_task(self.connection.wait_finished())
        closed = asyncio.create_task(self._closed.wait())
        try:
            await asyncio.wait({finished, closed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            finished.cancel()
            closed.cancel()
            await asyncio.gather(finished, closed, return_exceptions=True)

    async def _serve_session(
        self,
        read: ReadStream[SessionMessage | Exception],
        write: WriteStream[SessionMessage],
    ) -> None:
        options = self._lowlevel.create_initialization_options()
        if self._lowlevel.middleware:
            # Middleware (the tracing span, when a tracer provider is set) sees every
            # request: leave them all to the SDK's dispatch.
            await self._lowlevel.run(read, write, options)
            return
        router = ToolCallRouter(read, write, self._answer, self._lowlevel.server_info_stamp)
        try:
            await self._lowlevel.run(router, write, options)
        finally:
            await router.end_calls()

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[to_mcp_tool(t.schema) for t in self._tools.values()])

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return await self._answer(params, ctx.protocol_version)

    async def _answer(
        self, params: types.CallToolRequestParams, protocol_version: str
    ) -> types.CallToolResult:
        """A ``tools/call`` request's result, whichever way the request arrived."""
        env_id = meta_value(params.meta, ENV_ID_META_KEY)
        if not isinstance(env_id, str) or not env_id:
            env_id = DEFAULT_ENV_ID
        tool = self._tools.get(params.name)
        if tool is None:
            result = ToolResult.unknown_tool(params.name, self._tools)
        else:
            result = await tool.run(params.arguments or {}, self.context(env_id))
        return to_mcp_result(
            result, structured_any_json=protocol_version in MODERN_PROTOCOL_VERSIONS
        )

    def __repr__(self) -> str:
        return f"<MCPServer on {self.connection.describe()}, {len(self._tools)} tools>"
