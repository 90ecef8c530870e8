"""Node events: numbered per node, published live, and logged durably.

Every event gets the node's next ``sequence_number``. Live subscribers get every
event; all but text deltas are also written to the ``heron_events`` table, in
batches a background task flushes as soon as the loop is free, so numbering
continues across restarts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._store import Store

__all__ = ["Event", "EventLog"]

log = logging.getLogger("heron.runtime")

NOT_LOGGED = frozenset({"node.output_text.delta"})
"""Event types only streamed live (their text is logged once, in ``output_text.done``)."""


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
    """The event's JSON payload."""
    created_at: float
    """When it happened (Unix time)."""


Subscriber = Callable[[Event], None]
"""Receives each event as it is published (must not block)."""


class EventLog:
    """Numbers, publishes and logs node events; see the module docstring."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._next: dict[str, int] = {}
        self._pending: list[tuple[str, int, str, Any, float]] = []
        self._wake = asyncio.Event()
        self._flusher: asyncio.Task[None] | None = None
        self._subscribers: dict[str, list[Subscriber]] = {}

    def start(self) -> None:
        """Start the background writer (inside the running loop)."""
        self._flusher = asyncio.create_task(self._flush_forever(), name="heron-event-log")

    async def stop(self) -> None:
        """Write what is pending and stop the writer."""
        if self._flusher is not None:
            self._flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._flusher
        await self.flush()

    async def prime(self, node_id: str) -> None:
        """Continue a node's numbering from its log (before publishing after a restart)."""
        if node_id not in self._next:
            last = await self._store.last_sequence(node_id)
            self._next.setdefault(node_id, last + 1)

    def fresh(self, node_id: str) -> None:
        """Start numbering a node that was just created (it has no events yet)."""
        self._next.setdefault(node_id, 1)

    def publish(self, node_id: str, type: str, data: dict[str, Any]) -> Event:
        """Number ``data`` as the node's next event, hand it to subscribers, queue it to log.

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
        for subscriber in self._subscribers.get(node_id, ()):
            try:
                subscriber(event)
            except Exception:  # one broken subscriber must not stop the node or the others
                log.exception("event subscriber failed")
        return event

    def subscribe(self, node_id: str, subscriber: Subscriber) -> Callable[[], None]:
        """Receive the node's events from now on; returns the function that unsubscribes."""
        self._subscribers.setdefault(node_id, []).append(subscriber)

        def unsubscribe() -> None:
            listeners = self._subscribers.get(node_id, [])
            with contextlib.suppress(ValueError):
                listeners.remove(subscriber)
            if not listeners:
                self._subscribers.pop(node_id, None)

        return unsubscribe

    async def flush(self) -> None:
        """Write every queued event now."""
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
