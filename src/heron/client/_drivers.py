"""The two shells that perform a flow's instructions: one blocking, one ``asyncio``.

Everything else — retries, backoff, parsing, compositions — is in the flows
(:mod:`._flow`); a driver only sends one request, sleeps, honours a
:class:`~heron.client.Cancel`, maps transport failures to
:class:`~heron.client.APIConnectionError`, and starts a cold daemon.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import threading
import weakref
from collections.abc import Awaitable, Iterator
from typing import Any, Generic, TypeVar

from .._core.closing import Closing
from .._core.version import __version__
from ._autostart import start_daemon
from ._errors import APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError
from ._flow import Flow, Instruction, Send, Sleep
from ._httpx import httpx
from ._options import Cancel
from ._resource import Async, M, Sync
from ._settings import Settings
from ._transport import SocketBackend, async_transport, is_https, sync_transport

__all__ = ["AsyncDriver", "Driver", "SyncDriver", "race"]

T = TypeVar("T")


_ABANDONED_JOIN = 5.0
"""Seconds a Ctrl-C'd request's worker gets to notice its socket was shut down."""


class Driver(Generic[M]):
    """What both shells share: settings, request building and error mapping."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    @property
    def uds(self) -> str | None:
        """The Unix socket path for the transport, or ``None`` over TCP."""
        path = self.settings.socket_path
        return None if path is None else os.fspath(path)

    def build(self, http: httpx.Client | httpx.AsyncClient, send: Send) -> httpx.Request:
        """The ``httpx`` request for ``send``: auth, default headers, its timeout.

        Headers are lower-cased and merged client defaults < client ``headers`` <
        the call's ``options.headers``, so a streaming ``GET`` passes
        ``{"accept": "text/event-stream"}`` to replace the JSON ``accept``.
        """
        headers = {"user-agent": f"heron-client/{__version__}", "accept": "application/json"}
        if self.settings.token:
            headers["authorization"] = f"Bearer {self.settings.token}"
        headers.update({k.lower(): v for k, v in self.settings.headers.items()})
        headers.update({k.lower(): v for k, v in send.options.headers.items()})
        query = {k: _query_value(v) for k, v in send.query.items() if v is not None}
        return http.build_request(
            send.method,
            self.settings.base_url + send.path,
            params=query or None,  # {} would wipe a query written into the path
            json=send.body,
            headers=headers,
            timeout=self.timeout(send),
        )

    def timeout(self, send: Send) -> float:
        """Seconds each step of ``send`` may wait (connect, write, each read): the call's,
        else the client's, at least its floor."""
        seconds = send.options.timeout or self.settings.timeout
        if send.min_timeout is not None:
            seconds = max(seconds, send.min_timeout)
        return seconds

    def connection_error(self, exc: httpx.HTTPError, send: Send) -> APIConnectionError:
        """The :class:`APIConnectionError` for a transport failure of ``send``."""
        address = self.settings.address
        if isinstance(exc, httpx.TimeoutException):
            return APIConnectionTimeoutError(
                f"{send.method} {send.path} got no answer from the Heron daemon at {address} "
                f"within {self.timeout(send):g} s"
            )
        if isinstance(exc, httpx.ConnectError) and self.settings.socket_path is not None:
            return APIConnectionError(
                f"no Heron daemon answers at {address}: {exc} (start it with "
                "`heron daemon start`, or let the client do it: auto_start=True)",
                code="daemon_unavailable",
            )
        if isinstance(exc, httpx.ConnectError):  # a TCP listener may be restarting: retried
            return APIConnectionError(f"cannot connect to the Heron daemon at {address}: {exc}")
        return APIConnectionError(
            f"the connection to the Heron daemon at {address} failed during "
            f"{send.method} {send.path}: {exc or type(exc).__name__}"
        )

    def should_start(self, exc: httpx.HTTPError) -> bool:
        """Whether ``exc`` means a cold Unix socket this client may start a daemon behind.

        Only a failed *connect* counts: nothing was sent, so even a ``POST`` may go again.
        """
        return (
            self.settings.auto_start
            and self.settings.socket_path is not None
            and isinstance(exc, httpx.ConnectError)
        )


def _query_value(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


class _Steps(Closing, Generic[T]):
    """What both drivers' loops share: feeding ``flow`` each instruction's outcome.

    Iterating gives the flow's instructions; before the next one, the flow is sent
    :attr:`value` or thrown :attr:`error` (whichever the driver set), and when it
    returns, its value is :attr:`result`. Leaving the ``with`` block closes the flow,
    so a Ctrl-C or a cancelled task between steps still runs its cleanup.
    """

    def __init__(self, flow: Flow[T]) -> None:
        self.flow = flow
        self.value: Any = None
        self.error: BaseException | None = None
        self.result: T

    def __iter__(self) -> Iterator[Instruction]:
        return self

    def __next__(self) -> Instruction:
        value, error = self.value, self.error
        self.value, self.error = None, None
        try:
            return self.flow.throw(error) if error is not None else self.flow.send(value)
        except StopIteration as stop:
            self.result = stop.value
            raise StopIteration from None

    def close(self) -> None:
        """Close the flow (its cleanup runs)."""
        self.flow.close()


def refuse_in_event_loop() -> None:
    """``RuntimeError`` if this thread runs an event loop: a blocking call would freeze it."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError(
        "a blocking Heron call cannot run inside a running event loop: it would stop every "
        "other task until it returns; use AsyncHeron and await it, or run the blocking "
        "call in a thread (await asyncio.to_thread(...))"
    )


class SyncDriver(Driver[Sync]):
    """Performs flows in the calling thread with an ``httpx.Client``."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.backend = SocketBackend()
        self.streams: weakref.WeakSet[Any] = weakref.WeakSet()
        """Node streams with an open response (``NodeStream``), aborted by :meth:`close`."""
        https = is_https(settings.base_url)
        self.http = httpx.Client(
            transport=sync_transport(self.backend, uds=self.uds, https=https),
            timeout=settings.timeout,
        )

    def run(self, flow: Flow[T]) -> T:
        """Drive ``flow`` to its result; every :class:`APIError` goes back into the flow."""
        refuse_in_event_loop()
        with _Steps(flow) as steps:
            for instruction in steps:
                try:
                    if isinstance(instruction, Sleep):
                        self._sleep(instruction)
                    else:
                        steps.value = self.perform(instruction)
                except APIError as exc:
                    steps.error = exc  # the flow decides: retry, or let it out
            return steps.result

    def perform(self, send: Send) -> httpx.Response:
        """One attempt (starting a cold daemon first if need be)."""
        try:
            return self._send(send)
        except httpx.HTTPError as exc:
            if not self.should_start(exc):
                raise self.connection_error(exc, send) from None
        start_daemon(self.settings)
        try:
            return self._send(send)
        except httpx.HTTPError as exc:
            raise self.connection_error(exc, send) from None

    def _send(self, send: Send) -> httpx.Response:
        request = self.build(self.http, send)
        cancel = send.options.cancel
        if cancel is None:
            return self.http.send(request)
        return self.send_cancellable(request, cancel)

    def send_cancellable(
        self, request: httpx.Request, cancel: Cancel, *, stream: bool = False
    ) -> httpx.Response:
        """Send ``request`` in a worker thread so ``cancel`` (or Ctrl-C) can stop it
        (``APIUserAbortError``); ``stream``: the body is left to read, as ``httpx``'s.

        Whoever comes first decides: the worker's answer, or the cancellation — then
        the worker's socket is shut down, so it does not linger until its timeout,
        and a response that arrives anyway is closed by the worker.
        """
        refuse_in_event_loop()
        if cancel.cancelled:
            raise APIUserAbortError()
        lock = threading.Lock()
        done = threading.Event()
        key = object()
        box: dict[str, Any] = {}

        def work() -> None:
            try:
                self.backend.worker(key)
                result: Any = self.http.send(request, stream=stream)
            except BaseException as exc:
                result = exc
            with lock:
                box["result"] = result
                abandoned = box.get("abandoned", False)
            self.backend.release(key)  # after the result: an abort now is a no-op
            done.set()
            if abandoned and isinstance(result, httpx.Response):
                result.close()

        thread = threading.Thread(target=work, name="heron-client-request", daemon=True)
        remove = cancel.add_callback(done.set)
        try:
            thread.start()  # inside: a Ctrl-C may land while the worker already sends
            done.wait()
        except BaseException:  # Ctrl-C: leave no request half-sent behind
            # (RuntimeError: the interrupt came before the thread had started.)
            if self._abandon(key, lock, box):
                with contextlib.suppress(RuntimeError):
                    thread.join(_ABANDONED_JOIN)
            raise
        finally:
            remove()
        if self._abandon(key, lock, box):
            raise APIUserAbortError()
        result = box["result"]
        if isinstance(result, BaseException):
            raise result
        return result  # type: ignore[no-any-return]

    def _abandon(self, key: object, lock: threading.Lock, box: dict[str, Any]) -> bool:
        """Abort request ``key`` unless its worker already finished; whether it was."""
        with lock:
            if "result" in box:
                return False
            box["abandoned"] = True
        self.backend.abort(key)
        return True

    def _sleep(self, sleep: Sleep) -> None:
        cancel = sleep.options.cancel
        if cancel is None:
            threading.Event().wait(sleep.seconds)
        elif cancel.wait(sleep.seconds):
            raise APIUserAbortError()

    def close(self) -> None:
        """Close the connections; open streams end, a read blocked in another thread too
        (closing a socket does not wake a read waiting on it: shutting it down does)."""
        for stream in list(self.streams):
            stream.abort()
        self.http.close()


class AsyncDriver(Driver[Async]):
    """Performs flows on the running event loop with an ``httpx.AsyncClient``."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.http = httpx.AsyncClient(
            transport=async_transport(uds=self.uds, https=is_https(settings.base_url)),
            timeout=settings.timeout,
        )

    async def run(self, flow: Flow[T]) -> T:
        """Drive ``flow`` to its result; every :class:`APIError` goes back into the flow."""
        with _Steps(flow) as steps:
            for instruction in steps:
                try:
                    if isinstance(instruction, Sleep):
                        await race(asyncio.sleep(instruction.seconds), instruction.options.cancel)
                    else:
                        steps.value = await self.perform(instruction)
                except APIError as exc:
                    steps.error = exc
            return steps.result

    async def perform(self, send: Send) -> httpx.Response:
        """One attempt (starting a cold daemon first if need be)."""
        cancel = send.options.cancel
        try:
            return await race(self.http.send(self.build(self.http, send)), cancel)
        except httpx.HTTPError as exc:
            if not self.should_start(exc):
                raise self.connection_error(exc, send) from None
        await race(asyncio.to_thread(start_daemon, self.settings), cancel)
        try:
            return await race(self.http.send(self.build(self.http, send)), cancel)
        except httpx.HTTPError as exc:
            raise self.connection_error(exc, send) from None

    async def aclose(self) -> None:
        """Close the connections."""
        await self.http.aclose()


async def race(work: Awaitable[T], cancel: Cancel | None) -> T:
    """Await ``work``, or raise ``APIUserAbortError`` as soon as ``cancel`` fires.

    The losing side is cancelled *and awaited*, so httpx closes the connection of an
    abandoned request before this returns; a cancellation of the caller's own task
    propagates as ``CancelledError`` (after the same cleanup), never converted.
    """
    if cancel is None:
        return await work
    if cancel.cancelled:
        if inspect.iscoroutine(work):
            work.close()  # never started: nothing to clean up, and no "never awaited" warning
        raise APIUserAbortError()
    task: asyncio.Future[T] = asyncio.ensure_future(work)
    fired, remove = cancel.future()
    either: set[asyncio.Future[Any]] = {task, fired}
    try:
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        await _settle(task)
        raise
    finally:
        remove()
        fired.cancel()
    if task.done():
        return task.result()
    await _settle(task)
    raise APIUserAbortError()


async def _settle(task: asyncio.Future[Any]) -> None:
    """Cancel ``task``, wait for its cleanup, and drop whatever it ended with."""
    task.cancel()
    await asyncio.wait({task})
    if task.cancelled() or task.exception() is not None:
        return
    result = task.result()
    if isinstance(result, httpx.Response):
        await result.aclose()  # it won after all, too late: close it
