"""The reports' own store: ``heron_reports``, one row per report a node pushed."""

from __future__ import annotations

import time
from typing import NotRequired, TypedDict, cast

import sqlalchemy as sa

from ... import api
from ..db import Database
from ._tables import reports

__all__ = ["ReportRow", "ReportStore"]


class ReportRow(TypedDict):
    """A row of ``heron_reports``."""

    report_id: int
    node_id: str
    tier: api.ReportTier
    """``progress``, ``milestone`` or ``final``."""
    title: str | None
    body: str
    path: str | None
    """Where a final report was also written on disk."""
    created_at: float
    call_key: NotRequired[str | None]
    """The push-report call that made it (left out of lists: the wire never shows it)."""


class ReportStore:
    """Reads and writes ``heron_reports``."""

    def __init__(self, database: Database) -> None:
        self.db = database

    async def add_report(
        self,
        node_id: str,
        *,
        tier: api.ReportTier,
        title: str | None,
        body: str,
        path: str | None,
        call_key: str | None = None,
    ) -> ReportRow:
        """Keep a report a node pushed; returns its row (with ``report_id``).

        ``call_key`` names the tool call that pushed it (unique per node).
        """
        return await self.db.write(_add_report, node_id, tier, title, body, path, call_key)

    async def report_by_key(self, node_id: str, call_key: str) -> ReportRow | None:
        """The report the node's call ``call_key`` pushed, if it did."""
        query = sa.select(reports).where(
            reports.c.node_id == node_id, reports.c.call_key == call_key
        )
        return cast(ReportRow | None, await self.db.first(query))

    async def reports(
        self,
        node_id: str,
        *,
        limit: int | None = None,
        newest_first: bool = True,
        tier: str | None = None,
        after: float | None = None,
    ) -> list[ReportRow]:
        """A node's reports, newest first (or oldest first), at most ``limit``; ``after``:
        only those made later than that time."""
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
        return cast(list[ReportRow], await self.db.all(query))


def _add_report(
    conn: sa.Connection,
    node_id: str,
    tier: api.ReportTier,
    title: str | None,
    body: str,
    path: str | None,
    call_key: str | None,
) -> ReportRow:
    created_at = time.time()
    values = {
        "node_id": node_id,
        "tier": tier,
        "title": title,
        "body": body,
        "path": path,
        "created_at": created_at,
        "call_key": call_key,
    }
    key = conn.execute(reports.insert().values(**values)).inserted_primary_key
    assert key is not None
    return ReportRow(
        report_id=int(key[0]),
        node_id=node_id,
        tier=tier,
        title=title,
        body=body,
        path=path,
        created_at=created_at,
        call_key=call_key,
    )
