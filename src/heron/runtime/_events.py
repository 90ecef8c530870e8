"""Node events: numbered per node, published to the node's stream hub, logged durably.

Every event gets the node's next ``sequence_number`` and goes through the node's
:class:`~._stream.Hub` (replay ring and live subscribers). All but text deltas
are also written to the ``heron_events`` table, in batches a background task
flushes as soon as the loop is free.

Numbers are *reserved* durably ahead of use (``heron_nodes.events_reserved``,
in blocks of :data:`RESERVE_BLOCK`): a daemon killed before its last events
were flushed — or whose deltas were never logged — restarts numbering above
every number it may have handed out, so a client's cursor never names two
different events. Reserving happens in the background well before a block runs
out; only a burst outrunning it (no pause of the loop for half a block) makes
one synchronous write.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from ._store import Store
from ._stream import RING_BYTES, RING_EVENTS, Hub, Record, encode

__all__ = ["RESERVE_BLOCK", "Event", "EventLog"]

log = logging.getLogger("heron.runtime")

NOT_LOGGED = frozenset({"node.output_text.delta"})
"""Event types only streamed live (their text is logged once, in ``output_text.done``)."""

RESERVE_BLOCK = 1024
"""How many sequence numbers are reserved durably at a time."""

IDLE_HUBS = 128
"""How many hubs of settled nodes nobody watches are kept (for resumes with deltas)."""


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
        self, store: Store, *, ring_events: int = RING_EVENTS, ring_bytes: int = RING_BYTES
    ) -> None:
        self._store = store
        self._next: dict[str, int] = {}
        self._reserved: dict[str, int] = {}
        self._reserving: dict[str, asyncio.Task[None]] = {}
        self._hubs: dict[str, Hub] = {}
        self._idle: OrderedDict[str, None] = OrderedDict()
        self._ring = (ring_events, ring_bytes)
        self._pending: list[tuple[str, int, str, Any, float]] = []
        self._wake = asyncio.Event()
        self._flush_lock = asyncio.Lock()
        self._flusher: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the background writer (inside the running loop)."""
        self._flusher = asyncio.create_task(self._flush_forever(), name="heron-event-log")

    async def stop(self) -> None:
        """Write what is pending and stop the writer."""
        if self._flusher is not None:
            self._flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._flusher
        for task in list(self._reserving.values()):
            with contextlib.suppress(Exception):
                await task
        await self.flush()

    # -- numbering -----------------------------------------------------------

    async def prime(self, node_id: str) -> None:
        """Continue a node's numbering above anything handed out before (after a restart)."""
        if node_id in self._next:
            return
        last, reserved = await self._store.event_numbers(node_id)
        if node_id in self._next:  # primed meanwhile
            return
        start = max(last, reserved) + 1
        self._next[node_id] = start
        self._reserved[node_id] = start - 1
        self._reserve_soon(node_id)

    def fresh(self, node_id: str, reserved: int = 0) -> None:
        """Start numbering a node just created with ``events_reserved = reserved``
        (``0``: none yet, and its first event reserves a block before it is numbered)."""
        self._next.setdefault(node_id, 1)
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

    def _reserve_soon(self, node_id: str) -> None:
        if node_id in self._reserving:
            return
        task = asyncio.ensure_future(self._reserve(node_id))
        self._reserving[node_id] = task
        task.add_done_callback(lambda _: self._reserving.pop(node_id, None))

    async def _reserve(self, node_id: str) -> None:
        upto = self._next[node_id] - 1 + RESERVE_BLOCK
        try:
            await self._store.reserve_events(node_id, upto)
        except Exception:
            log.exception("could not reserve event numbers of node %s", node_id)
            return
        # Only numbers known to be durably reserved are handed out without a write.
        self._reserved[node_id] = max(self._reserved.get(node_id, 0), upto)

    # -- publishing ----------------------------------------------------------

    def publish(self, node_id: str, type: str, data: dict[str, Any]) -> Event:
        """Number ``data`` as the node's next event, stream it, queue it to log.

        The node must have been primed (:meth:`prime` or :meth:`fresh`) in this process.
        """
        seq = self._next.get(node_id)
        if seq is None:
            raise RuntimeError(f"events of node {node_id} published before its numbering was read")
        reserved = self._reserved.get(node_id, 0)
        if seq > reserved:
            # The background reservation fell behind a burst: reserve now, before the
            # number leaves this process (a rare, single, small write).
            upto = seq - 1 + RESERVE_BLOCK
            self._store.reserve_events_now(node_id, upto)
            self._reserved[node_id] = reserved = upto
        if reserved - seq < RESERVE_BLOCK // 2:
            self._reserve_soon(node_id)
        self._next[node_id] = seq + 1
        event = Event(
            node_id=node_id, sequence_number=seq, type=type, data=data, created_at=time.time()
        )
        if type not in NOT_LOGGED:
            self._pending.append((node_id, seq, type, data, event.created_at))
            self._wake.set()
        hub = self.hub(node_id)
        try:
            hub.add(encode(node_id, seq, type, data))
        except Exception:  # a value JSON cannot carry must not stop the node
            log.exception("could not stream event %s of node %s", type, node_id)
        if type == "node.settled":
            self._release(node_id)
        return event

    # -- hubs ----------------------------------------------------------------

    def hub(self, node_id: str) -> Hub:
        """The node's stream hub (the node must be primed)."""
        hub = self._hubs.get(node_id)
        if hub is None:
            floor = self._next[node_id] - 1
            hub = self._hubs[node_id] = Hub(
                node_id, floor, events=self._ring[0], size=self._ring[1]
            )
        self._idle.pop(node_id, None)
        return hub

    def _release(self, node_id: str) -> None:
        """Note a hub nobody may need soon; drop the oldest such hubs past :data:`IDLE_HUBS`."""
        self._idle[node_id] = None
        self._idle.move_to_end(node_id)
        while len(self._idle) > IDLE_HUBS:
            oldest, _ = self._idle.popitem(last=False)
            hub = self._hubs.get(oldest)
            if hub is not None and hub.subscribers == 0:
                del self._hubs[oldest]

    def released(self, node_id: str) -> None:
        """A reader left: the hub of a settled node may go once nobody watches it."""
        hub = self._hubs.get(node_id)
        if hub is not None and hub.settled:
            self._release(node_id)

    async def logged(self, node_id: str, *, after: int, upto: int | None = None) -> list[Record]:
        """The node's logged events numbered in ``(after, upto]``, as stream records."""
        await self.flush()  # what is still queued is part of the log
        rows = await self._store.events(node_id, after=after, upto=upto)
        return [encode(node_id, r["sequence_number"], r["type"], r["data"]) for r in rows]

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
