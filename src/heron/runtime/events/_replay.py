"""Opening and writing a node's event stream: what to replay from a cursor, then live.

Opening a stream attaches a subscriber to the node's hub *first*, then works out
what to replay (ring, durable log, or a mid-run seed) from a snapshot taken in
the same instant, so nothing published in between is lost or sent twice: live
records numbered at or below what was already written are skipped.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field

from ..nodes import SETTLED, Engine
from ..server import ApiError
from ._stream import (
    Hub,
    Record,
    Subscription,
    Writers,
    encode,
    error_record,
    keepalive_record,
    merge,
)

__all__ = ["SETTLE_GRACE", "EventStreams", "Opened", "cursor_of", "framed", "parse_cursor"]

log = logging.getLogger("heron.runtime")

SETTLE_GRACE = 5.0
"""Seconds a stream of a node already settled waits for its ``node.settled`` event to be
published (its run is just ending) before writing one from the outcome row."""

CURSOR = re.compile(r"[0-9]{1,18}")
"""A resume cursor: a sequence number (at most 18 digits, so it fits every database)."""


@dataclass(kw_only=True, slots=True)
class _Snapshot:
    """The hub as it was the instant the reader subscribed."""

    ring: list[Record]
    """The retained records, oldest first."""
    floor: int
    """Events numbered up to here come from the log."""
    last: int
    """The node's last event streamed (or, before any was here, handed out)."""
    run: tuple[bool, list[Record], str, int]
    """The hub's run: known, completed messages, partial text, its last delta's number."""


@dataclass(kw_only=True, slots=True)
class Opened:
    """A stream ready to write: what to replay first, then the live subscription."""

    hub: Hub
    """The node's hub."""
    sub: Subscription
    """The live subscription (attached before anything was read)."""
    first: list[bytes] = field(default_factory=list)
    """Records (and maybe ``stream_gap`` errors) to write before going live."""
    written: int = 0
    """The highest number in :attr:`first`: live records up to it are skipped."""
    ended: bool = False
    """:attr:`first` ends with the node's terminal ``node.settled``."""
    await_settled: bool = False
    """The node has settled but its ``node.settled`` was not seen yet."""
    dropped: bool = False
    """The reader was cut off (and counted as such)."""


def parse_cursor(text: str, source: str) -> int:
    """A cursor's number; 422 ``invalid_request`` unless it is 1 to 18 digits."""
    if CURSOR.fullmatch(text) is None:
        raise ApiError(
            422,
            "invalid_request",
            f"{source} must be an event's sequence_number (1 to 18 digits), got {text[:40]!r}",
        )
    return int(text)


def cursor_of(after: str | None, last_event_id: str | None) -> int | None:
    """The resume cursor: ``?after=`` wins over ``Last-Event-ID``; ``None`` for neither.
    A malformed one is refused even when the other wins."""
    header = None
    if last_event_id is not None and last_event_id.strip():
        header = parse_cursor(last_event_id.strip(), "Last-Event-ID")
    if after is not None:
        return parse_cursor(after, "after")
    return header


def framed(records: list[Record], after: int, end: int) -> list[bytes]:
    """``records`` (numbered above ``after``) with a ``stream_gap`` right before each hole,
    naming the first record after it (or ``end + 1`` for a hole at the end).

    Every number was an event (restarts skip none, see ``_log``), so a hole is events
    really missing: text deltas, which are never logged.
    """
    out: list[bytes] = []
    previous = after
    for record in records:
        if record.sequence_number - previous > 1:
            out.append(_gap(previous, record.sequence_number))
        out.append(record.wire)
        previous = record.sequence_number
    if previous < end:
        out.append(_gap(previous, end + 1))
    return out


class EventStreams(Writers):
    """Opens and writes node event streams over one engine. Once closed, every stream
    ends, and every stream opened from then on after its replay (a client resumes from
    its cursor)."""

    def __init__(self, engine: Engine) -> None:
        super().__init__()
        self.engine = engine

    async def open(self, node_id: str, cursor: int | None) -> Opened:
        """Validate the node, subscribe, and plan the replay (errors are raised before
        anything streams, so they are answered as JSON)."""
        engine = self.engine
        await engine.row(node_id)
        await engine.events.prime(node_id)
        # What the node published before the reader came is made durable first, so the
        # snapshot holds it: a status made from the row would otherwise be followed by
        # the same status, live, as the event reaches the hub.
        await engine.events.durable(node_id)
        hub = engine.events.hub(node_id)
        config = engine.config
        # Subscribe and snapshot in one go (no await in between): the snapshot plus the
        # subscriber's buffer are exactly everything, with no gap and no overlap.
        sub = hub.subscribe(config.sse_buffer, config.sse_buffer_bytes)
        snap = _Snapshot(
            ring=list(hub.ring),
            floor=hub.floor,
            last=hub.last,
            run=(hub.run_known, list(hub.done), hub.partial, hub.partial_seq),
        )
        engine.events.subscribed(node_id)  # (a node running in another daemon: see _relay)
        try:
            row = await engine.row(node_id)
            settled = row["settled_at"] is not None or row["status"] in SETTLED
            opened = Opened(hub=hub, sub=sub, written=snap.last)
            if cursor is None and not settled and row["status"] == "running":
                opened.first = await self._seed(node_id, snap)
            elif cursor is None and not settled:
                opened.first = [await self._status_now(node_id, row["status"], snap)]
            else:
                await self._replay(opened, node_id, cursor, snap, settled=settled)
            if settled and not opened.ended:
                opened.await_settled = True
        except BaseException:
            hub.unsubscribe(sub)
            raise
        return opened

    async def _history(self, node_id: str, after: int, snap: _Snapshot) -> list[Record]:
        """Every retained record numbered above ``after``: the log below the ring, then it."""
        older: list[Record] = []
        if after < snap.floor:
            older = await self.engine.events.logged(node_id, after=after, upto=snap.floor)
        return merge(older, [r for r in snap.ring if r.sequence_number > after])

    async def _typed(
        self, node_id: str, types: tuple[str, ...], snap: _Snapshot, *, after: int = 0
    ) -> list[Record]:
        """The retained records of ``types`` numbered above ``after`` (a targeted read)."""
        older: list[Record] = []
        if after < snap.floor:
            older = await self.engine.events.logged(
                node_id, after=after, upto=snap.floor, types=types
            )
        newer = [r for r in snap.ring if r.type in types and r.sequence_number > after]
        return merge(older, newer)

    async def _latest(self, node_id: str, type: str, snap: _Snapshot) -> Record | None:
        """The node's latest retained record of ``type``."""
        for record in reversed(snap.ring):
            if record.type == type:
                return record
        older = await self.engine.events.logged(
            node_id, after=0, upto=snap.floor, types=(type,), last=1
        )
        return older[-1] if older else None

    async def _earliest(self, node_id: str, snap: _Snapshot) -> int | None:
        """The lowest number still retained (log or ring)."""
        first = await self.engine.events.first_logged(node_id) if snap.floor > 0 else None
        if snap.ring and (first is None or snap.ring[0].sequence_number < first):
            first = snap.ring[0].sequence_number
        return first

    async def _replay(
        self, opened: Opened, node_id: str, cursor: int | None, snap: _Snapshot, *, settled: bool
    ) -> None:
        last = end = snap.last
        if cursor is None:
            # A settled node watched without a cursor replays what is retained: nothing
            # was promised, so nothing is reported missing.
            records = await self._history(node_id, 0, snap)
            opened.first += [r.wire for r in records]
        elif cursor > end:
            # A future cursor: say so, and start from the earliest event still known.
            earliest = await self._earliest(node_id, snap)
            opened.first.append(_gap(cursor, last + 1 if earliest is None else earliest))
            records = [] if earliest is None else await self._history(node_id, earliest - 1, snap)
            start = earliest - 1 if earliest is not None else last
            opened.first += framed(records, start, last)
        else:
            records = await self._history(node_id, cursor, snap)
            opened.first += framed(records, cursor, last)
        # A node.settled ends the stream only as the last event of a node settled now (a
        # revived node went on after it).
        opened.ended = settled and bool(records) and records[-1].type == "node.settled"
        if settled and not records:
            # The cursor is at the end: the logged terminal event again, then the end.
            terminal = await self._latest(node_id, "node.settled", snap)
            if terminal is not None:
                opened.first.append(terminal.wire)
                opened.ended = True

    async def _seed(self, node_id: str, snap: _Snapshot) -> list[bytes]:
        """A mid-run joiner's start, in the order it happened: the node's ``running``
        status, the reports pushed so far, the run's completed messages and the tool calls
        still running (each its own event, by number), then its partial text as one delta.

        The status comes first even when its number is not the lowest, so a joiner can say
        at once what the node is doing, before any text of the run arrives.
        """
        _, done, partial, partial_seq = snap.run
        statuses = await self._typed(node_id, ("node.status.changed",), snap)
        status = statuses[-1] if statuses else None
        running = status is not None and status.data.get("status") == "running"
        # The run began at the first "running" of the last unbroken series of them: a
        # daemon that recovered the run after a restart says "running" again.
        started, previous = 0, None
        for record in statuses:
            said = record.data.get("status")
            if said == "running" and previous != "running":
                started = record.sequence_number
            previous = said
        first = [
            status.wire
            if status is not None and running
            else await self._status_now(node_id, "running", snap)
        ]
        reports = await self._typed(node_id, ("node.report.pushed",), snap)
        # The hub holds the completed messages it saw; a run it did not see start (a
        # restart, a hub let go) or saw only resume after a restart has earlier ones in
        # the log, after the run's running status.
        logged = await self._typed(node_id, ("node.output_text.done",), snap, after=started)
        done = merge(logged, done)
        calls = await self._typed(
            node_id, ("node.tool_call.started", "node.tool_call.completed"), snap, after=started
        )
        ended = {r.data.get("tool_call_id") for r in calls if r.type == "node.tool_call.completed"}
        open_calls = [
            r
            for r in calls
            if r.type == "node.tool_call.started" and r.data.get("tool_call_id") not in ended
        ]
        first += [r.wire for r in merge(merge(reports, done), open_calls)]
        if partial:
            first.append(
                encode(node_id, partial_seq, "node.output_text.delta", {"delta": partial}).wire
            )
        return first

    async def _status_now(self, node_id: str, status: str, snap: _Snapshot) -> bytes:
        """The node's latest ``node.status.changed``; made from its row (without an id:
        not an event of its sequence) if that does not say ``status``."""
        latest = await self._latest(node_id, "node.status.changed", snap)
        if latest is not None and latest.data.get("status") == status:
            return latest.wire
        data = {"status": status}
        return encode(node_id, max(snap.last, 1), "node.status.changed", data, numbered=False).wire

    async def write(self, opened: Opened, node_id: str) -> AsyncGenerator[bytes, None]:
        """The response body: the replay, then live records, keepalives and the end."""
        engine, hub, sub = self.engine, opened.hub, opened.sub
        keepalive = engine.config.sse_keepalive
        written = opened.written
        loop = asyncio.get_running_loop()
        settle_by = loop.time() + SETTLE_GRACE if opened.await_settled else None
        engine.events.readers += 1
        self._writing.add(sub)
        try:
            if opened.first:
                yield b"".join(opened.first)
            if opened.ended:
                return
            while not self.closing:
                chunk: list[bytes] = []
                ended = False
                for record in sub.take():
                    if record.sequence_number <= written:
                        continue
                    written = record.sequence_number
                    chunk.append(record.wire)
                    if record.type == "node.settled":
                        ended = True
                        break
                if chunk:
                    yield b"".join(chunk)
                if ended:
                    return
                if sub.dropped:
                    opened.dropped = True
                    engine.events.readers_dropped += 1
                    log.info("dropped a stalled reader of node %s", node_id)
                    yield error_record(
                        "stream_dropped",
                        "the reader fell too far behind; reconnect with the last sequence_number",
                    )
                    return
                timeout = keepalive
                if settle_by is not None:
                    timeout = min(timeout, max(settle_by - loop.time(), 0.0))
                try:
                    await asyncio.wait_for(sub.wake.wait(), timeout)
                    if self.closing:
                        return
                except TimeoutError:
                    if settle_by is not None and loop.time() >= settle_by:
                        yield await self._settled_from_row(node_id, written)
                        return
                    yield keepalive_record()
        except Exception as exc:  # the daemon's own failure: tell the reader, then end
            log.exception("the event stream of node %s failed", node_id)
            yield error_record("stream_error", f"the event stream failed: {type(exc).__name__}")
        finally:
            self._writing.discard(sub)
            engine.events.readers -= 1
            hub.unsubscribe(sub)
            engine.events.released(node_id)

    async def _settled_from_row(self, node_id: str, written: int) -> bytes:
        """``node.settled`` from the outcome row, for a node whose settled event was lost
        (without an id: it is not an event of the node's sequence)."""
        outcome = await self.engine.store.outcome(node_id)
        data = {"outcome": outcome}
        return encode(node_id, max(written, 1), "node.settled", data, numbered=False).wire

    def stalled(self, node_id: str, opened: Opened) -> None:
        """A write to a reader timed out: its connection is being closed."""
        if not opened.dropped:  # not counted yet as dropped for its buffer
            opened.dropped = True
            self.engine.events.readers_dropped += 1
        log.info("closed the connection of a stalled reader of node %s", node_id)


def _gap(cursor: int, earliest: int) -> bytes:
    return error_record(
        "stream_gap",
        f"events after {cursor} are not all retained; continuing from {earliest}",
        {"earliest_sequence": earliest},
    )
