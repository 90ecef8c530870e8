"""One client-side MCP session over a connection, kept alive across server restarts."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Coroutine
from types import TracebackType
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.server.runner import modern_error_data
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED

from .._core.closing import AsyncClosing
from ._client_calls import StreamClient
from ._connections import Connection, DirectCall, SessionStreams
from ._errors import MCPConnectionError

__all__ = ["Link"]

_LINK_ERRORS = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream)


class Link:
    """A supervised MCP session with one server.

    A background task owns the session (the SDK's client must be entered and
    left in one task). When the link drops, calls in flight fail at once with
    :class:`MCPConnectionError`; the task then reconnects every
    ``reconnect_delay`` seconds if the connection says so (a stdio server is
    relaunched only when a call needs it), and a call made while disconnected
    triggers an immediate attempt and fails fast if the server is still away.
    """

    def __init__(
        self, connection: Connection, *, connect_timeout: float, call_timeout: float | None = None
    ) -> None:
        self.connection = connection
        self._connect_timeout = connect_timeout
        self._call_timeout = call_timeout
        self._client: Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._closing = asyncio.Event()
        self._kick = asyncio.Event()
        self._waiters: list[asyncio.Event] = []
        self._last_error: BaseException | None = None
        self._dropped: asyncio.Event | None = None  # set once the live session's link ends
        self._direct_calls: set[asyncio.Future[Any]] | None = None  # a direct session's calls
        self._direct_call: DirectCall | None = None  # a direct session's tools/call

    @property
    def connected(self) -> bool:
        """Whether a session is up right now."""
        dropped = self._dropped is not None and self._dropped.is_set()
        return self._client is not None and not dropped

    async def start(self) -> None:
        """Connect; raise :class:`MCPConnectionError` if the server cannot be reached.

        A link closed after a failed start can be started again: it gets fresh state.
        """
        self.arm()
        await self._ensure()

    def arm(self) -> None:
        """Start supervising the link without waiting for it (no-op if it is running).

        The first call that needs the session connects it, or fails on its own.
        """
        if self._task is not None:
            return
        self._closing = asyncio.Event()
        self._kick = asyncio.Event()
        self._waiters = []
        self._last_error = None
        self._dropped = None
        self._task = asyncio.create_task(self._supervise())

    async def close(self) -> None:
        """End the session (stopping a stdio server process) and stop reconnecting."""
        self._closing.set()
        task, self._task = self._task, None
        if task is None:
            return
        if self._client is None:
            # Still connecting (maybe to a server that accepted and never answers):
            # nothing to end gracefully, and waiting could take forever.
            task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    async def list_tools(self) -> list[types.Tool]:
        """Every tool the server lists, all pages."""
        tools: list[types.Tool] = []
        cursor: str | None = None
        while True:
            client = await self._ensure()
            page = await self._guard(client.list_tools(cursor=cursor), "listing tools")
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools

    async def call_tool(
        self, name: str, arguments: dict[str, Any], meta: dict[str, Any]
    ) -> types.CallToolResult:
        """Call ``name`` on the server; protocol errors propagate as :class:`MCPError`."""
        client = await self._ensure()
        doing = f"calling tool {name!r} (it may or may not have run)"
        direct = self._direct_call
        if direct is not None:
            params = types.CallToolRequestParams(name=name, arguments=arguments, _meta=meta)  # type: ignore[arg-type]
            answer: types.CallToolResult = await self._guard(
                _dispatched(direct(params, client.protocol_version)), doing
            )
            return answer
        result: types.CallToolResult = await self._guard(
            client.call_tool(name, arguments, meta=meta),  # type: ignore[arg-type]
            doing,
        )
        return result

    async def _guard(self, request: Coroutine[Any, Any, Any], doing: str) -> Any:
        calls = self._direct_calls
        deadline = asyncio.timeout(self._call_timeout)
        try:
            async with deadline:
                if calls is None:  # over streams: the session fails its requests when it ends
                    return await request
                # A direct (in-process) call has no stream whose end would fail it: run it
                # as a task the session cancels when it ends (server or link closed).
                call = asyncio.ensure_future(request)
                calls.add(call)
                call.add_done_callback(calls.discard)
                try:
                    return await call
                except asyncio.CancelledError:
                    current = asyncio.current_task()
                    if current is not None and current.cancelling():
                        raise  # our caller was cancelled, or the timeout fired
                error: BaseException | None = None  # the session ended under the call
        except TimeoutError as exc:
            if deadline.expired():
                raise MCPConnectionError(
                    f"{self.connection.describe()} did not answer within "
                    f"{self._call_timeout:g} s while {doing}"
                ) from None
            # Not the call's limit (there may be none): the transport's own, say.
            raise MCPConnectionError(
                f"{self.connection.describe()} timed out while {doing}: {exc or 'TimeoutError'}"
            ) from exc
        except MCPError as exc:
            if exc.code != CONNECTION_CLOSED:
                raise
            error = exc
        except _LINK_ERRORS as exc:
            error = exc
        why = self.connection.end_reason
        raise MCPConnectionError(
            f"lost the link to {self.connection.describe()} while {doing}"
            + (f" ({why})" if why else "")
        ) from error

    async def _ensure(self) -> Client:
        """The live session, after one immediate connection attempt if there is none."""
        if self._task is None:
            raise MCPConnectionError(f"the link to {self.connection.describe()} is closed")
        client = self._client
        if client is not None and self.connected:
            return client
        done = asyncio.Event()
        self._waiters.append(done)
        self._kick.set()
        try:
            async with asyncio.timeout(self._connect_timeout):
                await done.wait()
        except TimeoutError:
            raise MCPConnectionError(
                f"could not connect to {self.connection.describe()} "
                f"within {self._connect_timeout:g} s"
            ) from None
        client = self._client
        if client is None:
            reason = self._last_error
            detail = f": {type(reason).__name__}: {reason}" if reason is not None else ""
            if isinstance(reason, MCPConnectionError):  # already says what happened
                raise MCPConnectionError(str(reason)) from None
            raise MCPConnectionError(
                f"cannot reach {self.connection.describe()}{detail}"
            ) from reason
        return client

    def _settle_attempt(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            waiter.set()

    async def _supervise(self) -> None:
        while not self._closing.is_set():
            self._kick.clear()
            self._dropped = None
            try:
                await self._run_session()
            except Exception as exc:  # every failure to connect is reported to the callers
                self._last_error = exc
            finally:
                self._client = None
            if self._closing.is_set():
                break
            if self._dropped is None:
                self._settle_attempt()  # this attempt failed: tell the callers waiting on it
            # Retry after the delay, or at once when a call kicks; never in a tight loop,
            # even against a server that accepts and then drops every link.
            delay = self.connection.reconnect_delay if self.connection.auto_reconnect else None
            await _first(self._closing, self._kick, within=delay)
        self._settle_attempt()

    async def _run_session(self) -> None:
        direct = self.connection.direct()
        if direct is not None:
            # Same process: the SDK dispatches to the server's handlers directly.
            self._direct_calls = calls = set[asyncio.Future[Any]]()
            try:
                async with asyncio.timeout(self._connect_timeout) as connecting:
                    async with Client(direct.server, cache=None) as client:
                        connecting.reschedule(None)
                        self._direct_call = direct.call_tool
                        await self._serve_calls(client, direct.stopped)
            finally:
                self._direct_calls = self._direct_call = None
                for call in calls:
                    call.cancel()
            return
        # The deadline covers opening the link and the MCP handshake: a server that
        # accepts and never answers must not hold the link in "connecting" forever.
        try:
            async with asyncio.timeout(self._connect_timeout) as connecting:
                async with self.connection.open() as (read, write):
                    dropped = asyncio.Event()
                    transport = _Given((_Watched(read, dropped), write))
                    async with StreamClient(transport, cache=None) as client:
                        connecting.reschedule(None)
                        await self._serve_calls(client, dropped)
        except TimeoutError:
            if not connecting.expired():
                raise
            raise MCPConnectionError(
                f"{self.connection.describe()} did not complete the MCP handshake "
                f"within {self._connect_timeout:g} s"
            ) from None

    async def _serve_calls(self, client: Client, dropped: asyncio.Event) -> None:
        """Publish ``client`` to callers until the link drops or the link is closed."""
        self._client, self._dropped = client, dropped
        self._last_error = None
        self._settle_attempt()
        await _first(self._closing, dropped, within=None)
        self._client = None


async def _dispatched(call: Awaitable[types.CallToolResult]) -> types.CallToolResult:
    """A direct ``tools/call``, its failures reported as the SDK's dispatch reports them."""
    try:
        return await call
    except MCPError:
        raise
    except Exception as exc:  # a fault of the server's handler, not of the tool (an error result)
        error = modern_error_data(exc)
        raise MCPError(code=error.code, message=error.message, data=error.data) from exc


async def _first(*events: asyncio.Event, within: float | None) -> None:
    """Return when any of ``events`` is set, or after ``within`` seconds."""
    waits = [asyncio.create_task(e.wait()) for e in events]
    try:
        await asyncio.wait(waits, timeout=within, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits:
            w.cancel()
        await asyncio.gather(*waits, return_exceptions=True)


class _Given:
    """A transport over streams that are already open (their owner closes them)."""

    def __init__(self, streams: SessionStreams) -> None:
        self._streams = streams

    async def __aenter__(self) -> SessionStreams:
        return self._streams

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None


class _Watched(AsyncClosing):
    """A read stream that sets ``dropped`` when the link behind it ends."""

    def __init__(self, inner: Any, dropped: asyncio.Event) -> None:
        self._inner = inner
        self._dropped = dropped

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except _LINK_ERRORS:
            self._dropped.set()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _Watched:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None
