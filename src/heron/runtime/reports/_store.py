"""The reports part of :class:`~heron.runtime.nodes._store.Store` (kept apart for size)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

import sqlalchemy as sa

from ..db._database import reports

__all__ = ["ReportRows"]

P = ParamSpec("P")
R = TypeVar("R")

Row = dict[str, Any]


class ReportRows:
    """Reads and writes ``heron_reports``; mixed into ``Store`` (its ``engine`` and ``_run``)."""

    engine: sa.Engine
    """The database (set by ``Store``)."""

    async def _run(self, func: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        raise NotImplementedError  # Store's: runs ``func`` on its thread pool

    async def add_report(
        self,
        node_id: str,
        *,
        tier: str,
        title: str | None,
        body: str,
        path: str | None,
        call_key: str | None = None,
    ) -> Row:
        """Keep a report a node pushed; returns its row (with ``report_id``).

        ``call_key`` names the tool call that pushed it (unique per node).
        """
        row: Row = {
            "node_id": node_id,
            "tier": tier,
            "title": title,
            "body": body,
            "path": path,
            "created_at": time.time(),
            "call_key": call_key,
        }
        return await self._run(self._add_report, row)

    async def report_by_key(self, node_id: str, call_key: str) -> Row | None:
        """The report the node's call ``call_key`` pushed, if it did."""
        query = sa.select(reports).where(
            reports.c.node_id == node_id, reports.c.call_key == call_key
        )
        return await self._run(self._first, query)

    def _first(self, query: sa.Select[Any]) -> Row | None:
        with self.engine.connect() as conn:
            found = conn.execute(query).first()
        return dict(found._mapping) if found is not None else None

    def _add_report(self, row: Row) -> Row:
        with self.engine.begin() as conn:
            key = conn.execute(reports.insert().values(**row)).inserted_primary_key
        assert key is not None
        return {"report_id": int(key[0]), **row}

    async def reports(
        self,
        node_id: str,
        *,
        limit: int | None = None,
        newest_first: bool = True,
        tier: str | None = None,
        after: float | None = None,
    ) -> list[Row]:
        """A node's reports, newest first (or oldest first), at most ``limit``; ``after``:
        only those made later than that time."""
        return await self._run(self._reports, node_id, limit, newest_first, tier, after)

    def _reports(
        self,
        node_id: str,
        limit: int | None,
        newest_first: bool,
        tier: str | None,
        after: float | None,
    ) -> list[Row]:
        order = reports.c.report_id.desc() if newest_first else reports.c.report_id
        # Without call_key: the rows are the report as the wire shows it (api.Report).
        shown = [c for c in reports.c if c.name != "call_key"]
        query = sa.select(*shown).where(reports.c.node_id == node_id).order_by(order)
        if tier is not None:
            query = query.where(reports.c.tier == tier)
        if after is not None:
            query = query.where(reports.c.created_at > after)
        if limit is not None:
            query = query.limit(limit)
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(query)]
