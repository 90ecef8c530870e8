"""The two shells that perform a flow's instructions: one blocking, one ``asyncio``.

Everything else — retries, backoff, parsing, compositions — is in the flows
(:mod:`._flow`); a driver only sends one request, sleeps, honours a
:class:`~heron.client.Cancel`, maps transport failures to
:class:`~heron.client.APIConnectionError`, and starts a cold daemon.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable
from importlib import metadata
from typing import Any, Generic, TypeVar

import httpx

from ._errors import APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError
from ._flow import Flow, Send, Sleep
from ._options import Cancel
from ._resource import Async, M, Sync
from ._settings import Settings, start_daemon

__all__ = ["AsyncDriver", "Driver", "SyncDriver"]

T = TypeVar("T")

try:
    _VERSION = metadata.version("heron")
except metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
    _VERSION = "0"


class Driver(Generic[M]):
    """What both shells share: settings, request building and error mapping."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def build(self, http: httpx.Client | httpx.AsyncClient, send: Send) -> httpx.Request:
        """The ``httpx`` request for ``send``, with auth, default headers and its timeout."""
        headers = {"user-agent": f"heron-client/{_VERSION}", "accept": "application/json"}
        if self.settings.token:
            headers["authorization"] = f"Bearer {self.settings.token}"
        headers.update({k.lower(): v for k, v in self.settings.headers.items()})
        headers.update({k.lower(): v for k, v in send.options.headers.items()})
        query = {k: _query_value(v) for k, v in send.query.items() if v is not None}
        return http.build_request(
            send.method,
            self.settings.base_url + send.path,
            params=query,
            json=send.body,
            headers=headers,
            timeout=self.timeout(send),
        )

    def timeout(self, send: Send) -> float:
        """Seconds ``send`` may take: the call's, else the client's, at least its floor."""
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
        if isinstance(exc, httpx.ConnectError):
            hint = " (start it with `heron daemon start`)" if self.settings.socket_path else ""
            return APIConnectionError(
                f"cannot reach the Heron daemon at {address}: {exc}{hint}",
                code="daemon_unavailable",
            )
        return APIConnectionError(
            f"the connection to the Heron daemon at {address} failed during "
            f"{send.method} {send.path}: {exc or type(exc).__name__}"
        )

    def should_start(self, exc: httpx.HTTPError) -> bool:
        """Whether ``exc`` means a cold Unix socket this client may start a daemon behind."""
        return (
            self.settings.auto_start
            and self.settings.socket_path is not None
            and isinstance(exc, httpx.ConnectError)
        )


def _query_value(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def _step(flow: Flow[Any], value: Any, error: BaseException | None) -> Any:
    """Advance ``flow``; raises ``StopIteration`` when it returns."""
    if error is not None:
        return flow.throw(error)
    return flow.send(value)


class SyncDriver(Driver[Sync]):
    """Performs flows in the calling thread with an ``httpx.Client``."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.http = httpx.Client(
            transport=httpx.HTTPTransport(**settings.transport_kwargs()),  # type: ignore[arg-type]
            timeout=settings.timeout,
        )

    def run(self, flow: Flow[T]) -> T:
        """Drive ``flow`` to its result."""
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                instruction = _step(flow, value, error)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
            value, error = None, None
            try:
                if isinstance(instruction, Sleep):
                    self._sleep(instruction)
                else:
                    value = self.perform(instruction)
            except APIConnectionError as exc:
                error = exc  # the flow decides whether to retry

    def perform(self, send: Send) -> httpx.Response:
        """One attempt (starting a cold daemon first if need be)."""
        try:
            return self._send(send)
        except httpx.HTTPError as exc:
            if not self.should_start(exc):
                raise self.connection_error(exc, send) from None
        # Nothing was sent: the connection was refused, so even a POST may go again.
        start_daemon(self.settings)
        try:
            return self._send(send)
        except httpx.HTTPError as exc:
            raise self.connection_error(exc, send) from None

    def _send(self, send: Send) -> httpx.Response:
        cancel = send.options.cancel
        request = self.build(self.http, send)
        if cancel is None:
            return self.http.send(request)
        return _cancellable(lambda: self.http.send(request), cancel)

    def _sleep(self, sleep: Sleep) -> None:
        cancel = sleep.options.cancel
        if cancel is None:
            threading.Event().wait(sleep.seconds)
        elif cancel.wait(sleep.seconds):
            raise APIUserAbortError()

    def close(self) -> None:
        """Close the connections."""
        self.http.close()


def _cancellable(send: Any, cancel: Cancel) -> httpx.Response:
    """Run a blocking ``send()`` in a worker thread so ``cancel`` can interrupt the wait.

    A cancelled request is left to finish in its thread (nothing can stop a
    blocking read from outside); its response is closed there.
    """
    if cancel.cancelled:
        raise APIUserAbortError()
    done = threading.Event()
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["response"] = send()
        except BaseException as exc:
            box["error"] = exc
        finally:
            done.set()
            if cancel.cancelled and "response" in box:
                box["response"].close()

    remove = cancel.add_callback(done.set)
    thread = threading.Thread(target=work, name="heron-client-request", daemon=True)
    thread.start()
    try:
        done.wait()
    finally:
        remove()
    if "error" in box:
        raise box["error"]
    if "response" in box and not cancel.cancelled:
        return box["response"]  # type: ignore[no-any-return]
    raise APIUserAbortError()


class AsyncDriver(Driver[Async]):
    """Performs flows on the running event loop with an ``httpx.AsyncClient``."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.http = httpx.AsyncClient(
            transport=httpx.AsyncHTTPTransport(**settings.transport_kwargs()),  # type: ignore[arg-type]
            timeout=settings.timeout,
        )

    async def run(self, flow: Flow[T]) -> T:
        """Drive ``flow`` to its result."""
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                instruction = _step(flow, value, error)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
            value, error = None, None
            try:
                if isinstance(instruction, Sleep):
                    await race(asyncio.sleep(instruction.seconds), instruction.options.cancel)
                else:
                    value = await self.perform(instruction)
            except APIConnectionError as exc:
                error = exc

    async def perform(self, send: Send) -> httpx.Response:
        """One attempt (starting a cold daemon first if need be)."""
        try:
            return await race(self.http.send(self.build(self.http, send)), send.options.cancel)
        except httpx.HTTPError as exc:
            if not self.should_start(exc):
                raise self.connection_error(exc, send) from None
        await race(asyncio.to_thread(start_daemon, self.settings), send.options.cancel)
        try:
            return await race(self.http.send(self.build(self.http, send)), send.options.cancel)
        except httpx.HTTPError as exc:
            raise self.connection_error(exc, send) from None

    async def aclose(self) -> None:
        """Close the connections."""
        await self.http.aclose()


async def race(work: Awaitable[T], cancel: Cancel | None) -> T:
    """Await ``work``, or raise ``APIUserAbortError`` as soon as ``cancel`` fires."""
    if cancel is None:
        return await work
    task = asyncio.ensure_future(work)
    if cancel.cancelled:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, APIError, httpx.HTTPError):
            await task
        raise APIUserAbortError()
    fired, remove = cancel.future()
    waiting: set[asyncio.Future[Any]] = {task, fired}
    try:
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        task.cancel()
        raise
    finally:
        remove()
        fired.cancel()
    if task.done():
        return task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task
    raise APIUserAbortError()
