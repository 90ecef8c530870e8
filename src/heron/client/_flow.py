"""Requests as I/O-free flows, written once and driven by a sync and an async shell.

A *flow* is a generator that yields instructions — :class:`Send` (make one HTTP
attempt) or :class:`Sleep` — and receives each one's result (the response, or
the exception thrown into it). Retries, backoff, long polls and compositions
such as ``create_and_wait`` are flows, so the two clients cannot drift apart:
:mod:`._drivers` only knows how to perform one instruction.
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias, TypeVar

import httpx
from pydantic import TypeAdapter

from ._errors import APIConnectionError, error_from_response
from ._options import RequestOptions

__all__ = [
    "RETRIED_METHODS",
    "Flow",
    "Send",
    "Sleep",
    "parse_as",
    "request_flow",
    "retry_delay",
]

T = TypeVar("T")

RETRIED_METHODS = frozenset({"GET", "HEAD", "DELETE"})
"""Methods retried after a connection error, 429 or 5xx: they change nothing twice."""

_INITIAL_DELAY = 0.5
_MAX_DELAY = 8.0
_MAX_RETRY_AFTER = 60.0


@dataclass(frozen=True, kw_only=True, slots=True)
class Send:
    """Make one HTTP attempt; the driver answers with the response (body read)."""

    method: str
    """HTTP method, upper case."""
    path: str
    """Path below the daemon's address, starting with ``/``."""
    query: Mapping[str, Any] = field(default_factory=dict)
    """Query parameters (``None`` values are left out)."""
    body: Any = None
    """A JSON-serialisable body, or ``None`` for none."""
    options: RequestOptions = field(default_factory=RequestOptions)
    """Headers, timeout and cancellation of the call."""
    min_timeout: float | None = None
    """A floor on the timeout: a long poll must outlast its own ``wait``."""


@dataclass(frozen=True, slots=True)
class Sleep:
    """Wait ``seconds`` (cut short, with ``APIUserAbortError``, by a cancellation)."""

    seconds: float
    """How long."""
    options: RequestOptions = field(default_factory=RequestOptions)
    """The call's options (for its cancellation)."""


Instruction: TypeAlias = Send | Sleep
Flow: TypeAlias = Generator[Instruction, Any, T]
"""A generator of instructions returning ``T``."""


def retry_delay(attempt: int, response: httpx.Response | None) -> float:
    """Seconds to wait before retry number ``attempt + 1``.

    ``Retry-After`` (seconds or an HTTP date) wins when the daemon sends one
    (capped at a minute); otherwise exponential backoff from 0.5 s, capped at
    8 s, with up to 25 % jitter so many clients do not retry in step.
    """
    if response is not None:
        after = _retry_after(response.headers.get("retry-after"))
        if after is not None:
            return after
    delay: float = min(_INITIAL_DELAY * 2.0**attempt, _MAX_DELAY)
    return delay * (1 - 0.25 * random.random())


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value.strip() else None
        if parsed is None or parsed.tzinfo is None:
            return None
        seconds = parsed.timestamp() - time.time()
    if math.isnan(seconds):
        return None
    return min(max(seconds, 0.0), _MAX_RETRY_AFTER)


def request_flow(send: Send, *, max_retries: int) -> Flow[httpx.Response]:
    """Send one request, retrying a ``GET``/``HEAD``/``DELETE`` when that is safe.

    ``max_retries`` is the client's default (the call's ``options`` may override it).
    Returns the successful response; raises the :class:`APIError` for an error
    answer, or the connection error once retries are spent.
    """
    options = send.options
    retries = options.max_retries if options.max_retries is not None else max_retries
    if send.method not in RETRIED_METHODS:
        retries = 0
    attempt = 0
    while True:
        try:
            response: httpx.Response = yield send
        except APIConnectionError:
            if attempt >= retries:
                raise
            yield Sleep(retry_delay(attempt, None), options)
            attempt += 1
            continue
        status = response.status_code
        if status < 400:
            return response
        if attempt < retries and (status == 429 or status >= 500):
            yield Sleep(retry_delay(attempt, response), options)
            attempt += 1
            continue
        raise error_from_response(status, response.content, response.headers)


_adapters: dict[Any, TypeAdapter[Any]] = {}


def parse_as(kind: Any, response: httpx.Response) -> Any:
    """The response's JSON body validated as ``kind`` (a model class or a type such as
    ``list[Node]``); ``None`` for an empty body when ``kind`` is ``None``."""
    if kind is None or (kind is Any and not response.content):
        return None
    adapter = _adapters.get(kind)
    if adapter is None:
        adapter = _adapters[kind] = TypeAdapter(kind)
    return adapter.validate_json(response.content)
