"""The per-node stream hub: a bounded replay ring and the node's live subscribers."""

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
    "Writers",
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


def encode(
    node_id: str, sequence_number: int, type: str, data: dict[str, Any], *, numbered: bool = True
) -> Record:
    """The record of an event: ``node_id`` and ``sequence_number`` come first in ``data``.

    ``numbered=False`` leaves out the ``id:`` line: for a record made up from the node's
    row (not an event of its sequence), so that one id never names two events and a
    reader's ``Last-Event-ID`` stays on the last real event.
    """
    full = {"node_id": node_id, "sequence_number": sequence_number, **data}
    text = json.dumps(full, separators=(",", ":"), ensure_ascii=False, default=str)
    head = f"id: {sequence_number}\n" if numbered else ""
    wire = f"{head}event: {type}\ndata: {text}\n\n".encode()
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
    max_bytes: int
    """How many bytes of records may wait in the buffer before the reader is dropped."""
    buffer: deque[Record] = field(default_factory=deque)
    """Records not yet written to the reader."""
    size: int = 0
    """The bytes of the records in :attr:`buffer`."""
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when records arrive (or the reader is dropped)."""
    dropped: bool = False
    """The buffer overflowed: the reader was cut off and gets no more records."""

    def offer(self, record: Record) -> bool:
        """Buffer ``record``; ``False`` (and dropped, buffer freed) if it does not fit."""
        size = len(record.wire)
        if len(self.buffer) >= self.limit or self.size + size > self.max_bytes:
            self.dropped = True
            self.buffer.clear()  # nobody will read it: free it now
            self.size = 0
            self.wake.set()
            return False
        self.buffer.append(record)
        self.size += size
        self.wake.set()
        return True

    def take(self) -> list[Record]:
        """Every buffered record, oldest first (the buffer is emptied)."""
        records = list(self.buffer)
        self.buffer.clear()
        self.size = 0
        self.wake.clear()
        return records


class Writers:
    """The responses a route is writing: every one ends when the daemon stops."""

    def __init__(self) -> None:
        self.closing = False
        """The daemon is stopping: every stream ends (its reader comes back later)."""
        self._writing: set[Subscription] = set()

    def close(self) -> None:
        """End every stream now (each ends after what it is writing)."""
        self.closing = True
        for sub in self._writing:
            sub.wake.set()


class Hub:
    """One node's ring, run snapshot and subscribers; see the module docstring."""

    def __init__(
        self, node_id: str, floor: int, *, last: int | None = None, events: int, size: int
    ) -> None:
        self.node_id = node_id
        self.floor = floor
        """Every event numbered above this, published in this process, is in :attr:`ring`
        (older ones were evicted, or came before this hub existed)."""
        self.last = floor if last is None else last
        """The node's last event: the highest number published through this hub, or
        before it existed the last one streamed or handed out."""
        self.status = ""
        """The node's status as last published here (``settled`` after ``node.settled``)."""
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
        self._done_bytes = 0
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

    @property
    def size(self) -> int:
        """The bytes this hub holds: its ring, the run's completed messages and partial (a
        message still in the ring is counted twice: an upper bound)."""
        return self._ring_bytes + self._done_bytes + len(self.partial)

    @property
    def idle(self) -> bool:
        """Nobody watches and no run is going: the hub may be let go."""
        return not self._subscribers and self.status in ("dormant", "interrupted", "settled")

    def forget_run(self) -> int:
        """Let go of the run's completed messages (a joiner is then seeded from the log);
        the bytes freed."""
        freed, self._done_bytes = self._done_bytes, 0
        self.done, self.run_known = [], False
        return freed

    def trim(self, nbytes: int) -> int:
        """Evict the oldest ring records until ``nbytes`` are freed (or the ring is empty);
        the bytes freed."""
        freed = 0
        while self.ring and freed < nbytes:
            evicted = self.ring.popleft()
            freed += len(evicted.wire)
            self.floor = evicted.sequence_number
        self._ring_bytes -= freed
        return freed

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
            if not sub.offer(record):
                self._subscribers.remove(sub)

    def _follow(self, record: Record) -> None:
        kind = record.type
        self.settled = kind == "node.settled" or (self.settled and kind != "node.status.changed")
        if kind == "node.settled":
            self.status = "settled"
        elif kind == "node.status.changed":
            self.status = str(record.data.get("status", ""))
        if kind == "node.status.changed" and record.data.get("status") == "running":
            self.run_known, self.done, self.partial, self._done_bytes = True, [], "", 0
        elif kind == "node.output_text.delta":
            self.partial += str(record.data.get("delta", ""))
            self.partial_seq = record.sequence_number
        elif kind in ("node.output_text.done", "node.turn.started"):
            if kind == "node.output_text.done":
                self.done.append(record)
                self._done_bytes += len(record.wire)
            self.partial = ""

    def subscribe(self, limit: int, max_bytes: int) -> Subscription:
        """Attach a reader with a buffer of ``limit`` records and ``max_bytes`` bytes."""
        sub = Subscription(limit=limit, max_bytes=max_bytes)
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
