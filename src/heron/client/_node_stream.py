"""The stream objects: :class:`NodeStream` (blocking) and :class:`AsyncNodeStream`.

They perform the instructions of a stream's flow (:mod:`._stream_flow`): run the
create or retrieve, open the route, read bytes, sleep before a reconnection. What
to do with the bytes — resume, de-duplicate, end — is decided in the flow, once.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import socket
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .. import api
from .._core.closing import AsyncClosing, Closing
from ._drivers import AsyncDriver, Driver, SyncDriver, race
from ._errors import APIError, APIUserAbortError, error_from_response
from ._flow import Flow, Send, Sleep
from ._httpx import httpx
from ._listeners import Listener, Listeners
from ._options import Cancel, RequestOptions
from ._stream_flow import (
    Emit,
    Open,
    Read,
    Ready,
    Reconnect,
    Start,
    StreamFlow,
    StreamInstruction,
    stream_flow,
)

__all__ = ["AsyncNodeStream", "Listener", "NodeStream", "Plan"]


@dataclass(frozen=True, slots=True)
class Plan:
    """What a stream builder decided: how to get the node, and where to start."""

    start: Callable[[RequestOptions], Flow[api.Node]]
    """Builds the create (or retrieve) flow, given the options the stream sends with."""
    after: int | None
    """Where the first connection starts (``None``: join as the daemon sees fit)."""
    reconnect: Reconnect
    """The reconnection budget."""
    options: RequestOptions
    """The caller's options."""
    eager: bool = False
    """Get the node as the stream is made (``nodes.stream``: the create is sent at once),
    not when it is first used."""


class _StreamBase(Listeners):
    """What both streams share: listeners, state, and aborting."""

    def __init__(self, driver: Driver[Any], plan: Plan) -> None:
        super().__init__()
        self._driver = driver
        self._cancel = Cancel()  # abort() and the caller's own cancellation both fire it
        options = dataclasses.replace(plan.options, cancel=self._cancel)
        self._options = options
        self._flow: StreamFlow = stream_flow(
            plan.start(options), after=plan.after, reconnect=plan.reconnect, options=options
        )
        self._node: api.Node | None = None
        self._outcome: api.NodeOutcome | None = None
        self._error: BaseException | None = None
        self._finished = False
        self._value: Any = None
        self._thrown: BaseException | None = None
        self._response: httpx.Response | None = None
        self._forget_user_cancel: Callable[[], None] | None = None
        user_cancel = plan.options.cancel
        if user_cancel is not None:  # already cancelled: abort() runs at once, ending it
            self._forget_user_cancel = user_cancel.add_callback(self.abort)

    @property
    def aborted(self) -> bool:
        """Whether :meth:`abort` was called (or the caller's cancellation fired)."""
        return self._cancel.cancelled

    def abort(self) -> None:
        """Disconnect, leaving the node alone (it keeps running). Iteration and
        ``final_outcome()`` in progress or to come raise ``APIUserAbortError``.
        Safe from any thread, and a no-op once the stream has ended."""
        self._cancel.cancel()
        response = self._response
        if response is not None:
            _shut_down(response)
        self._release_idle()

    def _release_idle(self) -> None:
        """End an aborted stream nobody is reading, so its connection goes back to the
        client's pool now (a reader blocked in a read ends it itself, once woken)."""
        raise NotImplementedError

    def _abort_now(self) -> None:
        """End the stream as aborted (called with the stream's lock held)."""
        if not self._finished:
            self._end(APIUserAbortError("the stream was aborted"))

    def _step(self) -> StreamInstruction | None:
        """The flow's next instruction; ``None`` once it has ended (outcome or error)."""
        if self._finished:
            if self._error is not None:
                raise self._error
            return None
        value, thrown = self._value, self._thrown
        self._value, self._thrown = None, None
        if self._cancel.cancelled and thrown is None:
            thrown = APIUserAbortError("the stream was aborted")
        try:
            if thrown is not None:
                return self._flow.throw(thrown)
            return self._flow.send(value)
        except StopIteration as stop:
            self._outcome = stop.value
            self._end(None)
            return None
        except BaseException as exc:
            self._end(exc)
            raise

    def _end(self, error: BaseException | None) -> None:
        self._finished, self._error = True, error
        self._flow.close()
        if self._forget_user_cancel is not None:
            self._forget_user_cancel()
        self._close_response()

    def _close_response(self) -> None:
        """Let go of the current response (its connection is not reused: it may be mid-body)."""
        raise NotImplementedError

    def _request(self, http: httpx.Client | httpx.AsyncClient, open: Open) -> httpx.Request:
        """The request opening the stream (``client_closed`` if the client was closed)."""
        if http.is_closed:
            raise APIError(0, "client_closed", "the client was closed: its streams have ended")
        self._last_open = open
        send = Send(
            method="GET",
            path=f"/v1/nodes/{open.node_id}/events",
            query={"after": open.after},
            options=self._options,
        )
        request = self._driver.build(http, send)
        request.headers["accept"] = "text/event-stream"
        # Connecting and the answer's head are bounded; reading the body is not: an idle
        # stream sends a keepalive every 15 s, a quiet node may say nothing for hours.
        timeout = httpx.Timeout(self._driver.timeout(send), read=None)
        request.extensions["timeout"] = timeout.as_dict()
        return request

    def _failed_read(self, exc: httpx.HTTPError, open: Open) -> APIError:
        if self._cancel.cancelled:
            return APIUserAbortError("the stream was aborted")
        send = Send(method="GET", path=f"/v1/nodes/{open.node_id}/events")
        return self._driver.connection_error(exc, send)


def _retrieved(task: asyncio.Task[Any]) -> None:
    """Mark an eager create's failure as seen: the stream raises it where it is used."""
    if not task.cancelled():
        task.exception()


def _shut_down(response: httpx.Response) -> None:
    """Shut the response's socket down: a read blocked on it (in any thread) wakes at once."""
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    # A socket.socket, or (asyncio over TCP) the transport's TransportSocket wrapper.
    shutdown = getattr(sock, "shutdown", None)
    if callable(shutdown):
        try:
            shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already closed: nothing is blocked on it


class NodeStream(_StreamBase, Closing):
    """A node's events, for the blocking client; iterate it, or wait for the outcome.

    Example::

        stream = client.nodes.stream(prompt="Fix the failing test", cwd="/repo")
        stream.on("node.output_text.delta", lambda e: print(e.delta, end=""))
        outcome = stream.final_outcome()

    Iteration yields the typed :data:`heron.api.NodeEvent` values, ``stream_gap``
    errors included (the stream goes on after them); it ends after ``node.settled``.
    Use it from one thread at a time; :meth:`abort` may come from any thread. A stream
    left before its end holds a connection: use ``with`` or :meth:`close`.
    """

    _driver: SyncDriver

    def __init__(self, driver: SyncDriver, plan: Plan) -> None:
        self._lock = threading.RLock()
        self._chunks: Iterator[bytes] | None = None
        super().__init__(driver, plan)
        if plan.eager:
            _ = self.node  # the create happens now: its error is the call's

    @property
    def node(self) -> api.Node:
        """The created (or retrieved) node; the first access creates it and blocks until then."""
        with self._lock:
            while self._node is None:
                instruction = self._step()
                if instruction is None:
                    raise APIUserAbortError("the stream ended before its node was known")
                self._perform(instruction)
            return self._node

    def __iter__(self) -> Iterator[api.NodeEvent]:
        return self

    def __next__(self) -> api.NodeEvent:
        with self._lock:
            while True:
                instruction = self._step()
                if instruction is None:
                    raise StopIteration
                if isinstance(instruction, Emit):
                    for listener in self._listeners_of(instruction.event):
                        listener(instruction.event)
                    return instruction.event
                self._perform(instruction)

    def final_outcome(self) -> api.NodeOutcome:
        """Read on to ``node.settled`` (listeners still see every event) and return its
        outcome; raises the stream's error (``APIUserAbortError`` after :meth:`abort`)."""
        for _ in self:
            pass
        with self._lock:
            if self._outcome is None:
                self._step()  # raises the error that ended the stream
                raise APIUserAbortError("the stream ended without an outcome")
            return self._outcome

    def _check_listener(self, type: str, listener: object) -> None:
        if inspect.iscoroutinefunction(listener):
            raise TypeError("a blocking stream cannot await a listener: use AsyncHeron")
        super()._check_listener(type, listener)

    def close(self) -> None:
        """Disconnect if still reading (like :meth:`abort`) and let go of the connection;
        a no-op once ended."""
        if not self._finished:
            self.abort()

    def _release_idle(self) -> None:
        # Not blocking: a reader in another thread holds the lock until its read wakes.
        if self._lock.acquire(blocking=False):
            try:
                self._abort_now()
            finally:
                self._lock.release()

    def _perform(self, instruction: StreamInstruction) -> None:
        try:
            self._value = self._do(instruction)
        except Exception as exc:  # the flow decides: resume, or end the stream with it
            self._thrown = exc

    def _do(self, instruction: StreamInstruction) -> Any:
        if isinstance(instruction, Start):
            return self._driver.run(instruction.flow)
        if isinstance(instruction, Ready):
            self._node = instruction.node
            return None
        if isinstance(instruction, Sleep):
            if self._cancel.wait(instruction.seconds):
                raise APIUserAbortError("the stream was aborted")
            return None
        if isinstance(instruction, Open):
            return self._open(instruction)
        if isinstance(instruction, Read):
            return self._read()
        raise AssertionError(f"unexpected instruction {instruction!r}")

    def _open(self, open: Open) -> None:
        self._close_response()
        http = self._driver.http
        request = self._request(http, open)
        try:
            response = self._driver.send_cancellable(request, self._cancel, stream=True)
        except httpx.HTTPError as exc:
            raise self._failed_read(exc, open) from None
        if response.status_code >= 400:
            try:
                body = response.read()
            except httpx.HTTPError as exc:
                raise self._failed_read(exc, open) from None
            finally:
                response.close()
            raise error_from_response(response.status_code, body, response.headers)
        self._response = response
        self._chunks = response.iter_bytes()
        self._driver.streams.add(self)  # closing the client aborts it, even mid-read
        if self._cancel.cancelled:  # aborted while the head arrived: wake no one, just end
            raise APIUserAbortError("the stream was aborted")

    def _read(self) -> bytes:
        assert self._chunks is not None
        try:
            chunk = next(self._chunks, b"")
        except httpx.HTTPError as exc:
            raise self._failed_read(exc, self._last_open) from None
        if self._cancel.cancelled:
            raise APIUserAbortError("the stream was aborted")
        return chunk

    def _close_response(self) -> None:
        response, self._response, self._chunks = self._response, None, None
        self._driver.streams.discard(self)
        if response is not None:
            _shut_down(response)
            response.close()


class AsyncNodeStream(_StreamBase, AsyncClosing):
    """A node's events, for the ``asyncio`` client.

    Example::

        stream = aclient.nodes.stream(prompt="Summarise README.md", cwd="/repo")
        node = await stream.node
        async for event in stream:
            if event.type == "node.output_text.delta":
                print(event.delta, end="")

    Listeners may be coroutine functions (awaited in turn). Iteration ends after
    ``node.settled``; ``stream_gap`` errors are yielded and the stream goes on.
    Cancelling a task blocked in the stream (``asyncio.wait_for`` timing out, say)
    ends the stream as :meth:`abort` does. A stream left before its end holds a
    connection: use ``async with``, :meth:`aclose` or :meth:`abort`.
    """

    _driver: AsyncDriver

    def __init__(self, driver: AsyncDriver, plan: Plan) -> None:
        self._lock = asyncio.Lock()
        self._chunks: AsyncIterator[bytes] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop its responses belong to
        self._releasing: asyncio.Future[None] | None = None
        self._reader: asyncio.Task[Any] | None = None  # the task running listeners, if any
        super().__init__(driver, plan)
        self._creating: asyncio.Task[api.Node] | None = None
        if plan.eager:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # no loop to send it on yet: the first await creates it
                return
            # Sent now, not at the first await: a stream never read still makes its node.
            # With the caller's options: abort() disconnects the stream, it never undoes
            # a create (the caller's own Cancel still can).
            self._creating = loop.create_task(driver.run(plan.start(plan.options)))
            self._creating.add_done_callback(_retrieved)

    @property
    def node(self) -> Awaitable[api.Node]:
        """Await it for the created (or retrieved) node: ``nodes.stream`` sent the create
        when it was called (inside a running loop), ``nodes.events`` retrieves the node
        at the first await."""
        return self._resolve_node()

    async def _resolve_node(self) -> api.Node:
        if self._node is not None:  # known: no lock (a listener awaiting it runs under it)
            return self._node
        self._not_from_a_listener()
        async with self._lock:
            while self._node is None:
                instruction = await self._astep()
                if instruction is None:
                    raise APIUserAbortError("the stream ended before its node was known")
                await self._perform(instruction)
            return self._node

    def __aiter__(self) -> AsyncIterator[api.NodeEvent]:
        return self

    async def __anext__(self) -> api.NodeEvent:
        self._not_from_a_listener()
        async with self._lock:
            while True:
                instruction = await self._astep()
                if instruction is None:
                    raise StopAsyncIteration
                if isinstance(instruction, Emit):
                    self._reader = asyncio.current_task()
                    try:
                        for listener in self._listeners_of(instruction.event):
                            result = listener(instruction.event)
                            if inspect.isawaitable(result):
                                await result
                    finally:
                        self._reader = None
                    return instruction.event
                await self._perform(instruction)

    def _not_from_a_listener(self) -> None:
        """Refuse to wait for the lock a listener's own task holds (it would wait forever)."""
        if self._reader is not None and self._reader is asyncio.current_task():
            raise RuntimeError(
                "a listener cannot read its own stream (it would wait for itself): "
                "iterate or await final_outcome() outside the listener"
            )

    async def final_outcome(self) -> api.NodeOutcome:
        """Read on to ``node.settled`` (listeners still see every event) and return its
        outcome; raises the stream's error (``APIUserAbortError`` after :meth:`abort`)."""
        async for _ in self:
            pass
        if self._outcome is None:
            self._step()  # raises the error that ended the stream
            raise APIUserAbortError("the stream ended without an outcome")
        return self._outcome

    async def aclose(self) -> None:
        """Disconnect if still reading (like :meth:`abort`), and let go of the connection;
        a create still on its way is waited for (the node is made all the same)."""
        creating = self._creating
        if creating is not None and not creating.done():
            await asyncio.wait([creating])
        if not self._finished:
            self.abort()
            if self._reader is not asyncio.current_task():  # a listener: the stream ends after it
                await self._release_when_idle()

    def _release_idle(self) -> None:
        # abort() cannot await the response's closing: a task on the response's own loop
        # does it once no reader holds the lock (a woken reader releases it itself).
        loop = self._loop
        if loop is None or loop.is_closed() or self._response is None:
            return
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._schedule_release()
        else:
            loop.call_soon_threadsafe(self._schedule_release)

    def _schedule_release(self) -> None:
        if self._releasing is None:  # kept: a task nobody references may be collected
            self._releasing = asyncio.ensure_future(self._release_when_idle())

    async def _release_when_idle(self) -> None:
        async with self._lock:
            self._abort_now()
            await self._release()

    async def _perform(self, instruction: StreamInstruction) -> None:
        try:
            self._value = await self._do(instruction)
        except asyncio.CancelledError:
            # The consumer's task was cancelled mid-instruction: the stream cannot pick
            # that instruction up again, so it ends as if aborted.
            self.abort()
            await self._release()
            raise
        except Exception as exc:  # the flow decides: resume, or end the stream with it
            self._thrown = exc

    async def _astep(self) -> StreamInstruction | None:
        try:
            return self._step()
        finally:
            if self._finished:
                await self._release()

    async def _do(self, instruction: StreamInstruction) -> Any:
        if isinstance(instruction, Start):
            if self._creating is not None:  # the create sent when the stream was made
                instruction.flow.close()
                return await asyncio.shield(self._creating)
            return await self._driver.run(instruction.flow)
        if isinstance(instruction, Ready):
            self._node = instruction.node
            return None
        if isinstance(instruction, Sleep):
            await race(asyncio.sleep(instruction.seconds), self._cancel)
            return None
        if isinstance(instruction, Open):
            return await self._open(instruction)
        if isinstance(instruction, Read):
            return await self._read()
        raise AssertionError(f"unexpected instruction {instruction!r}")

    async def _open(self, open: Open) -> None:
        await self._release()
        self._loop = asyncio.get_running_loop()
        http = self._driver.http
        request = self._request(http, open)
        try:
            response = await race(http.send(request, stream=True), self._cancel)
        except httpx.HTTPError as exc:
            raise self._failed_read(exc, open) from None
        if response.status_code >= 400:
            try:
                body = await response.aread()
            except httpx.HTTPError as exc:
                raise self._failed_read(exc, open) from None
            finally:
                await response.aclose()
            raise error_from_response(response.status_code, body, response.headers)
        self._response = response
        self._chunks = response.aiter_bytes()
        if self._cancel.cancelled:
            raise APIUserAbortError("the stream was aborted")

    async def _read(self) -> bytes:
        assert self._chunks is not None
        try:
            chunk = await anext(self._chunks, b"")
        except httpx.HTTPError as exc:
            raise self._failed_read(exc, self._last_open) from None
        if self._cancel.cancelled:
            raise APIUserAbortError("the stream was aborted")
        return chunk

    def _close_response(self) -> None:
        # Closing an async response needs an await: _release does it; here the socket
        # is only shut down so nothing stays connected.
        if self._response is not None:
            _shut_down(self._response)

    async def _release(self) -> None:
        response, self._response, self._chunks = self._response, None, None
        if response is not None:
            _shut_down(response)
            await response.aclose()
