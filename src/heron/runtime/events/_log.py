"""Node events: numbered per node, logged durably, then published to the node's hub.

The numbering and durability rules are ARCHITECTURE.md's invariants."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ... import api
from ..db import Database
from ..nodes import Outcome
from ._relay import Handler, Listener, Relay
from ._store import EVENTS_CHANNEL, EventRow, EventStore, Settlement, StepMark
from ._stream import RING_BYTES, RING_EVENTS, Hub, Record, Subscription, encode

__all__ = ["Event", "EventLog"]

log = logging.getLogger("heron.runtime")

NOT_LOGGED = frozenset({"node.output_text.delta"})
"""Event types only streamed live (their text is logged once, in ``output_text.done``)."""

TEXT_ENDS = frozenset(
    {"node.output_text.done", "node.turn.completed", "node.status.changed", "node.settled"}
)
"""Event types after which no text is being written (a turn that failed mid-text has no
``output_text.done``)."""

NOT_IN_FEED = NOT_LOGGED
"""Event types the daemon-wide feed leaves out (a node's own stream has them)."""

IDLE_HUBS = 128
"""How many hubs of idle nodes nobody watches are kept (for resumes with deltas)."""

STREAM_MEMORY = 64 * 1024 * 1024
"""Default byte budget of all hubs together."""

RETRY = 0.5
"""Seconds between attempts to write events while the database fails."""


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
    """Numbers, logs and publishes node events; see the module docstring."""

    def __init__(
        self,
        database: Database,
        *,
        ring_events: int = RING_EVENTS,
        ring_bytes: int = RING_BYTES,
        memory: int = STREAM_MEMORY,
    ) -> None:
        self.origin = secrets.token_hex(8)
        """This process's name in the notifications of the batches it writes."""
        self._store = EventStore(database, origin=self.origin)
        self._next: dict[str, int] = {}
        self._last: dict[str, int] = {}
        self._durable: dict[str, int] = {}
        self._status: dict[str, str] = {}
        self._held: dict[str, deque[tuple[int, Record | None]]] = {}
        self._hubs: OrderedDict[str, Hub] = OrderedDict()
        self._idle: OrderedDict[str, None] = OrderedDict()
        self._ring = (ring_events, ring_bytes)
        self._memory = memory
        self._bytes = 0
        self._pending: list[tuple[str, int, str, Any, float]] = []
        self._handed: dict[str, int] = {}  # per node, the highest number since the last batch
        self._writing: dict[str, int] = {}  # per node, the first delta of the text being written
        self._marks: dict[str, StepMark] = {}
        self._settles: dict[str, Settlement] = {}
        self._wake = asyncio.Event()
        self._flush_lock = asyncio.Lock()
        self._flusher: asyncio.Task[None] | None = None
        self._watchers: list[Subscription] = []
        self._wanted: dict[str, int] = {}  # per node, the outcome polls waiting on it here
        self._deferred: set[str] = set()  # nodes to relay once their own events are streamed
        self.readers = 0
        """Event streams open now (kept by the route)."""
        self.readers_dropped = 0
        """Readers cut off since start: too far behind, or stopped reading (by the route)."""
        self.settled_elsewhere: Callable[[str], None] | None = None
        """Called with a node's id when another daemon's ``node.settled`` of it is streamed
        here (the engine wakes its outcome polls)."""
        # Daemons sharing one PostgreSQL database stream each other's events (``_relay``);
        # on SQLite there is one daemon, and nothing to listen to.
        self._listener: Listener | None = None
        self._relay: Relay | None = None
        if database.kind == "postgresql":
            self._listener = Listener(database.engine)
            self._relay = Relay(self, self._store)
            self._listener.on(EVENTS_CHANNEL, self._relay.notified, self._caught_up)

    def start(self) -> None:
        """Start the background writer (inside the running loop), and on PostgreSQL the
        relay of other daemons' events."""
        self._flusher = asyncio.create_task(self._flush_forever(), name="heron-event-log")
        if self._relay is not None and self._listener is not None:
            self._relay.start()
            self._listener.start()

    async def stop(self) -> None:
        """Write what is pending (streaming it) and stop the writer."""
        if self._listener is not None and self._relay is not None:
            await self._listener.stop()
            await self._relay.stop()
        if self._flusher is not None:
            self._flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._flusher
        try:
            await self.flush()
        except Exception:  # never streamed, so no reader holds them: the next daemon reuses them
            log.exception("could not write the last node events")

    # -- numbering -----------------------------------------------------------

    async def prime(self, node_id: str) -> None:
        """Continue a node's numbering right above everything handed out before (after a
        restart, or when its numbering was let go); call it before publishing.

        On PostgreSQL another daemon may have numbered the node since this one last did,
        so the numbering is read again (unless this process holds events of the node not
        yet written: it is numbering it now), and what the other daemon logged is
        streamed here first. See ARCHITECTURE.md's event numbers."""
        if node_id in self._next and (self._relay is None or self._held.get(node_id)):
            return
        last, reserved = await self._store.event_numbers(node_id)
        used = max(last, reserved)
        if node_id not in self._next:  # not primed meanwhile
            self._set(node_id, used)
            if self._relay is not None:
                self._relay.check(node_id)
            return
        if self._held.get(node_id):
            return  # publishing here since the read: its numbers are above it
        self._next[node_id] = max(self._next[node_id], used + 1)
        if self._relay is not None and last > self._last[node_id]:
            await self._relay.pull(node_id)
        self._durable[node_id] = max(self._durable[node_id], used)

    def fresh(self, node_id: str) -> None:
        """Start numbering a node just created (its first event is number 1)."""
        if node_id not in self._next:
            self._set(node_id, 0)

    def _set(self, node_id: str, used: int) -> None:
        self._next[node_id] = used + 1
        self._last[node_id] = used
        self._durable[node_id] = used

    def forget(self, node_id: str) -> None:
        """Drop a node that is gone without a trace (a discarded warm node): its numbering,
        and its hub unless someone reads it."""
        for numbering in (
            self._next,
            self._last,
            self._durable,
            self._status,
            self._held,
            self._writing,
        ):
            numbering.pop(node_id, None)
        self._deferred.discard(node_id)
        hub = self._hubs.get(node_id)
        if hub is not None and hub.subscribers == 0:
            self._drop(node_id)

    # -- other daemons' events (PostgreSQL) -----------------------------------

    def listen(
        self,
        channel: str,
        handler: Handler,
        on_connect: Callable[[], Awaitable[None]] | None = None,
    ) -> bool:
        """Have ``handler`` called with each payload notified on ``channel`` by any daemon
        sharing the database (and ``on_connect`` each time the listening connection is
        made again, to catch up on what it missed); before :meth:`start`. ``False`` on
        SQLite: there is no other daemon."""
        if self._listener is None:
            return False
        self._listener.on(channel, handler, on_connect)
        return True

    def cursor(self, node_id: str) -> int | None:
        """The node's last event streamed here (``None``: not followed here)."""
        return self._last.get(node_id)

    def wanted(self, node_id: str) -> bool:
        """Whether someone here waits on the node's events: a reader of its stream, or an
        outcome poll (see :meth:`want`)."""
        if node_id in self._wanted:
            return True
        hub = self._hubs.get(node_id)
        return hub is not None and hub.subscribers > 0

    @contextlib.contextmanager
    def want(self, node_id: str) -> Iterator[None]:
        """While inside, another daemon's events of the (primed) node are streamed here
        as they are logged (an outcome poll waits for its ``node.settled``)."""
        self._wanted[node_id] = self._wanted.get(node_id, 0) + 1
        self.subscribed(node_id)
        try:
            yield
        finally:
            left = self._wanted[node_id] - 1
            if left:
                self._wanted[node_id] = left
            else:
                del self._wanted[node_id]

    def subscribed(self, node_id: str) -> None:
        """A reader of the node subscribed to its hub (after :meth:`prime`): what another
        daemon logged since is streamed to it."""
        if self._relay is not None:
            self._relay.check(node_id)

    def follow(self, node_id: str, after: int) -> None:
        """Follow a node numbered elsewhere from after ``after`` (for the feed)."""
        if node_id not in self._next:
            self._set(node_id, after)

    def relayed(self, rows: Sequence[EventRow]) -> int:
        """Stream logged events of nodes followed here that another daemon wrote (by
        node, in number order); those already streamed are skipped. How many were new."""
        count = 0
        for row in rows:
            node_id, seq, kind = row["node_id"], row["sequence_number"], row["type"]
            last = self._last.get(node_id)
            if last is None or seq <= last:
                continue
            if self._held.get(node_id):
                # This process is numbering the node too (see ARCHITECTURE.md): its own
                # events stream first, then the log is read again.
                self._deferred.add(node_id)
                continue
            self._durable[node_id] = max(self._durable[node_id], seq)
            self._next[node_id] = max(self._next[node_id], seq + 1)
            if kind in ("node.status.changed", "node.settled"):
                self._status.pop(node_id, None)  # not this process's statuses any more
            if kind in TEXT_ENDS:
                self._writing.pop(node_id, None)
            self._stream(node_id, encode(node_id, seq, kind, row["data"]))
            count += 1
            if kind == "node.settled" and self.settled_elsewhere is not None:
                self.settled_elsewhere(node_id)
        return count

    async def _caught_up(self) -> None:
        """The listening connection is (back) up: read the wanted nodes again."""
        if self._relay is not None:
            wanted = [n for n in self._hubs if self.wanted(n)] if not self._watchers else self._hubs
            self._relay.follow_all([*wanted, *self._wanted])

    def next_number(self, node_id: str) -> int:
        """The number the node's next event will get (the node must be primed)."""
        return self._next[node_id]

    def last_number(self, node_id: str) -> int:
        """The number of the node's last event streamed (the node must be primed)."""
        return self._last[node_id]

    def shown_before(self, node_id: str) -> int | None:
        """The number of the node's last event whose effect is in its messages now, for a
        transcript read in the same step of the event loop (``None``: not numbered here).

        That is the last event published, unless a message is being written: then the
        one before its first text delta. A page that shows the messages and streams the
        node's events after this number shows the text being written from its start,
        and no finished message twice."""
        first = self._writing.get(node_id)
        if first is not None:
            return first - 1
        following = self._next.get(node_id)
        return None if following is None else following - 1

    async def logged_last(self, node_id: str) -> int:
        """The highest event number the node was given, read from the database (for a
        node this daemon does not number)."""
        last, reserved = await self._store.event_numbers(node_id)
        return max(last, reserved)

    # -- publishing ----------------------------------------------------------

    def publish(self, node_id: str, type: str, data: dict[str, Any]) -> Event:
        """Number ``data`` as the node's next event and queue it: it is streamed once it is
        durable (logged, or for a delta its number recorded), after every earlier one.

        The node must have been primed (:meth:`prime` or :meth:`fresh`) in this process.
        """
        seq = self._next.get(node_id)
        if seq is None:
            raise RuntimeError(f"events of node {node_id} published before its numbering was read")
        self._next[node_id] = seq + 1
        event = Event(
            node_id=node_id, sequence_number=seq, type=type, data=data, created_at=time.time()
        )
        if type in NOT_LOGGED:
            self._writing.setdefault(node_id, seq)
        else:
            self._pending.append((node_id, seq, type, data, event.created_at))
            if type in TEXT_ENDS:
                self._writing.pop(node_id, None)
        self._handed[node_id] = seq
        if type == "node.status.changed":
            self._status[node_id] = str(data.get("status", ""))
        elif type == "node.settled":
            self._status[node_id] = "settled"
        record: Record | None = None
        try:
            record = encode(node_id, seq, type, data)
        except Exception:  # a value JSON cannot carry must not stop the node
            log.exception("could not stream event %s of node %s", type, node_id)
        self._held.setdefault(node_id, deque()).append((seq, record))
        self._wake.set()
        return event

    async def durable(self, node_id: str) -> None:
        """Return once every event the node has published so far is durable (streamed)."""
        if node_id not in self._next:  # it published nothing here
            return
        target = self._next[node_id] - 1
        while self._durable.get(node_id, target) < target:
            await self._flush_retrying()

    async def step_done(
        self, node_id: str, key: str, *, usage: tuple[int, int] | None = None
    ) -> None:
        """End a workflow step: write its events and its mark ``key`` (and a model turn's
        ``usage``, input and output tokens, counted once per mark) in one transaction.

        Called last in the step, so all this is durable before DBOS records the result.
        """
        self._marks[node_id] = StepMark(key=key, usage=usage)
        target = self._next[node_id] - 1
        # At least one flush of its own: one under way may hold the mark, not yet written.
        await self._flush_retrying()
        while (node_id in self._marks and self._marks[node_id].key == key) or (
            self._durable.get(node_id, target) < target
        ):
            await self._flush_retrying()

    async def settle(self, node_id: str, outcome: Outcome, status: str) -> None:
        """Settle an idle node: publish its ``status`` and ``node.settled``, and write them
        with its outcome and status in one transaction (a kill leaves both or neither).

        The caller holds the node's lock and has seen that it has not settled for good
        (so the settlement takes); the node must be primed.
        """
        self.publish(node_id, "node.status.changed", {"status": status})
        self.publish(node_id, "node.settled", {"outcome": outcome})
        # Queued with its events, in the same tick: the batch that takes them takes it.
        self._settles[node_id] = Settlement(outcome=outcome, status=status)
        target = self._next[node_id] - 1
        while node_id in self._settles or self._durable.get(node_id, target) < target:
            await self._flush_retrying()

    async def repair_status(self, node_id: str, status: str) -> None:
        """Log ``status`` (the node's status in its row) if the log does not end with it.

        A status published just before a SIGKILL may never have been written (its change
        to the row was). Before the first status this process publishes for the node,
        the last logged one is compared with the row and, if they differ, the row's
        status is published first, so the log reads as the node lived: ``dormant``
        before the ``running`` of its wake-up. The node must be primed.
        """
        if self._status.get(node_id):
            return  # this process published its statuses itself
        await self.flush()
        logged = await self._store.events(node_id, types=["node.status.changed"], last=1)
        if not logged or logged[0]["data"].get("status") != status:
            self.publish(node_id, "node.status.changed", {"status": status})

    def _release(self, node_id: str) -> None:
        """Stream the node's held events that are durable now, in order."""
        held = self._held.get(node_id)
        durable = self._durable.get(node_id, 0)
        while held and held[0][0] <= durable:
            _, record = held.popleft()
            if record is not None:
                self._stream(node_id, record)
        if not held:
            self._held.pop(node_id, None)
            if node_id in self._deferred and self._relay is not None:
                self._deferred.discard(node_id)
                self._relay.follow_all([node_id])

    def _stream(self, node_id: str, record: Record) -> None:
        if record.sequence_number <= self._last.get(node_id, 0):
            return  # streamed already, relayed from the log (see ``_relay``)
        hub = self.hub(node_id)  # (a hub made now starts after the last event streamed)
        self._last[node_id] = record.sequence_number
        before = hub.size
        hub.add(record)
        self._bytes += hub.size - before
        if hub.idle:
            self._idle[node_id] = None
        self._shrink()
        if self._watchers and record.type not in NOT_IN_FEED:
            for sub in tuple(self._watchers):
                if not sub.offer(record):  # dropped: it is told so by its route
                    self._watchers.remove(sub)

    # -- the daemon-wide feed ------------------------------------------------

    def watch(self, limit: int, max_bytes: int) -> Subscription:
        """Attach a reader of every node's events as they are streamed (but the types of
        :data:`NOT_IN_FEED`), with a buffer of ``limit`` records and ``max_bytes`` bytes:
        what ``GET /v1/events`` reads. A reader that lets its buffer fill is dropped."""
        sub = Subscription(limit=limit, max_bytes=max_bytes)
        self._watchers.append(sub)
        return sub

    def unwatch(self, sub: Subscription) -> None:
        """Detach a reader of the feed (a no-op if it was dropped)."""
        if sub in self._watchers:
            self._watchers.remove(sub)

    @property
    def watchers(self) -> int:
        """How many readers follow the daemon-wide feed."""
        return len(self._watchers)

    # -- hubs ----------------------------------------------------------------

    def hub(self, node_id: str) -> Hub:
        """The node's stream hub (the node must be primed)."""
        hub = self._hubs.get(node_id)
        if hub is None:
            last = self._last[node_id]
            hub = self._hubs[node_id] = Hub(
                node_id, last, last=last, events=self._ring[0], size=self._ring[1]
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
        rows = await self._store.events(node_id, after=after, upto=upto, types=types, last=last)
        return [encode(node_id, r["sequence_number"], r["type"], r["data"]) for r in rows]

    async def first_logged(self, node_id: str) -> int | None:
        """The lowest number logged for a node (``None`` if none)."""
        return await self._store.first_event_number(node_id)

    # -- the log -------------------------------------------------------------

    async def flush(self) -> None:
        """Write every queued event, step mark and settlement now (after any write already under
        way), and stream the events that became durable.

        The write goes on if the caller is cancelled: a batch is never half-known.
        """
        task = asyncio.ensure_future(self._flush())
        task.add_done_callback(_retrieve)
        await asyncio.shield(task)

    async def _flush(self) -> None:
        async with self._flush_lock:
            batch, self._pending = self._pending, []
            handed, self._handed = self._handed, {}
            marks, self._marks = self._marks, {}
            settles, self._settles = self._settles, {}
            if not (batch or handed or marks or settles):
                return
            logged: dict[str, int] = {}
            for node_id, seq, *_ in batch:
                logged[node_id] = max(logged.get(node_id, 0), seq)
            # Numbers past a node's last logged event are deltas: their top is recorded.
            reserve = {n: top for n, top in handed.items() if top > logged.get(n, 0)}
            try:
                await self._store.append_events(
                    batch, reserve=reserve, marks=marks, settles=settles
                )
            except BaseException:
                # Kept for the next attempt, before anything queued meanwhile.
                self._pending[:0] = batch
                for node_id, top in handed.items():
                    self._handed[node_id] = max(top, self._handed.get(node_id, 0))
                for node_id, mark in marks.items():
                    self._marks.setdefault(node_id, mark)
                for node_id, settlement in settles.items():
                    self._settles.setdefault(node_id, settlement)
                raise
            for node_id, top in handed.items():
                if node_id in self._durable:  # (not forgotten meanwhile)
                    self._durable[node_id] = max(self._durable[node_id], top)
                    self._release(node_id)

    async def _flush_retrying(self) -> None:
        try:
            await self.flush()
        except Exception:
            log.exception("could not write node events; retrying")
            await asyncio.sleep(RETRY)

    async def _flush_forever(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self.flush()
            except Exception:
                log.exception("could not write node events; retrying")
                await asyncio.sleep(RETRY)
                self._wake.set()


def _retrieve(task: asyncio.Task[None]) -> None:
    """Consume a shielded write's outcome (its waiter may be gone); failures are retried."""
    if not task.cancelled():
        task.exception()
