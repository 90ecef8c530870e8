"""The crons' own store: ``heron_crons`` and the ticks they fired, ``heron_cron_firings``.

A tick is claimed in one transaction: its firing row is inserted (unique per
cron and tick) and the cron's ``next_fire_at`` advanced together, under a row
lock on PostgreSQL (SQLite's writers take the database lock at ``BEGIN``), so
two daemons sharing a database never both fire one tick.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, TypedDict, cast

import sqlalchemy as sa

from ... import api
from ..db import Database
from ._tables import cron_firings, crons

__all__ = ["CronRow", "CronStore", "FiringRow", "TickPlan"]


class CronRow(TypedDict):
    """A row of ``heron_crons``."""

    cron_id: str
    name: str | None
    profile: str
    schedule: str
    timezone: str
    template: dict[str, Any]
    """The node create body each firing sends (as given, checked at cron create)."""
    paused: bool
    next_fire_at: float | None
    last_fired_at: float | None
    last_node_id: str | None
    fire_count: int
    created_by: str | None
    call_key: str | None
    created_at: float
    updated_at: float
    deleted_at: float | None
    deleted_by: str | None


class FiringRow(TypedDict):
    """A row of ``heron_cron_firings``: one tick fired (or a manual run)."""

    firing_id: int
    cron_id: str
    tick: float | None
    node_id: str
    manual: bool
    fired_at: float
    status: api.CronFiringStatus
    error: str | None


TickPlan = Callable[[CronRow, float], tuple[float | None, float | None]]
"""``plan(cron_row, now)`` -> (the tick to fire now or ``None``, the next tick to wait for)."""

_LIVE = crons.c.deleted_at.is_(None)


class CronStore:
    """Reads and writes ``heron_crons`` and ``heron_cron_firings``."""

    def __init__(self, database: Database) -> None:
        self.db = database
        """The daemon's database."""

    async def insert_cron(self, row: CronRow) -> None:
        """Keep a new cron."""
        await self.db.run(self._insert_cron, row)

    def _insert_cron(self, row: CronRow) -> None:
        with self.db.engine.begin() as conn:
            conn.execute(crons.insert().values(**row))

    async def cron(self, cron_id: str) -> CronRow | None:
        """The cron's row (``None``: no such cron, or deleted)."""
        return _cron(await self.db.first(sa.select(crons).where(crons.c.cron_id == cron_id, _LIVE)))

    async def cron_by_key(self, created_by: str, call_key: str) -> CronRow | None:
        """The cron the node's tool call ``call_key`` made, deleted or not."""
        query = sa.select(crons).where(
            crons.c.created_by == created_by, crons.c.call_key == call_key
        )
        return _cron(await self.db.first(query))

    async def deleted_cron(self, cron_id: str) -> CronRow | None:
        """The cron's tombstone, if it was deleted."""
        query = sa.select(crons).where(crons.c.cron_id == cron_id, crons.c.deleted_at.is_not(None))
        return _cron(await self.db.first(query))

    async def list_crons(
        self, *, profile: str | None = None, paused: bool | None = None
    ) -> list[CronRow]:
        """Crons, oldest first, optionally only a profile's and paused (or active) ones."""
        query = sa.select(crons).where(_LIVE).order_by(crons.c.created_at, crons.c.cron_id)
        if profile is not None:
            query = query.where(crons.c.profile == profile)
        if paused is not None:
            query = query.where(crons.c.paused == paused)
        return cast(list[CronRow], await self.db.all(query))

    async def update_cron(
        self, cron_id: str, check: Callable[[CronRow], Mapping[str, Any]]
    ) -> CronRow | None:
        """Set ``check(row)``'s values on the cron, read under a row lock (``check`` may
        raise to refuse); the updated row, ``None`` if there is no such cron."""
        return await self.db.run(self._update_cron, cron_id, check)

    def _update_cron(
        self, cron_id: str, check: Callable[[CronRow], Mapping[str, Any]]
    ) -> CronRow | None:
        where = (crons.c.cron_id == cron_id, _LIVE)
        with self.db.engine.begin() as conn:
            found = conn.execute(sa.select(crons).where(*where).with_for_update()).first()
            if found is None:
                return None
            row = cast(CronRow, dict(found._mapping))
            values = {**check(row), "updated_at": time.time()}
            conn.execute(crons.update().where(*where).values(**values))
        return cast(CronRow, {**row, **values})

    async def earliest_fire(self) -> float | None:
        """The earliest ``next_fire_at`` of the active crons (``None``: none is waiting)."""
        query = sa.select(sa.func.min(crons.c.next_fire_at)).where(_LIVE, crons.c.paused.is_(False))
        earliest: float | None = await self.db.scalar(query)
        return earliest

    async def due_crons(self, now: float) -> list[str]:
        """Ids of the active crons whose next tick is at or before ``now``."""
        query = (
            sa.select(crons.c.cron_id)
            .where(_LIVE, crons.c.paused.is_(False), crons.c.next_fire_at <= now)
            .order_by(crons.c.next_fire_at)
        )
        return [r["cron_id"] for r in await self.db.all(query)]

    async def claim_tick(
        self, cron_id: str, now: float, plan: TickPlan, node_id: Callable[[float], str]
    ) -> FiringRow | None:
        """Claim the cron's due tick: insert its firing (``status`` ``claimed``, the node
        ``node_id(tick)``) and advance ``next_fire_at``, in one transaction.

        ``plan(row, now)`` picks the tick and the next one. Returns the firing, or
        ``None`` when there is nothing to fire (paused, deleted, not due, or another
        daemon fired the tick first: then only ``next_fire_at`` moves on).
        """
        return await self.db.run(self._claim_tick, cron_id, now, plan, node_id)

    def _claim_tick(
        self, cron_id: str, now: float, plan: TickPlan, node_id: Callable[[float], str]
    ) -> FiringRow | None:
        where = (crons.c.cron_id == cron_id, _LIVE)
        with self.db.engine.begin() as conn:
            found = conn.execute(sa.select(crons).where(*where).with_for_update()).first()
            if found is None or found.paused or found.next_fire_at is None:
                return None
            if found.next_fire_at > now:
                return None  # another daemon fired it and moved it on
            tick, following = plan(cast(CronRow, dict(found._mapping)), now)
            values: dict[str, Any] = {"next_fire_at": following, "updated_at": now}
            taken = tick is None or (
                conn.execute(
                    sa.select(cron_firings.c.firing_id).where(
                        cron_firings.c.cron_id == cron_id, cron_firings.c.tick == tick
                    )
                ).first()
                is not None
            )
            firing: FiringRow | None = None
            if not taken:
                assert tick is not None
                firing = _fire(conn, cron_id, tick, node_id(tick), now)
                values = {**values, **_fired(firing)}
            conn.execute(crons.update().where(*where).values(**values))
        return firing

    async def add_manual_firing(self, cron_id: str, node_id: str) -> FiringRow | None:
        """Record a manual run of the cron (``claimed``); ``None`` if there is no such cron."""
        return await self.db.run(self._add_manual_firing, cron_id, node_id)

    def _add_manual_firing(self, cron_id: str, node_id: str) -> FiringRow | None:
        now = time.time()
        where = (crons.c.cron_id == cron_id, _LIVE)
        with self.db.engine.begin() as conn:
            if (
                conn.execute(sa.select(crons.c.cron_id).where(*where).with_for_update()).first()
                is None
            ):
                return None
            firing = _fire(conn, cron_id, None, node_id, now)
            conn.execute(crons.update().where(*where).values(**_fired(firing), updated_at=now))
        return firing

    async def finish_firing(self, firing_id: int, status: str, error: str | None = None) -> None:
        """Mark a firing ``created`` or ``failed`` (with why)."""
        await self.db.run(self._finish_firing, firing_id, status, error)

    def _finish_firing(self, firing_id: int, status: str, error: str | None) -> None:
        with self.db.engine.begin() as conn:
            conn.execute(
                cron_firings.update()
                .where(cron_firings.c.firing_id == firing_id)
                .values(status=status, error=error)
            )

    async def claimed_firings(self) -> list[FiringRow]:
        """Firings whose node may not exist yet (a crash came between claim and create)."""
        query = (
            sa.select(cron_firings)
            .where(cron_firings.c.status == "claimed")
            .order_by(cron_firings.c.firing_id)
        )
        return cast(list[FiringRow], await self.db.all(query))

    async def firings(
        self, cron_id: str, *, limit: int, before: int | None = None
    ) -> list[FiringRow]:
        """The cron's firings, newest first, at most ``limit`` (older than the firing
        ``before``, if given)."""
        query = (
            sa.select(cron_firings)
            .where(cron_firings.c.cron_id == cron_id)
            .order_by(cron_firings.c.firing_id.desc())
            .limit(limit)
        )
        if before is not None:
            query = query.where(cron_firings.c.firing_id < before)
        return cast(list[FiringRow], await self.db.all(query))


def _fire(
    conn: sa.Connection, cron_id: str, tick: float | None, node_id: str, now: float
) -> FiringRow:
    """Insert a ``claimed`` firing of the cron (``tick`` ``None``: a manual run); its row."""
    firing: dict[str, Any] = {
        "cron_id": cron_id,
        "tick": tick,
        "node_id": node_id,
        "manual": tick is None,
        "fired_at": now,
        "status": "claimed",
        "error": None,
    }
    key = conn.execute(cron_firings.insert().values(**firing)).inserted_primary_key
    assert key is not None
    return cast(FiringRow, {**firing, "firing_id": int(key[0])})


def _fired(firing: FiringRow) -> dict[str, Any]:
    """What a firing changes on its cron."""
    return {
        "last_fired_at": firing["fired_at"],
        "last_node_id": firing["node_id"],
        "fire_count": crons.c.fire_count + 1,
    }


def _cron(found: dict[str, Any] | None) -> CronRow | None:
    return cast(CronRow | None, found)
