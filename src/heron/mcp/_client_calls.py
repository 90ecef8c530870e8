"""A stream session's ``tools/call`` requests sent without the SDK dispatcher's machinery.

For each request the SDK's JSON-RPC dispatcher opens a tracing span, injects
the trace context, arms a request clock, makes a pair of memory streams for the
answer and closes them again: about 50 microseconds a call before the request
is even written. :class:`ToolCallDispatcher` is that dispatcher with a lean
path for the plain ``tools/call`` requests a :class:`~heron.mcp.MCPClient`
sends (no progress callback, no timeout of the SDK's own, no resumption, no
chosen id): the same request id sequence, the same request message, the same
courtesy cancellation when the caller gives up, and the answer handed back
straight from the read loop through one future. Everything above it (the
envelope stamp, the result's validation, input-required rounds, re-listing
after a header mismatch) is still the SDK's session and client.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Mapping
from contextlib import AsyncExitStack
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel
import mcp_types as types
from mcp import Client
from mcp.shared._otel import inject_trace_context
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.dispatcher import (
    CallOptions,
    OnNotify,
    OnNotifyIntercept,
    OnRequest,
    coerce_request_id,
)
from mcp.shared.exceptions import MCPError
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp.shared.message import ClientMessageMetadata, SessionMessage
from mcp.shared.transport_context import TransportContext
from opentelemetry import trace

__all__ = ["StreamClient", "ToolCallDispatcher"]

_log = logging.getLogger("heron.mcp")

METHOD = "tools/call"
"""The one method sent the lean way."""
PLAIN_OPTIONS = frozenset({"headers", "cancel_on_abandon"})
"""Call options the lean path honours; any other sends the request the SDK's way."""
ABANDON_WRITE_TIMEOUT = 5.0
"""Seconds the courtesy cancellation of an abandoned call may take to write (the SDK's bound)."""

_Answer = dict[str, Any] | types.ErrorData | None  # None: the link ended first


class ToolCallDispatcher(JSONRPCDispatcher[TransportContext]):
    """The SDK's JSON-RPC dispatcher, sending plain ``tools/call`` requests the lean way.

    Every other request, notification and response goes through the SDK's
    own code, and so does every ``tools/call`` of a session that started
    with a tracer provider set (the SDK's span records each). Answers to
    lean requests are taken off the read stream before the SDK's read loop
    would look them up; when the link ends, the calls still waiting fail as
    the SDK's do, with ``CONNECTION_CLOSED``.
    """

    def __init__(
        self,
        read_stream: ReadStream[SessionMessage | Exception],
        write_stream: WriteStream[SessionMessage],
    ) -> None:
        self._answers: dict[types.RequestId, asyncio.Future[_Answer]] = {}
        self._out = write_stream
        self._live = False  # whether to send the lean way: from run() until the link ends
        super().__init__(_AnswerReader(read_stream, self), write_stream)
        # The lean path shares the SDK's id sequence, so its ids never collide with the SDK's.
        self._lean = callable(getattr(self, "_allocate_id", None)) and isinstance(
            getattr(self, "_pending", None), dict
        )

    async def send_raw_request(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        opts: CallOptions | None = None,
        *,
        _related_request_id: types.RequestId | None = None,
    ) -> dict[str, Any]:
        """Send a request and await its result; plain ``tools/call`` requests the lean way."""
        if (
            method != METHOD
            or _related_request_id is not None
            or not self._lean
            or not self._live
            or not PLAIN_OPTIONS.issuperset(opts or {})
        ):
            return await super().send_raw_request(
                method, params, opts, _related_request_id=_related_request_id
            )
        return await self._call(params, opts or {})

    async def run(
        self,
        on_request: OnRequest,
        on_notify: OnNotify,
        on_notify_intercept: OnNotifyIntercept | None = None,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Drive the SDK's read loop; lean calls still waiting when it ends fail.

        With a tracer provider set by now, every request keeps the SDK's span
        for the whole session (a provider set later shows from the next one).
        """
        self._live = not _tracing()
        try:
            await super().run(on_request, on_notify, on_notify_intercept, task_status=task_status)
        finally:
            self.end_calls()

    def end_calls(self) -> None:
        """The link is gone: fail every lean call still waiting, and send no more."""
        self._live = False
        for answer in self._answers.values():
            if not answer.done():
                answer.set_result(None)

    def take_answer(self, item: SessionMessage | Exception) -> bool:
        """Hand ``item`` to the lean call it answers; whether it was one."""
        if not isinstance(item, SessionMessage):
            return False
        message = item.message
        if not isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            return False
        if message.id is None:
            return False
        answer = self._answers.get(coerce_request_id(message.id))
        if answer is None:
            return False
        if not answer.done():
            if isinstance(message, types.JSONRPCResponse):
                answer.set_result(message.result)
            else:
                answer.set_result(message.error)
        return True

    async def _call(self, params: Mapping[str, Any] | None, opts: CallOptions) -> dict[str, Any]:
        """One lean ``tools/call``: the SDK dispatcher's steps, without its span and streams."""
        request_id = self._allocate_id()
        while request_id in self._pending:
            request_id = self._allocate_id()
        headers = opts.get("headers")
        request = SessionMessage(
            message=_request(request_id, params),
            metadata=ClientMessageMetadata(headers=headers) if headers else None,
        )
        answer: asyncio.Future[_Answer] = asyncio.get_running_loop().create_future()
        self._answers[request_id] = answer
        try:
            withdraw = opts.get("cancel_on_abandon", True)
            outcome = await self._exchange(request_id, request, answer, withdraw=withdraw)
        finally:
            self._answers.pop(request_id, None)
        if outcome is None:
            raise MCPError(code=types.CONNECTION_CLOSED, message="Connection closed")
        if isinstance(outcome, types.ErrorData):
            raise MCPError(code=outcome.code, message=outcome.message, data=outcome.data)
        return outcome

    async def _exchange(
        self,
        request_id: types.RequestId,
        request: SessionMessage,
        answer: asyncio.Future[_Answer],
        *,
        withdraw: bool,
    ) -> _Answer:
        """Write ``request`` and wait for its answer; withdraw it if the caller gives up."""
        written = False
        try:
            # A caller already cancelled must not send the request at all.
            await anyio.lowlevel.checkpoint_if_cancelled()
            written = True  # a write cut short may still have reached the server
            try:
                await self._out.send(request)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                raise MCPError(code=types.CONNECTION_CLOSED, message="Connection closed") from None
            return await answer
        except asyncio.CancelledError:
            if written and withdraw:
                await self._withdraw(request_id)
            raise

    async def _withdraw(self, request_id: types.RequestId) -> None:
        """Tell the server the caller gave up on ``request_id``, as the SDK does."""
        with anyio.move_on_after(ABANDON_WRITE_TIMEOUT, shield=True) as scope:
            await self.notify(
                "notifications/cancelled", {"requestId": request_id, "reason": "caller cancelled"}
            )
        if scope.cancelled_caught:
            _log.warning("courtesy cancel for %r gave up: transport write blocked", request_id)


class StreamClient(Client):
    """The SDK's client over already-open streams, its requests sent by :class:`ToolCallDispatcher`.

    ``server`` must be a transport (an async context manager yielding the
    read and write streams); everything else is the SDK's :class:`Client`.
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        transport = self.server

        async def connect(
            exit_stack: AsyncExitStack, _mode: Any, _raise_exceptions: bool
        ) -> ToolCallDispatcher:
            read, write = await exit_stack.enter_async_context(transport)  # type: ignore[arg-type]
            return ToolCallDispatcher(read, write)

        self._connect = connect


class _AnswerReader(anyio.abc.ObjectReceiveStream[SessionMessage | Exception]):
    """The read stream the SDK's loop runs on, minus the answers to lean calls."""

    def __init__(
        self, inner: ReadStream[SessionMessage | Exception], dispatcher: ToolCallDispatcher
    ) -> None:
        self._inner = inner
        self._dispatcher = dispatcher

    async def receive(self) -> SessionMessage | Exception:
        while True:
            try:
                item = await self._inner.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                self._dispatcher.end_calls()
                raise
            if not self._dispatcher.take_answer(item):
                return item

    @property
    def last_context(self) -> contextvars.Context | None:
        """The sender's context of the last frame, when the link records one (the SDK reads it)."""
        context: contextvars.Context | None = getattr(self._inner, "last_context", None)
        return context

    async def aclose(self) -> None:
        await self._inner.aclose()


def _request(request_id: types.RequestId, params: Mapping[str, Any] | None) -> types.JSONRPCRequest:
    """The request message the SDK's dispatcher builds from ``params``."""
    out = dict(params) if params is not None else {}
    meta = dict(out.get("_meta") or {})
    inject_trace_context(meta)
    if meta:
        out["_meta"] = meta
    else:
        out.pop("_meta", None)
    if out:
        return types.JSONRPCRequest(jsonrpc="2.0", id=request_id, method=METHOD, params=out)
    return types.JSONRPCRequest(jsonrpc="2.0", id=request_id, method=METHOD)


def _tracing() -> bool:
    """Whether a tracer provider is set (the SDK's spans then record each request)."""
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
