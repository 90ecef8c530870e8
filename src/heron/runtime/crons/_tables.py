"""Crons' tables: schedules that create nodes, and the ticks they fired."""

from __future__ import annotations

import sqlalchemy as sa

from ..db import Schema, Text, metadata

__all__ = ["CRONS_SCHEMA", "cron_firings", "crons"]

crons = sa.Table(
    "heron_crons",
    metadata,
    sa.Column("cron_id", sa.String(128), primary_key=True),
    sa.Column("name", Text),
    # The profile its nodes run under (the template's, else ``default``): lists filter on it.
    sa.Column("profile", sa.String(128), nullable=False, index=True),
    sa.Column("schedule", Text, nullable=False),
    sa.Column("timezone", sa.String(64), nullable=False),
    # The node create body each firing sends (as given, validated at cron create).
    sa.Column("template", sa.JSON, nullable=False),
    sa.Column("paused", sa.Boolean, nullable=False),
    # The next tick to fire (NULL while paused or deleted): the scheduler sleeps until
    # the earliest one.
    sa.Column("next_fire_at", sa.Float, index=True),
    sa.Column("last_fired_at", sa.Float),
    sa.Column("last_node_id", sa.String(128)),
    sa.Column("fire_count", sa.Integer, nullable=False),
    # The node whose cron-create tool made it (and that call's key: a call DBOS runs
    # again after a crash finds its cron), if a node made it.
    sa.Column("created_by", sa.String(128)),
    sa.Column("call_key", sa.String(128)),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
    # Deleted crons stay as tombstones (left out of every read) so a cron-delete call
    # run again after a crash can tell it deleted the cron itself.
    sa.Column("deleted_at", sa.Float),
    sa.Column("deleted_by", sa.String(128)),
)

cron_firings = sa.Table(
    "heron_cron_firings",
    metadata,
    sa.Column("firing_id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("cron_id", sa.String(128), nullable=False),
    # The scheduled instant fired (NULL for a manual run): unique per cron, so no
    # tick ever makes two nodes, whatever crashes or daemons race.
    sa.Column("tick", sa.Float),
    sa.Column("node_id", sa.String(128), nullable=False),
    sa.Column("manual", sa.Boolean, nullable=False),
    sa.Column("fired_at", sa.Float, nullable=False),
    # claimed (the node is being created), created, or failed (``error`` says why).
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("error", Text),
    sa.Index("ix_heron_cron_firings_tick", "cron_id", "tick", unique=True),
    sa.Index("ix_heron_cron_firings_status", "status"),
)


def _v1(conn: sa.Connection) -> None:
    """Crons and their firings."""
    metadata.create_all(conn, tables=[crons, cron_firings])


CRONS_SCHEMA = Schema("crons", steps=(_v1,), legacy=(8,))
"""Crons' tables (a firing names its node, and is kept as the cron's history)."""
