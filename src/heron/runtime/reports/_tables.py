"""Reports' table: what nodes pushed (progress, milestones, final reports)."""

from __future__ import annotations

import sqlalchemy as sa

from ..db import Schema, Text, add_column, metadata

__all__ = ["REPORTS_SCHEMA", "reports"]

reports = sa.Table(
    "heron_reports",
    metadata,
    sa.Column("report_id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("node_id", sa.String(128), nullable=False, index=True),
    # progress, milestone or final
    sa.Column("tier", sa.String(16), nullable=False),
    sa.Column("title", Text),
    sa.Column("body", Text, nullable=False),
    # Where the report was also written on disk (final reports), if anywhere.
    sa.Column("path", Text),
    sa.Column("created_at", sa.Float, nullable=False),
    # The push-report call that made it (run, DBOS step, call id): a call DBOS runs
    # again after a crash finds its report instead of adding a second one.
    sa.Column("call_key", sa.String(128)),
    sa.Index("ix_heron_reports_call_key", "node_id", "call_key", unique=True),
)


def _v1(conn: sa.Connection) -> None:
    """The reports table."""
    metadata.create_all(conn, tables=[reports])


def _v2_call_key(conn: sa.Connection) -> None:
    """Reports remember the tool call that pushed them (idempotent push-report)."""
    add_column(conn, "heron_reports", "call_key", "VARCHAR(128)")
    indexes = {i["name"] for i in sa.inspect(conn).get_indexes("heron_reports")}
    if "ix_heron_reports_call_key" not in indexes:
        conn.execute(
            sa.text(
                "CREATE UNIQUE INDEX ix_heron_reports_call_key ON heron_reports (node_id, call_key)"
            )
        )


REPORTS_SCHEMA = Schema("reports", steps=(_v1, _v2_call_key), per_node=(reports,), legacy=(4, 6))
"""Reports' tables; a node's reports are deleted with it."""
