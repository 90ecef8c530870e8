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

from pydantic import TypeAdapter, ValidationError

from ._errors import APIConnectionError, APIError, error_from_response
from ._httpx import httpx
from ._options import RequestOptions

__all__ = [
    "MAX_RETRY_AFTER",
    "RETRIED_METHODS",
    "Flow",
    "Send",
    "Sleep",
    "invalid_response",
    "parse_as",
    "request_flow",
    "retry_after",
    "retry_delay",
]

T = TypeVar("T")

RETRIED_METHODS = frozenset({"GET", "HEAD", "DELETE"})
"""Methods retried after a connection error, 429 or 5xx: they change nothing twice."""

_INITIAL_DELAY = 0.5
_MAX_DELAY = 8.0
MAX_RETRY_AFTER = 60.0
"""The longest ``Retry-After`` (seconds) a retry waits out."""


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


def retry_delay(attempt: int, response: httpx.Response | None) -> float | None:
    """Seconds to wait before retry number ``attempt + 1``; ``None``: do not retry.

    ``Retry-After`` (seconds or an HTTP date) wins when the daemon sends one; one
    asking for more than a minute is not waited out — the error goes to the caller,
    whose ``headers`` say when to come back. Otherwise exponential backoff from
    0.5 s, capped at 8 s, with up to 25 % jitter so many clients do not retry in step.
    """
    if response is not None:
        after = retry_after(response.headers.get("retry-after"))
        if after is not None:
            return after if after <= MAX_RETRY_AFTER else None
    delay: float = min(_INITIAL_DELAY * 2.0**attempt, _MAX_DELAY)
    return delay * (1 - 0.25 * random.random())


def retry_after(value: str | None) -> float | None:
    """A ``Retry-After`` header as seconds from now (0 for a date past); ``None`` if
    absent or unreadable."""
    if value is None or not value.strip():
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if parsed.tzinfo is None:  # RFC 9110 dates are GMT; a naive one is not one
            return None
        seconds = parsed.timestamp() - time.time()
    if math.isnan(seconds):
        return None
    return max(seconds, 0.0)


def request_flow(send: Send, *, max_retries: int) -> Flow[httpx.Response]:
    """Send one request, retrying a ``GET``/``HEAD``/``DELETE`` when that is safe.

    ``max_retries`` is the client's default (the call's ``options`` may override it).
    Returns the successful (2xx) response; raises the :class:`APIError` for any
    other answer, or the connection error once retries are spent. ``POST``/``PATCH``
    are sent once: a create whose answer was lost may have spawned already.
    """
    options = send.options
    retries = options.max_retries if options.max_retries is not None else max_retries
    if send.method not in RETRIED_METHODS:
        retries = 0
    attempt = 0
    while True:
        response: httpx.Response | None = None
        try:
            response = yield send
        except APIConnectionError as exc:
            # No daemon behind the socket (and none could be started): waiting won't help.
            if attempt >= retries or exc.code == "daemon_unavailable":
                raise
        if response is not None:
            status = response.status_code
            if 200 <= status < 300:
                return response
            if attempt >= retries or not (status == 429 or status >= 500):
                raise error_from_response(status, response.content, response.headers)
        delay = retry_delay(attempt, response)
        if delay is None:
            assert response is not None
            raise error_from_response(response.status_code, response.content, response.headers)
        yield Sleep(delay, options)
        attempt += 1


_adapters: dict[Any, TypeAdapter[Any]] = {}


def parse_as(kind: Any, response: httpx.Response) -> Any:
    """The response's JSON body validated as ``kind`` (a model class or a type such as
    ``list[Node]``); ``None`` when ``kind`` is ``None``.

    ``kind`` ``Any`` (what ``client.request`` asks for) takes whatever came: the decoded
    JSON, ``None`` for an empty body, the text of a body that is not JSON.
    """
    if kind is None or (kind is Any and not response.content):
        return None
    if kind is Any and "json" not in response.headers.get("content-type", "json"):
        return response.text
    adapter = _adapters.get(kind)
    if adapter is None:
        adapter = _adapters[kind] = TypeAdapter(kind)
    try:
        return adapter.validate_json(response.content)
    except ValidationError as exc:
        raise invalid_response(kind, response, exc) from exc


def invalid_response(kind: Any, response: httpx.Response, exc: ValidationError) -> APIError:
    """The :class:`APIError` (``invalid_response``) for a success whose body is not a
    ``kind``: a proxy's page, another server, a daemon of another version."""
    try:
        what = f"{response.request.method} {response.request.url.path}"
    except RuntimeError:  # a response built without its request
        what = "the request"
    name = getattr(kind, "__name__", None) or repr(kind)
    problem = exc.errors(include_url=False)[0]
    where = ".".join(str(part) for part in problem["loc"]) or "the body"
    return APIError(
        response.status_code,
        "invalid_response",
        f"{what} answered {response.status_code} with a body that is not a valid {name} "
        f"({where}: {problem['msg']}); is this a Heron daemon of this version?",
        exc.errors(include_url=False),
        response.headers,
    )
