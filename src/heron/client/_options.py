"""Per-request options, and cancelling a request from outside."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ._settings import check_headers, check_retries, check_timeout

__all__ = ["Cancel", "RequestOptions"]


class Cancel:
    """A cancellation a caller passes to requests and waits (``RequestOptions(cancel=...)``).

    Call :meth:`cancel` from any thread (or a signal handler's loop callback): requests
    carrying it raise :class:`~heron.client.APIUserAbortError` — an async request at
    once, a sync one at once too (it runs in a worker thread while a cancellation can
    reach it). Cancelling stops *the client waiting*, never the node: use
    ``client.nodes.cancel(id)`` for that. One ``Cancel`` may serve many requests;
    once cancelled it stays cancelled.

    Example::

        cancel = Cancel()
        threading.Timer(30, cancel.cancel).start()
        outcome = client.nodes.wait_for_outcome(node_id, options=RequestOptions(cancel=cancel))
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` was called."""
        return self._event.is_set()

    def cancel(self) -> None:
        """Cancel every request carrying this token (idempotent, thread-safe)."""
        with self._lock:
            if self._event.is_set():
                return
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until cancelled or ``timeout`` seconds pass; whether it was cancelled."""
        return self._event.wait(timeout)

    def add_callback(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Run ``callback`` on cancellation (at once if already cancelled); returns a remover."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return lambda: self._remove(callback)
        callback()
        return lambda: None

    def _remove(self, callback: Callable[[], None]) -> None:
        with self._lock, contextlib.suppress(ValueError):
            self._callbacks.remove(callback)

    def future(self) -> tuple[asyncio.Future[None], Callable[[], None]]:
        """An ``asyncio`` future (of the running loop) done on cancellation, and its remover."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()

        def fire() -> None:
            if not done.done():
                done.set_result(None)

        def wake() -> None:
            # The request may have ended and its loop closed since it registered this.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(fire)

        remove = self.add_callback(wake)
        return done, remove


@dataclass(frozen=True, kw_only=True, slots=True)
class RequestOptions:
    """Options for one call; every method takes them as ``options=``.

    Fields left ``None`` take the client's defaults.
    """

    headers: Mapping[str, str] = field(default_factory=dict)
    """Extra headers for the request (they override the client's own)."""
    timeout: float | None = None
    """Seconds each step of the request may wait — connecting, sending, and each wait
    for more of the answer — before ``APIConnectionTimeoutError`` (default: the client's
    ``timeout``). It bounds a stall, not the whole call: an answer that keeps arriving
    may take longer, and each retry waits afresh. For a deadline on the whole call,
    fire a :class:`Cancel` from a timer."""
    max_retries: int | None = None
    """Retries of a ``GET``/``HEAD``/``DELETE`` after a connection error, 429 or 5xx
    (default: the client's ``max_retries``). ``POST``/``PATCH`` are never retried."""
    cancel: Cancel | None = None
    """A cancellation that aborts the call (it raises ``APIUserAbortError``)."""

    def __post_init__(self) -> None:
        if self.timeout is not None:
            check_timeout(self.timeout)
        if self.max_retries is not None:
            check_retries(self.max_retries)
        check_headers(self.headers)
        if self.cancel is not None and not isinstance(self.cancel, Cancel):
            kind = type(self.cancel).__name__
            raise TypeError(f"cancel must be a heron.client.Cancel, not {kind}")
