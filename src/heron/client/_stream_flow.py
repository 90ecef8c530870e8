"""A node stream as an I/O-free flow: create or retrieve, open, read, resume.

The flow yields instructions the sync and async stream shells perform
(:mod:`._stream`), so reconnection, resuming from the last sequence number,
de-duplication and error handling are written once.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, TypeAlias, get_args

from pydantic import ValidationError

from .. import api
from ._errors import APIConnectionError, APIError, InternalServerError, RateLimitError
from ._flow import Flow, Sleep
from ._options import RequestOptions
from ._sse import ServerSentEvent, SSEDecoder

__all__ = [
    "EVENT_TYPES",
    "Emit",
    "Open",
    "Read",
    "Ready",
    "Reconnect",
    "Start",
    "StreamFlow",
    "stream_flow",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class Reconnect:
    """How a stream resumes after a dropped connection or ``stream_dropped``.

    The budget counts consecutive failed attempts: it starts over whenever a new
    event arrives. The defaults ride out a daemon restart (about a minute of
    attempts, at most 2 s apart).
    """

    attempts: int = 30
    """Consecutive reconnections before the stream ends with the last error (0: none)."""
    initial_delay: float = 0.2
    """Seconds before the first reconnection; doubled for each further one."""
    max_delay: float = 2.0
    """The longest wait between two attempts."""

    def __post_init__(self) -> None:
        if isinstance(self.attempts, bool) or not isinstance(self.attempts, int):
            raise TypeError(f"attempts must be an int, got {self.attempts!r}")
        if self.attempts < 0:
            raise ValueError(f"attempts must be 0 or more, got {self.attempts}")
        if not 0 <= self.initial_delay <= self.max_delay:
            raise ValueError(
                "delays must satisfy 0 <= initial_delay <= max_delay, got "
                f"{self.initial_delay!r} and {self.max_delay!r}"
            )

    def delay(self, attempt: int) -> float:
        """Seconds to wait before reconnection number ``attempt`` (from 0)."""
        return float(min(self.initial_delay * 2.0**attempt, self.max_delay))


@dataclass(frozen=True, slots=True)
class Start:
    """Run a request flow (the create or the retrieve); answered with its result."""

    flow: Flow[api.Node]
    """The flow."""


@dataclass(frozen=True, slots=True)
class Ready:
    """The node is known (``stream.node`` resolves); answered with nothing."""

    node: api.Node
    """The created or retrieved node."""


@dataclass(frozen=True, slots=True)
class Open:
    """Open ``GET /v1/nodes/{id}/events`` (closing any previous response).

    Answered with nothing once a ``2xx`` arrived; an error answer raises its
    :class:`APIError`, a transport failure an :class:`APIConnectionError`.
    """

    node_id: str
    """The node."""
    after: int | None
    """The resume cursor (``None``: join as the daemon sees fit)."""


@dataclass(frozen=True, slots=True)
class Read:
    """Read the next bytes of the open response; answered with them (``b""`` at its end)."""


@dataclass(frozen=True, slots=True)
class Emit:
    """Hand an event to the consumer (listeners, then the iterator)."""

    event: api.NodeEvent
    """The event."""


StreamInstruction: TypeAlias = Start | Ready | Open | Read | Emit | Sleep
StreamFlow: TypeAlias = Generator[StreamInstruction, Any, api.NodeOutcome]
"""A stream's flow: returns the outcome of ``node.settled``."""

EVENT_TYPES: frozenset[str] = frozenset(
    get_args(model.model_fields["type"].annotation)[0]
    for model in get_args(get_args(api.NodeEvent)[0])
)
"""Every event type a stream yields (``error`` included)."""

_RETRIED = (APIConnectionError, InternalServerError, RateLimitError)
"""Failures to open a stream worth another attempt: no daemon (yet), or a passing one."""


class _Dropped(Exception):
    """The current connection ended before ``node.settled``; ``error`` says why."""

    def __init__(self, error: APIError) -> None:
        super().__init__(error.message)
        self.error = error


def stream_flow(
    start: Flow[api.Node],
    *,
    after: int | None,
    reconnect: Reconnect,
    options: RequestOptions,
) -> StreamFlow:
    """Create or retrieve the node with ``start``, then stream its events to ``node.settled``.

    A dropped connection, a response that ends early or a ``stream_dropped`` event
    reconnects with ``after=<last sequence number>`` (backoff, ``reconnect``'s budget);
    numbered events already emitted are never emitted again. ``stream_gap`` is emitted
    and the stream goes on; ``stream_error`` or a spent budget raises the
    :class:`APIError` (with the event's code).
    """
    node: api.Node = yield Start(start)
    yield Ready(node)
    seen: int | None = None  # the highest number emitted (a future `after` replays lower ones)
    failures = 0
    while True:
        progressed = False
        # Repeats are only possible across connections: within one, numbers may go down
        # (a mid-run joiner gets the reports, then the earlier completed messages).
        resumed = seen
        try:
            yield Open(node.node_id, seen if seen is not None else after)
            decoder = SSEDecoder()
            while True:
                chunk: bytes = yield Read()
                if not chunk:
                    raise _Dropped(
                        APIConnectionError(
                            f"the event stream of node {node.node_id} ended before node.settled"
                        )
                    )
                for record in decoder.feed(chunk):
                    event = _parse(record)
                    if event is None:
                        continue
                    if isinstance(event, api.StreamError):
                        _check_error(event)  # raises unless it is a gap
                        yield Emit(event)
                        continue
                    if record.id is not None:
                        number = _number(record, node.node_id)
                        if resumed is not None and number <= resumed:
                            continue  # already emitted before a reconnect
                        seen = number if seen is None else max(seen, number)
                        progressed = True
                    yield Emit(event)
                    if isinstance(event, api.NodeSettled):
                        return event.outcome
        except _RETRIED as exc:
            error: APIError = exc
        except _Dropped as dropped:
            error = dropped.error
        if progressed:
            failures = 0
        if failures >= reconnect.attempts:
            raise error
        yield Sleep(reconnect.delay(failures), options)
        failures += 1


def _parse(record: ServerSentEvent) -> api.NodeEvent | None:
    """The typed event; ``None`` for a type this client does not know (a newer daemon)."""
    if record.event not in EVENT_TYPES:
        return None
    try:
        return api.parse_event(record.event, record.data)
    except (ValueError, ValidationError) as exc:
        raise APIError(
            0,
            "invalid_event",
            f"the daemon sent a {record.event!r} event this client cannot read: {exc}",
        ) from None


def _number(record: ServerSentEvent, node_id: str) -> int:
    assert record.id is not None
    try:
        return int(record.id)
    except ValueError:
        raise APIError(
            0, "invalid_event", f"the event stream of node {node_id} sent the id {record.id!r}"
        ) from None


def _check_error(event: api.StreamError) -> None:
    """Raise for a terminal stream error: ``_Dropped`` (resume) or the ``APIError``."""
    body = event.error
    details = body.details.model_dump(mode="json") if body.details is not None else None
    if body.code == "stream_gap":
        return
    error = APIError(0, body.code, body.message, details)
    if body.code == "stream_dropped":
        raise _Dropped(error)
    raise error
