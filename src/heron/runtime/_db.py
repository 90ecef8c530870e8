"""The daemon's database: one SQLAlchemy engine shared with DBOS, its tables and migrations.

SQLite (a file under ``HERON_HOME``) by default; PostgreSQL when
``HERON_DATABASE_URL`` names one. DBOS keeps its workflow tables in the same
database (schema ``dbos`` on PostgreSQL, the same file on SQLite).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event

__all__ = [
    "MIGRATIONS",
    "create_engine",
    "database_kind",
    "events",
    "messages",
    "metadata",
    "migrate",
    "nodes",
    "outcomes",
    "redact_url",
]

metadata = sa.MetaData()

nodes = sa.Table(
    "heron_nodes",
    metadata,
    sa.Column("node_id", sa.String(128), primary_key=True),
    sa.Column("status", sa.String(16), nullable=False, index=True),
    sa.Column("root", sa.Boolean, nullable=False),
    sa.Column("root_lifecycle", sa.String(16), nullable=False),
    sa.Column("mode", sa.String(16), nullable=False),
    sa.Column("name", sa.Text),
    sa.Column("description", sa.Text),
    sa.Column("prompt", sa.Text),
    sa.Column("kind", sa.Text),
    sa.Column("model", sa.Text),
    sa.Column("profile", sa.Text),
    sa.Column("cwd", sa.Text),
    sa.Column("pin_cwd", sa.Boolean, nullable=False),
    sa.Column("scopes", sa.JSON),
    sa.Column("parent", sa.String(128), index=True),
    sa.Column("creator", sa.String(128)),
    sa.Column("output_schema", sa.JSON),
    sa.Column("situational_context", sa.Text),
    sa.Column("extra", sa.JSON, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
    sa.Column("deadline_at", sa.Float),
    sa.Column("settled_at", sa.Float),
    sa.Column("runs", sa.Integer, nullable=False),
    sa.Column("turns", sa.Integer, nullable=False),
    sa.Column("input_tokens", sa.Integer, nullable=False),
    sa.Column("output_tokens", sa.Integer, nullable=False),
    # The agent's saved conversation (heron.agents.AgentState) between runs.
    sa.Column("state", sa.JSON),
    # A structured result accepted mid-turn; the outcome settles when the turn ends.
    sa.Column("pending_result", sa.JSON),
)

outcomes = sa.Table(
    "heron_outcomes",
    metadata,
    sa.Column("node_id", sa.String(128), primary_key=True),
    sa.Column("outcome", sa.JSON, nullable=False),
    sa.Column("settled_at", sa.Float, nullable=False),
)

messages = sa.Table(
    "heron_messages",
    metadata,
    sa.Column("message_id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("node_id", sa.String(128), nullable=False),
    sa.Column("body", sa.Text, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    # Which run of the node took the message into its conversation (NULL: not yet).
    sa.Column("claimed_run", sa.Integer),
    sa.Index("ix_heron_messages_node_claimed", "node_id", "claimed_run"),
)

events = sa.Table(
    "heron_events",
    metadata,
    sa.Column("node_id", sa.String(128), primary_key=True),
    sa.Column("sequence_number", sa.Integer, primary_key=True),
    sa.Column("type", sa.String(64), nullable=False),
    sa.Column("data", sa.JSON, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
)

migrations_table = sa.Table(
    "heron_migrations",
    sa.MetaData(),
    sa.Column("version", sa.Integer, primary_key=True),
)


def _v1(conn: sa.Connection) -> None:
    """The first schema: nodes, outcomes, messages, events."""
    metadata.create_all(conn, tables=[nodes, outcomes, messages, events])


MIGRATIONS: Sequence[Callable[[sa.Connection], None]] = (_v1,)
"""Schema migrations in order; version N is ``MIGRATIONS[N - 1]``. Append, never edit."""


def migrate(engine: sa.Engine) -> int:
    """Bring the schema up to date (idempotent, safe to race); returns the version."""
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            # One migrator at a time across daemons sharing the database.
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(726174)"))
        migrations_table.create(conn, checkfirst=True)
        current = conn.execute(sa.select(sa.func.max(migrations_table.c.version))).scalar() or 0
        if current > len(MIGRATIONS):
            raise RuntimeError(
                f"the database schema (version {current}) is newer than this Heron "
                f"understands ({len(MIGRATIONS)}): upgrade Heron"
            )
        for version in range(current + 1, len(MIGRATIONS) + 1):
            MIGRATIONS[version - 1](conn)
            conn.execute(migrations_table.insert().values(version=version))
    return len(MIGRATIONS)


def create_engine(url: str) -> sa.Engine:
    """An engine for ``url``; SQLite gets WAL, a busy timeout and immediate write locks."""
    if database_kind(url) == "sqlite":
        engine = sa.create_engine(url, pool_size=8, max_overflow=8, pool_timeout=60)

        @event.listens_for(engine, "connect")
        def _configure(dbapi_conn: Any, _record: Any) -> None:
            cursor = dbapi_conn.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            # WAL + NORMAL survives a killed process (only a power cut can lose the
            # last commits), at a fraction of FULL's fsyncs.
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.close()
            # Writers take the lock when their transaction begins, never midway
            # (no deadlock between two readers upgrading), as DBOS expects.
            dbapi_conn.isolation_level = "IMMEDIATE"

        return engine
    return sa.create_engine(url, pool_size=10, max_overflow=20, pool_pre_ping=True)


def database_kind(url: str) -> str:
    """``sqlite`` or ``postgresql`` (anything else is refused with a clear error)."""
    name = sa.engine.make_url(url).get_backend_name()
    if name not in ("sqlite", "postgresql"):
        raise ValueError(f"unsupported database {name!r}: use SQLite or PostgreSQL")
    return name


def redact_url(url: str) -> str:
    """``url`` without its password, for status output and logs."""
    return sa.engine.make_url(url).render_as_string(hide_password=True)
