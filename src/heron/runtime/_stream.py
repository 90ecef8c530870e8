"""The per-node stream hub: a bounded replay ring and the node's live subscribers.

Every published event passes through its node's :class:`Hub` once: it is
encoded as an SSE record (once, shared by every reader), kept in the ring (the
last ``RING_EVENTS`` events or ``RING_BYTES`` bytes, whichever binds first) and
appended to each subscriber's bounded buffer. A subscriber whose buffer is full
is cut off on the spot (it gets ``stream_dropped``); nobody ever waits for it.

The hub also follows the current run so a client joining mid-run can be seeded:
the completed assistant messages of the run and the partial text after them.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "RING_BYTES",
    "RING_EVENTS",
    "Hub",
    "Record",
    "Subscription",
    "error_record",
    "keepalive_record",
]

RING_EVENTS = 512
"""At most this many events are kept for replay per node."""

RING_BYTES = 256 * 1024
"""At most this many bytes of encoded events are kept for replay per node."""


@dataclass(frozen=True, slots=True)
class Record:
    """One event as the stream writes it."""

    sequence_number: int
    """The event's number in its node's sequence."""
    type: str
    """The event type (the SSE ``event:`` field)."""
    data: dict[str, Any]
    """The full ``data`` object (``node_id`` and ``sequence_number`` included)."""
    wire: bytes
    """The encoded SSE record (``id:``, ``event:``, ``data:`` and the blank line)."""


def encode(node_id: str, sequence_number: int, type: str, data: dict[str, Any]) -> Record:
    """The record of an event: ``node_id`` and ``sequence_number`` come first in ``data``."""
    full = {"node_id": node_id, "sequence_number": sequence_number, **data}
    text = json.dumps(full, separators=(",", ":"), ensure_ascii=False, default=str)
    wire = f"id: {sequence_number}\nevent: {type}\ndata: {text}\n\n".encode()
    return Record(sequence_number, type, full, wire)


def error_record(code: str, message: str, details: dict[str, Any] | None = None) -> bytes:
    """An ``error`` event (no id: it is not part of the node's sequence)."""
    error: dict[str, Any] = {"code": code, "message": message}
    if details is not None:
        error["details"] = details
    text = json.dumps({"error": error}, separators=(",", ":"))
    return f"event: error\ndata: {text}\n\n".encode()


def keepalive_record() -> bytes:
    """The comment line that keeps idle connections (and proxies) from timing out."""
    return b": keepalive\n\n"


@dataclass(eq=False, slots=True)
class Subscription:
    """One reader's buffer of live records; filled by the hub, drained by the route."""

    limit: int
    """How many records may wait in the buffer before the reader is dropped."""
    buffer: deque[Record] = field(default_factory=deque)
    """Records not yet written to the reader."""
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when records arrive (or the reader is dropped)."""
    dropped: bool = False
    """The buffer overflowed: the reader was cut off and gets no more records."""

    def take(self) -> list[Record]:
        """Every buffered record, oldest first (the buffer is emptied)."""
        records = list(self.buffer)
        self.buffer.clear()
        self.wake.clear()
        return records


class Hub:
    """One node's ring, run snapshot and subscribers; see the module docstring."""

    def __init__(self, node_id: str, floor: int, *, events: int, size: int) -> None:
        self.node_id = node_id
        self.floor = floor
        """Every event numbered above this, published in this process, is in :attr:`ring`
        (older ones were evicted, or came before this hub existed)."""
        self.last = floor
        """The highest number published through this hub (``floor`` before any)."""
        self.ring: deque[Record] = deque()
        """The retained records, oldest first."""
        self._ring_bytes = 0
        self._max_events = events
        self._max_bytes = size
        self._subscribers: list[Subscription] = []
        # The current run, for seeding a client that joins it without a cursor.
        self.run_known = False
        """Whether this hub saw the current run start (else its snapshot is in the log)."""
        self.done: list[Record] = []
        """The current run's ``output_text.done`` records, oldest first."""
        self.partial = ""
        """The text streamed since the last completed message."""
        self.partial_seq = 0
        """The number of the last delta in :attr:`partial`."""
        self.settled = False
        """The last status event published through this hub was ``node.settled``."""

    @property
    def subscribers(self) -> int:
        """How many readers are attached."""
        return len(self._subscribers)

    def add(self, record: Record) -> None:
        """Retain ``record``, follow the run, hand it to every subscriber (never blocks)."""
        self.last = record.sequence_number
        self._follow(record)
        size = len(record.wire)
        if size > self._max_bytes:
            # Too big to replay: live readers get it, but the ring restarts after it
            # (a cursor before it gets stream_gap; a cursor on it resumes after it).
            self.ring.clear()
            self._ring_bytes = 0
            self.floor = record.sequence_number
        else:
            self.ring.append(record)
            self._ring_bytes += size
            while len(self.ring) > self._max_events or self._ring_bytes > self._max_bytes:
                evicted = self.ring.popleft()
                self._ring_bytes -= len(evicted.wire)
                self.floor = evicted.sequence_number
        for sub in tuple(self._subscribers):
            if len(sub.buffer) >= sub.limit:
                sub.dropped = True
                self._subscribers.remove(sub)
            else:
                sub.buffer.append(record)
            sub.wake.set()

    def _follow(self, record: Record) -> None:
        kind = record.type
        self.settled = kind == "node.settled" or (self.settled and kind != "node.status.changed")
        if kind == "node.status.changed" and record.data.get("status") == "running":
            self.run_known, self.done, self.partial = True, [], ""
        elif kind == "node.output_text.delta":
            self.partial += str(record.data.get("delta", ""))
            self.partial_seq = record.sequence_number
        elif kind in ("node.output_text.done", "node.turn.started"):
            if kind == "node.output_text.done":
                self.done.append(record)
            self.partial = ""

    def subscribe(self, limit: int) -> Subscription:
        """Attach a reader with a buffer of ``limit`` records."""
        sub = Subscription(limit=limit)
        self._subscribers.append(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        """Detach a reader (a no-op if it was already dropped)."""
        if sub in self._subscribers:
            self._subscribers.remove(sub)

    def retained(self, after: int) -> list[Record]:
        """The ring's records numbered above ``after``."""
        return [r for r in self.ring if r.sequence_number > after]


def merge(older: Iterable[Record], newer: Iterable[Record]) -> list[Record]:
    """``older`` then ``newer``, in number order, each number once."""
    seen: dict[int, Record] = {}
    for record in (*older, *newer):
        seen.setdefault(record.sequence_number, record)
    return [seen[n] for n in sorted(seen)]
