"""A stream session's ``tools/call`` requests answered beside the SDK's dispatch, not through it.

The SDK's server runs every request through its era relay, a task of its task
group, a per-request connection, context and session, and its middleware chain:
about a tenth of a millisecond per call that a tool server answering many small
calls pays on each one. :class:`ToolCallRouter` sits between the link and the
SDK's server and answers the ``tools/call`` requests of a 2026-07-28 session
itself, through the same steps the SDK takes in the same order (the envelope
ladder, the per-version request surface, the params model, the handler, the
per-version result surface and the server-info stamp), so that each answer is
the very JSON-RPC message the SDK would have written. Every other frame, and
every frame of a handshake-era session, goes to the SDK untouched.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Mapping
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
from mcp.server.runner import modern_error_data
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.dispatcher import as_request_id, coerce_request_id
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import InboundLadderRejection, classify_inbound_request
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp.shared.message import SessionMessage
from mcp_types import methods
from pydantic import ValidationError

from ._connections import DirectCall

__all__ = ["ToolCallRouter"]

_log = logging.getLogger("heron.mcp")

METHOD = "tools/call"
"""The one method answered here."""
SHUTDOWN_WRITE_TIMEOUT = 1.0
"""Seconds the answer to a call cut short by the session's end may take (the SDK's bound)."""


class ToolCallRouter(anyio.abc.ObjectReceiveStream[SessionMessage | Exception]):
    """The read stream an SDK server session runs on, answering ``tools/call`` itself.

    ``answer`` is the server's ``tools/call`` handler (params and protocol
    version in, result out) and ``server_info`` the ``serverInfo`` stamp of
    its results. The first request of the session decides its era, as it
    does for the SDK; only requests after it, in a 2026-07-28 session, are
    answered here. Each runs in a task of its own, as the SDK runs it, so a
    slow tool holds up no other request; a ``notifications/cancelled`` for
    one stops it and leaves it unanswered; at the end of the link the calls
    still running are answered with the SDK's "connection closed" error.
    """

    def __init__(
        self,
        read: ReadStream[SessionMessage | Exception],
        write: WriteStream[SessionMessage],
        answer: DirectCall,
        server_info: dict[str, Any],
    ) -> None:
        self._read = read
        self._write = write
        self._answer = answer
        self._server_info = dict(server_info)  # a fresh copy: the SDK hands out one per access
        self._modern: bool | None = None  # None until the first request
        self._calls: dict[types.RequestId, _Call] = {}
        self._running: set[asyncio.Task[None]] = set()

    async def receive(self) -> SessionMessage | Exception:
        """The next frame the SDK is to handle; ``tools/call`` requests never reach it."""
        while True:
            try:
                item = await self._read.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                await self.end_calls()
                raise
            if not self._claimed(item):
                return item

    @property
    def last_context(self) -> contextvars.Context | None:
        """The sender's context of the last frame received, when the link records one.

        The SDK runs each request's handler in its sender's context; so do the calls here.
        """
        context: contextvars.Context | None = getattr(self._read, "last_context", None)
        return context

    async def end_calls(self) -> None:
        """Stop the calls still running and wait for them (each answers "connection closed")."""
        running = set(self._running)
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)

    async def aclose(self) -> None:
        """Close the link's read side."""
        await self._read.aclose()

    def _claimed(self, item: SessionMessage | Exception) -> bool:
        """Whether ``item`` is a call answered here (started, then); cancellations are noted
        but still passed on, as the SDK tees them to its notification handlers."""
        if not isinstance(item, SessionMessage):
            return False
        message = item.message
        if isinstance(message, types.JSONRPCRequest):
            if self._modern is None:  # the SDK decides the era on this one: leave it to it
                self._modern = message.method != "initialize" and _has_envelope(message.params)
                return False
            # Metadata is what HTTP transports attach for the SDK's own use: leave those to it.
            if self._modern and message.method == METHOD and item.metadata is None:
                self._start(message)
                return True
        elif isinstance(message, types.JSONRPCNotification):
            if message.method == "notifications/cancelled":
                self._cancel(message.params)
        return False

    def _start(self, request: types.JSONRPCRequest) -> None:
        call = _Call(request)
        # A reused id replaces the entry, as the SDK's in-flight table does.
        self._calls[coerce_request_id(request.id)] = call
        sender = self.last_context
        context = sender.copy() if sender is not None else None
        task = asyncio.create_task(self._respond(call), context=context)
        call.task = task
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    def _cancel(self, params: Mapping[str, Any] | None) -> None:
        request_id = as_request_id((params or {}).get("requestId"))
        call = self._calls.get(coerce_request_id(request_id)) if request_id is not None else None
        if call is not None and call.task is not None:
            call.cancelled = True
            call.task.cancel()

    async def _respond(self, call: _Call) -> None:
        """Answer one call as the SDK's dispatcher would, or not at all once it is withdrawn."""
        request = call.request
        try:
            reply = await self._reply(call)
            if not call.cancelled:
                call.answering = True  # from here on it counts as answered, even if cut short
                await self._send(reply)
        except asyncio.CancelledError:
            if not call.cancelled and not call.answering:
                await self._closing_answer(request.id)  # the session ended under it
            if not call.cancelled:
                raise

    async def _reply(self, call: _Call) -> types.JSONRPCMessage:
        """The call's answer: its result, or the error the SDK's dispatcher would send."""
        request = call.request
        try:
            result = await self._result(request.params)
        except (MCPError, ValidationError) as exc:
            error = handler_exception_to_error_data(exc)
            assert error is not None  # both kinds map to their wire error
            return types.JSONRPCError(jsonrpc="2.0", id=request.id, error=error)
        finally:
            key = coerce_request_id(request.id)
            if self._calls.get(key) is call:
                del self._calls[key]
        return types.JSONRPCResponse(jsonrpc="2.0", id=request.id, result=result)

    async def _result(self, params: dict[str, Any] | None) -> dict[str, Any]:
        """The call's wire result; raises what the SDK's modern entry maps to an error."""
        route = classify_inbound_request({"method": METHOD, "params": params})
        if isinstance(route, InboundLadderRejection):
            raise MCPError(code=route.code, message=route.message, data=route.data)
        version = route.protocol_version
        try:
            try:
                methods.validate_client_request(METHOD, version, params)
            except KeyError:
                raise MCPError(
                    code=types.METHOD_NOT_FOUND, message="Method not found", data=METHOD
                ) from None
            typed = types.CallToolRequestParams.model_validate(
                {} if params is None else params, by_name=False
            )
            result = await self._answer(typed, version)
            return self._wire(result, version)
        except (MCPError, ValidationError):
            raise
        except Exception as exc:
            error = modern_error_data(exc)
            raise MCPError(code=error.code, message=error.message, data=error.data) from exc

    def _wire(self, result: types.CallToolResult, version: str) -> dict[str, Any]:
        """``result`` shaped for the wire at ``version`` (a 2026-07-28 one: the envelope
        ladder admits no other), as the SDK's runner shapes a handler's result."""
        dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        result_type = dumped.get("resultType")
        if not isinstance(result_type, str) or result_type in types.CORE_RESULT_TYPES:
            try:
                dumped = methods.serialize_server_result(METHOD, version, dumped)
            except ValidationError:
                _log.exception("handler for %r returned an invalid result", METHOD)
                raise MCPError(
                    code=types.INTERNAL_ERROR, message="Handler returned an invalid result"
                ) from None
        # The surface sieve has filled resultType in. The SDK stamps a fresh copy of its
        # serverInfo so that no caller can alter later stamps through a result it kept;
        # these results are written and dropped at once, so one copy serves them all.
        meta = dumped.get("_meta")
        if meta is None:
            dumped["_meta"] = {types.SERVER_INFO_META_KEY: self._server_info}
        elif isinstance(meta, dict) and meta.get(types.SERVER_INFO_META_KEY) is None:
            dumped["_meta"] = {**meta, types.SERVER_INFO_META_KEY: self._server_info}
        return dumped

    async def _closing_answer(self, request_id: types.RequestId) -> None:
        """The SDK's answer to a call the session's end cut short, bounded in time."""
        error = types.ErrorData(code=types.CONNECTION_CLOSED, message="Connection closed")
        reply = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error)
        with anyio.move_on_after(SHUTDOWN_WRITE_TIMEOUT, shield=True):
            await self._send(reply)

    async def _send(self, reply: types.JSONRPCMessage) -> None:
        try:
            await self._write.send(SessionMessage(message=reply))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            _log.debug("dropped the answer to a tools/call: the write stream is closed")


class _Call:
    """One ``tools/call`` being answered."""

    __slots__ = ("answering", "cancelled", "request", "task")

    def __init__(self, request: types.JSONRPCRequest) -> None:
        self.request = request
        self.task: asyncio.Task[None] | None = None
        self.cancelled = False  # withdrawn by the client's notifications/cancelled
        self.answering = False  # its answer is being written


def _has_envelope(params: Mapping[str, Any] | None) -> bool:
    """Whether ``params._meta`` carries the 2026-07-28 protocol version (the SDK's era test)."""
    meta = params.get("_meta") if params else None
    return isinstance(meta, Mapping) and types.PROTOCOL_VERSION_META_KEY in meta
