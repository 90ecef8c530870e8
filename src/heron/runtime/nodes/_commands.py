"""Stops sent to a node whose run is going in another daemon on the same PostgreSQL.

A message needs nothing of this: it is queued in the database, and the run reads its
inbox between turns. An interrupt or a close (any :class:`~._runs.Stop`) of a run that is
not in this process is written to the node's row (``extra["stop_request"]``: the run it
is meant for and the stop) and notified on :data:`~._store.COMMANDS_CHANNEL` in the same
transaction. The daemon running that run applies it as a local stop: on the
notification; should it miss that (its listening connection was down), once the
connection is back; and when a run registers (it resumes after a crash, or started
after the request). The sender waits a bounded time for the effect, the node's row no
longer running that run, so its answer says what became of the node, as for a local one.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import time
from typing import TYPE_CHECKING

from ._runs import Active, Stop
from ._store import COMMANDS_CHANNEL

if TYPE_CHECKING:
    from ._engine import Engine

__all__ = ["ACK_TIMEOUT", "RemoteStops"]

log = logging.getLogger("heron.runtime")

ACK_TIMEOUT = 10.0
"""Seconds a stop waits for the daemon running the node to apply it."""

POLL = 0.025
"""Seconds between reads of the node's row while waiting for that."""


class RemoteStops:
    """Sends stops to the daemon running a node and applies those sent to this one."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self.enabled = engine.events.listen(COMMANDS_CHANNEL, self._notified, self._sweep)
        """Other daemons may share the database (PostgreSQL)."""

    async def stop(self, node_id: str, run: int, stop: Stop, registered: asyncio.Event) -> None:
        """Ask whichever daemon runs the node's run ``run`` to ``stop`` it, and return once
        it has (the row no longer runs ``run``), the run registered here, or after
        :data:`ACK_TIMEOUT`."""
        engine = self._engine
        await engine.store.request_stop(node_id, run, dataclasses.asdict(stop))
        deadline = time.monotonic() + ACK_TIMEOUT
        while time.monotonic() < deadline:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(registered.wait(), POLL)
            if registered.is_set():
                return
            row = await engine.store.node(node_id)
            if row is None or row["status"] != "running" or row["runs"] != run:
                return

    def registered(self, active: Active) -> None:
        """A run registered here: apply a stop sent for it before it did."""
        if self.enabled:
            self._engine.spawn(self._apply([active.node_id]))

    def _notified(self, payload: str) -> None:
        note = json.loads(payload)
        node_id, run = str(note["node_id"]), int(note["run"])
        active = self._engine.active.get(node_id)
        if active is not None and active.run == run:
            self._engine.spawn(self._apply([node_id]))

    async def _sweep(self) -> None:
        """The listening connection is (back) up: apply what it may have missed."""
        if self._engine.active:
            await self._apply(list(self._engine.active))

    async def _apply(self, node_ids: list[str]) -> None:
        engine = self._engine
        try:
            requests = await engine.store.stop_requests(node_ids)
        except Exception:
            log.exception("could not read the stops sent to nodes running here")
            return
        for node_id, request in requests.items():
            active = engine.active.get(node_id)
            if active is None or active.run != request["run"] or active.stop is not None:
                continue  # not this run, or it is stopping already
            engine.spawn(self._stop_here(node_id, request["run"], Stop(**request["stop"])))

    async def _stop_here(self, node_id: str, run: int, stop: Stop) -> None:
        try:
            await self._engine.stop_run(node_id, run, stop)
        except Exception:
            log.exception("stopping node %s as another daemon asked failed", node_id)
