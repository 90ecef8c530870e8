"""Node events: numbered per node, published to the node's stream hub, logged durably.

Every event gets the node's next ``sequence_number`` and goes through the node's
:class:`~._stream.Hub` (replay ring and live subscribers). All but text deltas
are also written to the ``heron_events`` table, in batches a background task
flushes as soon as the loop is free.

Numbers are *reserved* durably ahead of use (``heron_nodes.events_reserved``,
in blocks of :data:`RESERVE_BLOCK`): a daemon killed before its last events
were flushed — or whose deltas were never logged — restarts numbering above
every number it may have handed out, so a client's cursor never names two
different events. A writer's :meth:`EventLog.prime` awaits a reservation;
later ones happen in the background well before a block runs out. An event
numbered past what is reserved (a burst outrunning the background write) is
held back from streaming until its number is reserved: nothing ever writes to
the database on the loop.

A clean :meth:`EventLog.stop` lowers each reservation to the numbers really
used, so the next daemon continues right after them. After a crash the next
daemon starts above the reservation; the numbers it skipped (after the last
logged event) are remembered (:meth:`EventLog.skipped`) so a resuming reader
is not told they are missing.

Hubs are bounded across nodes: hubs of nodes nobody watches and no run uses
(dormant, interrupted, settled) are let go past :data:`IDLE_HUBS`, and all hubs
together hold at most a byte budget, the least recently used shrunk first.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from .. import api
from ._store import Store
from ._stream import RING_BYTES, RING_EVENTS, Hub, Record, encode

__all__ = ["RESERVE_BLOCK", "Event", "EventLog"]

log = logging.getLogger("heron.runtime")

NOT_LOGGED = frozenset({"node.output_text.delta"})
"""Event types only streamed live (their text is logged once, in ``output_text.done``)."""

RESERVE_BLOCK = 1024
"""How many sequence numbers are reserved durably at a time."""

IDLE_HUBS = 128
"""How many hubs of idle nodes nobody watches are kept (for resumes with deltas)."""

STREAM_MEMORY = 64 * 1024 * 1024
"""Default byte budget of all hubs together."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Event:
    """One node event."""

    node_id: str
    """The node it belongs to."""
    sequence_number: int
    """Its position in the node's event sequence, from 1."""
    type: str
    """The event type, such as ``node.turn.started``."""
    data: dict[str, Any]
    """The event's JSON payload (without ``node_id`` and ``sequence_number``)."""
    created_at: float
    """When it happened (Unix time)."""


class EventLog:
    """Numbers, publishes and logs node events; see the module docstring."""

    def __init__(
        self,
        store: Store,
        *,
        ring_events: int = RING_EVENTS,
        ring_bytes: int = RING_BYTES,
        memory: int = STREAM_MEMORY,
    ) -> None:
        self._store = store
        self._next: dict[str, int] = {}
        self._last: dict[str, int] = {}
        self._reserved: dict[str, int] = {}
        self._skipped: dict[str, tuple[int, int]] = {}
        self._held: dict[str, list[Record]] = {}
        self._reserving: dict[str, asyncio.Task[None]] = {}
        self._hubs: OrderedDict[str, Hub] = OrderedDict()
        self._idle: OrderedDict[str, None] = OrderedDict()
        self._ring = (ring_events, ring_bytes)
        self._memory = memory
        self._bytes = 0
        self._pending: list[tuple[str, int, str, Any, float]] = []
        self._wake = asyncio.Event()
        self._flush_lock = asyncio.Lock()
        self._flusher: asyncio.Task[None] | None = None
        self._stopping = False
        self.readers = 0
        """Event streams open now (kept by the route)."""
        self.readers_dropped = 0
        """Readers cut off since start: too far behind, or stopped reading (by the route)."""

    def start(self) -> None:
        """Start the background writer (inside the running loop)."""
        self._flusher = asyncio.create_task(self._flush_forever(), name="heron-event-log")

    async def stop(self) -> None:
        """Write what is pending, record the numbers really used, and stop the writer."""
        self._stopping = True
        if self._flusher is not None:
            self._flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._flusher
        for task in list(self._reserving.values()):
            with contextlib.suppress(Exception):
                await task
        await self.flush()
        # Numbers held back were never streamed: only those handed out count as used, and
        # the numbers a crash skipped stay skipped (a reader may hold one of them).
        used = {
            node_id: max(self._last[node_id], self._skipped.get(node_id, (0, 0))[1])
            for node_id in self._next
            if not self._held.get(node_id)
        }
        try:
            await self._store.release_events(used)
        except Exception:  # the reservations stand: the next daemon skips past them
            log.exception("could not record the event numbers used")

    # -- numbering -----------------------------------------------------------

    async def prime(self, node_id: str, *, reserve: bool = True) -> None:
        """Continue a node's numbering above anything handed out before (after a restart).

        A writer (``reserve=True``) also waits until a block of numbers is reserved, so
        its events stream at once; a reader only needs to know where the node stands.
        """
        if node_id not in self._next:
            last, reserved = await self._store.event_numbers(node_id)
            if node_id not in self._next:  # not primed meanwhile
                start = max(last, reserved) + 1
                self._next[node_id] = start
                self._last[node_id] = last
                self._reserved[node_id] = start - 1
                if reserved > last:
                    self._skipped[node_id] = (last, reserved)
        if reserve and self._reserved[node_id] - self._next[node_id] < RESERVE_BLOCK // 2:
            task = self._reserve_soon(node_id)
            await asyncio.shield(task)

    def fresh(self, node_id: str, reserved: int = 0) -> None:
        """Start numbering a node just created with ``events_reserved = reserved``
        (``0``: none yet; its first events are held until a block is reserved)."""
        self._next.setdefault(node_id, 1)
        self._last.setdefault(node_id, 0)
        self._reserved.setdefault(node_id, reserved)

    def forget(self, node_id: str) -> None:
        """Drop a node that is gone without a trace (a discarded warm node): its numbering,
        and its hub unless someone reads it."""
        self._next.pop(node_id, None)
        self._reserved.pop(node_id, None)
        hub = self._hubs.get(node_id)
        if hub is not None and hub.subscribers == 0:
            del self._hubs[node_id]
            self._idle.pop(node_id, None)

    def next_number(self, node_id: str) -> int:
        """The number the node's next event will get (the node must be primed)."""
        return self._next[node_id]

    def last_number(self, node_id: str) -> int:
        """The number of the node's last real event (the node must be primed)."""
        return self._last[node_id]

    def skipped(self, node_id: str) -> tuple[int, int] | None:
        """Numbers ``(low, high]`` a restart skipped (never events, or text deltas of a
        turn the crash cut short, redone by the resumed run); ``None`` if none."""
        return self._skipped.get(node_id)

    def _reserve_soon(self, node_id: str) -> asyncio.Task[None]:
        task = self._reserving.get(node_id)
        if task is None:
            task = asyncio.ensure_future(self._reserve(node_id))
            self._reserving[node_id] = task
            task.add_done_callback(lambda _: self._reserving.pop(node_id, None))
        return task

    async def _reserve(self, node_id: str) -> None:
        while True:
            upto = self._next[node_id] - 1 + RESERVE_BLOCK
            try:
                await self._store.reserve_events(node_id, upto)
            except Exception:
                log.exception("could not reserve event numbers of node %s", node_id)
                if self._stopping:
                    return
                await asyncio.sleep(0.5)
                continue
            # Only numbers known to be durably reserved leave this process.
            reserved = self._reserved[node_id] = max(self._reserved.get(node_id, 0), upto)
            held = self._held.pop(node_id, [])
            while held and held[0].sequence_number <= reserved:
                self._stream(node_id, held.pop(0))
            if not held:
                return
            self._held[node_id] = held  # a burst past even this block: reserve again

    # -- publishing ----------------------------------------------------------

    def publish(self, node_id: str, type: str, data: dict[str, Any]) -> Event:
        """Number ``data`` as the node's next event, stream it, queue it to log.

        The node must have been primed (:meth:`prime` or :meth:`fresh`) in this process.
        """
        seq = self._next.get(node_id)
        if seq is None:
            raise RuntimeError(f"events of node {node_id} published before its numbering was read")
        self._next[node_id] = seq + 1
        event = Event(
            node_id=node_id, sequence_number=seq, type=type, data=data, created_at=time.time()
        )
        if type not in NOT_LOGGED:
            self._pending.append((node_id, seq, type, data, event.created_at))
            self._wake.set()
        try:
            record = encode(node_id, seq, type, data)
        except Exception:  # a value JSON cannot carry must not stop the node
            log.exception("could not stream event %s of node %s", type, node_id)
            return event
        reserved = self._reserved.get(node_id, 0)
        if seq > reserved or self._held.get(node_id):
            # Not durably reserved yet: streamed once it is (order kept), never before.
            self._held.setdefault(node_id, []).append(record)
            self._reserve_soon(node_id)
        else:
            if reserved - seq < RESERVE_BLOCK // 2:
                self._reserve_soon(node_id)
            self._stream(node_id, record)
        return event

    async def repair_status(self, node_id: str, status: str) -> None:
        """Log ``status`` (the node's status in its row) if the log lost it.

        A status event published just before a SIGKILL may never have been
        written (events are written in batches). Before the first status this
        process publishes for the node, the last logged one is compared with the
        row and, if they differ, the row's status is published first, so the log
        reads as the node lived: ``dormant`` before the ``running`` of its wake-up.
        The node must be primed.
        """
        if self.hub(node_id).status:
            return  # this process published its statuses itself
        await self.flush()  # (a hub let go while idle: what it published is in the log)
        logged = await self._store.events(node_id, types=["node.status.changed"], last=1)
        if not logged or logged[0]["data"].get("status") != status:
            self.publish(node_id, "node.status.changed", {"status": status})

    def announce(self, node_id: str, status: str) -> None:
        """Publish ``node.status.changed`` unless it is the last status this process
        published for the node (a run recovered after a restart is running again)."""
        if self.hub(node_id).status != status:
            self.publish(node_id, "node.status.changed", {"status": status})

    def _stream(self, node_id: str, record: Record) -> None:
        self._last[node_id] = record.sequence_number
        hub = self.hub(node_id)
        before = hub.size
        hub.add(record)
        self._bytes += hub.size - before
        if hub.idle:
            self._idle[node_id] = None
        self._shrink()

    # -- hubs ----------------------------------------------------------------

    def hub(self, node_id: str) -> Hub:
        """The node's stream hub (the node must be primed)."""
        hub = self._hubs.get(node_id)
        if hub is None:
            floor = self._next[node_id] - 1 - len(self._held.get(node_id, ()))
            hub = self._hubs[node_id] = Hub(
                node_id, floor, last=self._last[node_id], events=self._ring[0], size=self._ring[1]
            )
        self._hubs.move_to_end(node_id)
        self._idle.pop(node_id, None)
        return hub

    def stats(self) -> api.EventStreamStats:
        """Readers, hubs and the bytes the hubs hold together."""
        return api.EventStreamStats(
            readers=self.readers,
            readers_dropped=self.readers_dropped,
            hubs=len(self._hubs),
            hub_bytes=self._bytes,
        )

    def released(self, node_id: str) -> None:
        """A reader left: the node's hub may go once nobody watches it and no run uses it."""
        hub = self._hubs.get(node_id)
        if hub is not None and hub.idle:
            self._idle[node_id] = None
            self._shrink()

    def _drop(self, node_id: str) -> None:
        hub = self._hubs.pop(node_id)
        self._idle.pop(node_id, None)
        self._bytes -= hub.size

    def _shrink(self) -> None:
        """Keep at most :data:`IDLE_HUBS` idle hubs and the byte budget, oldest first."""
        while len(self._idle) > IDLE_HUBS:
            oldest = next(iter(self._idle))
            if self._hubs[oldest].idle:
                self._drop(oldest)
            else:
                del self._idle[oldest]
        if self._bytes <= self._memory:
            return
        for node_id in list(self._idle):
            if self._bytes <= self._memory:
                return
            self._drop(node_id)
        # Still over: shrink the rings of the least recently used hubs in use (their
        # readers resume from the log, with stream_gap only for lost text deltas).
        for hub in list(self._hubs.values()):
            if self._bytes <= self._memory:
                return
            self._bytes -= hub.trim(self._bytes - self._memory)
            if self._bytes > self._memory:  # its run's messages are in the log too
                self._bytes -= hub.forget_run()

    async def logged(
        self,
        node_id: str,
        *,
        after: int,
        upto: int | None = None,
        types: tuple[str, ...] | None = None,
        last: int | None = None,
    ) -> list[Record]:
        """The node's logged events numbered in ``(after, upto]`` (of ``types``, only the
        ``last`` ones, when given), as stream records."""
        await self.flush()  # what is still queued is part of the log
        rows = await self._store.events(node_id, after=after, upto=upto, types=types, last=last)
        return [encode(node_id, r["sequence_number"], r["type"], r["data"]) for r in rows]

    async def first_logged(self, node_id: str) -> int | None:
        """The lowest number logged for the node (``None`` if none)."""
        await self.flush()
        return await self._store.first_event_number(node_id)

    # -- the log -------------------------------------------------------------

    async def flush(self) -> None:
        """Write every queued event now (after any write already under way)."""
        async with self._flush_lock:
            batch, self._pending = self._pending, []
            if batch:
                try:
                    await self._store.append_events(batch)
                except BaseException:
                    self._pending[:0] = batch  # keep them for the next attempt
                    raise

    async def _flush_forever(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self.flush()
            except Exception:
                log.exception("could not write node events; retrying")
                await asyncio.sleep(0.5)
                self._wake.set()
