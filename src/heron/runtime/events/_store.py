"""The events' table: each node's numbered log, written in batches.

A batch writes its events, the numbers handed out to events that are not logged (a
text delta's), the step marks of the steps that ended and the settlements of idle
nodes in one transaction: a node's settlement is durable exactly when the events that
say so are.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict, cast

import sqlalchemy as sa

from ..db import Database, events, nodes
from ..nodes import Outcome, settle_idle

__all__ = ["EVENTS_CHANNEL", "NOTIFY_BYTES", "EventRow", "EventStore", "Settlement", "StepMark"]

log = logging.getLogger("heron.runtime")

EVENTS_CHANNEL = "heron_events"
"""The PostgreSQL ``NOTIFY`` channel a batch of logged events is announced on."""

NOTIFY_BYTES = 7900
"""At most this many bytes per notification (PostgreSQL refuses payloads of 8000)."""


class EventRow(TypedDict):
    """A row of ``heron_events``: one logged event of a node."""

    node_id: str
    sequence_number: int
    type: str
    data: Any
    created_at: float


@dataclass(frozen=True, kw_only=True, slots=True)
class StepMark:
    """A workflow step that ended, written with its events (see ``_log.py``)."""

    key: str
    """The step, as ``run:step``."""
    usage: tuple[int, int] | None = None
    """A model turn's input and output tokens, counted once per ``key``; else ``None``."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Settlement:
    """An idle node's settlement, written with its events."""

    outcome: Outcome
    """The outcome it settles with."""
    status: str
    """The status it takes."""


class EventStore:
    """Reads and writes the events' table (and, with a batch, the node columns it moves)."""

    def __init__(self, database: Database, *, origin: str = "") -> None:
        self.db = database
        """The daemon's database."""
        self.origin = origin
        """Who writes (named in each notification, so a daemon knows its own)."""

    async def append_events(
        self,
        batch: Sequence[tuple[str, int, str, Any, float]],
        *,
        reserve: Mapping[str, int] | None = None,
        marks: Mapping[str, StepMark] | None = None,
        settles: Mapping[str, Settlement] | None = None,
    ) -> None:
        """Write ``(node_id, sequence_number, type, data, created_at)`` events, raise each
        node's ``events_reserved`` to ``reserve[node]`` (numbers of unlogged events handed
        out), set the step ``marks`` (counting their usage) and settle the idle nodes of
        ``settles`` (as :meth:`settle`), in one transaction."""
        if batch or reserve or marks or settles:
            await self.db.run(self._append_events, batch, reserve or {}, marks or {}, settles or {})

    def _append_events(
        self,
        batch: Sequence[tuple[str, int, str, Any, float]],
        reserve: Mapping[str, int],
        marks: Mapping[str, StepMark],
        settles: Mapping[str, Settlement],
    ) -> None:
        rows = [
            {"node_id": n, "sequence_number": s, "type": t, "data": d, "created_at": c}
            for n, s, t, d, c in batch
        ]
        try:
            with self.db.engine.begin() as conn:
                if rows:
                    conn.execute(events.insert(), rows)
                _numbers_and_marks(conn, reserve, marks, settles)
                self._notify(conn, rows)
            return
        except sa.exc.OperationalError:
            raise  # the database is unavailable: nothing was written, the batch is retried
        except Exception:
            # One bad row (a number already taken, a value the column cannot hold) must
            # not lose the others, nor be retried forever: write row by row, drop failures.
            pass
        written: list[dict[str, Any]] = []
        for row in rows:
            try:
                with self.db.engine.begin() as conn:
                    conn.execute(events.insert(), [row])
                written.append(row)
            except sa.exc.OperationalError:
                raise
            except Exception as exc:
                log.error(
                    "dropped event %s #%s of node %s: %s",
                    row["type"],
                    row["sequence_number"],
                    row["node_id"],
                    exc,
                )
        with self.db.engine.begin() as conn:
            _numbers_and_marks(conn, reserve, marks, settles)
            self._notify(conn, written)

    def _notify(self, conn: sa.Connection, rows: Sequence[Mapping[str, Any]]) -> None:
        if rows and conn.dialect.name == "postgresql":
            for payload in notifications(self.origin, rows):
                conn.execute(sa.select(sa.func.pg_notify(EVENTS_CHANNEL, payload)))

    async def last_sequence(self, node_id: str) -> int:
        """The highest event sequence number written for a node (0 if none)."""
        return (await self.event_numbers(node_id))[0]

    async def event_numbers(self, node_id: str) -> tuple[int, int]:
        """The highest event number logged for a node and the highest reserved (0 if none)."""
        return await self.db.run(self._event_numbers, node_id)

    def _event_numbers(self, node_id: str) -> tuple[int, int]:
        last = sa.select(sa.func.max(events.c.sequence_number)).where(events.c.node_id == node_id)
        reserved = sa.select(nodes.c.events_reserved).where(nodes.c.node_id == node_id)
        with self.db.engine.connect() as conn:
            return int(conn.execute(last).scalar() or 0), int(conn.execute(reserved).scalar() or 0)

    async def events(
        self,
        node_id: str,
        *,
        after: int = 0,
        upto: int | None = None,
        types: Sequence[str] | None = None,
        last: int | None = None,
    ) -> list[EventRow]:
        """A node's logged events numbered above ``after`` (and at most ``upto``), in
        order; only of ``types`` when given; only the ``last`` such ones when given."""
        return await self.db.run(self._events, node_id, after, upto, types, last)

    def _events(
        self,
        node_id: str,
        after: int,
        upto: int | None,
        types: Sequence[str] | None,
        last: int | None,
    ) -> list[EventRow]:
        number = events.c.sequence_number
        query = sa.select(events).where(events.c.node_id == node_id, number > after)
        if upto is not None:
            query = query.where(number <= upto)
        if types is not None:
            query = query.where(events.c.type.in_(list(types)))
        if last is not None:
            query = query.order_by(number.desc()).limit(last)
        else:
            query = query.order_by(number)
        with self.db.engine.connect() as conn:
            rows = [cast(EventRow, dict(r._mapping)) for r in conn.execute(query)]
        return rows[::-1] if last is not None else rows

    async def events_after(self, cursors: Mapping[str, int]) -> list[EventRow]:
        """The logged events of several nodes, each numbered above its cursor, in one
        query: by node, in number order."""
        return await self.db.run(self._events_after, dict(cursors)) if cursors else []

    def _events_after(self, cursors: Mapping[str, int]) -> list[EventRow]:
        number = events.c.sequence_number
        query = (
            sa.select(events)
            .where(
                sa.or_(*(sa.and_(events.c.node_id == n, number > c) for n, c in cursors.items()))
            )
            .order_by(events.c.node_id, number)
        )
        with self.db.engine.connect() as conn:
            return [cast(EventRow, dict(r._mapping)) for r in conn.execute(query)]

    async def first_event_number(self, node_id: str) -> int | None:
        """The lowest event number logged for a node (``None`` if none)."""
        query = sa.select(sa.func.min(events.c.sequence_number)).where(events.c.node_id == node_id)
        value = await self.db.scalar(query)
        return None if value is None else int(value)


def notifications(origin: str, rows: Sequence[Mapping[str, Any]]) -> Iterator[str]:
    """The payloads announcing ``rows``: ``{"o": origin, "n": [[node, first, last] ...]}``,
    each under :data:`NOTIFY_BYTES` (a batch of many nodes takes several)."""
    span: dict[str, list[int]] = {}
    for row in rows:
        node_id, seq = str(row["node_id"]), int(row["sequence_number"])
        found = span.get(node_id)
        if found is None:
            span[node_id] = [seq, seq]
        else:
            found[0], found[1] = min(found[0], seq), max(found[1], seq)
    head = json.dumps(origin)
    size = len(head) + 16
    chunk: list[str] = []
    for node_id, (first, last) in span.items():
        item = json.dumps([node_id, first, last], separators=(",", ":"))
        if chunk and size + len(item) + 1 > NOTIFY_BYTES:
            yield f'{{"o":{head},"n":[{",".join(chunk)}]}}'
            chunk, size = [], len(head) + 16
        chunk.append(item)
        size += len(item) + 1
    if chunk:
        yield f'{{"o":{head},"n":[{",".join(chunk)}]}}'


def _numbers_and_marks(
    conn: sa.Connection,
    reserve: Mapping[str, int],
    marks: Mapping[str, StepMark],
    settles: Mapping[str, Settlement],
) -> None:
    for node_id, settlement in settles.items():
        settle_idle(conn, node_id, settlement.outcome, settlement.status)
    reserved = nodes.c.events_reserved
    for node_id, upto in reserve.items():
        conn.execute(
            nodes.update()
            .where(nodes.c.node_id == node_id, sa.or_(reserved.is_(None), reserved < upto))
            .values(events_reserved=upto)
        )
    mark = nodes.c.step_mark
    for node_id, step in marks.items():
        if step.usage is not None:
            # Once per step: a step run again after its mark was written counts nothing.
            input_tokens, output_tokens = step.usage
            conn.execute(
                nodes.update()
                .where(nodes.c.node_id == node_id, sa.or_(mark.is_(None), mark != step.key))
                .values(
                    turns=nodes.c.turns + 1,
                    input_tokens=nodes.c.input_tokens + input_tokens,
                    output_tokens=nodes.c.output_tokens + output_tokens,
                    updated_at=time.time(),
                )
            )
        conn.execute(nodes.update().where(nodes.c.node_id == node_id).values(step_mark=step.key))
