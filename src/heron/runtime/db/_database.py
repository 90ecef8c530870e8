"""The daemon's database: one SQLAlchemy engine shared with DBOS, and the kernel's tables.

SQLite (a file under ``HERON_HOME``) by default; PostgreSQL when
``HERON_DATABASE_URL`` names one. DBOS keeps its workflow tables in the same
database (schema ``dbos`` on PostgreSQL, the same file on SQLite). Features define their
own tables on :data:`metadata`, each with its :class:`~heron.runtime.db.Schema`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event

from ._schema import Schema, add_column, apply

__all__ = [
    "NODES_SCHEMA",
    "DatabaseUnavailable",
    "Text",
    "create_engine",
    "daemons",
    "database_kind",
    "ensure_database",
    "events",
    "messages",
    "metadata",
    "migrate",
    "nodes",
    "outcomes",
    "redact_url",
]

CONNECT_TIMEOUT = 10
"""Seconds a PostgreSQL connection attempt may take (unless the URL sets ``connect_timeout``)."""

MAINTENANCE_DATABASE = "postgres"
"""The database connected to when creating a missing one."""


class DatabaseUnavailable(RuntimeError):
    """The database cannot be reached, or is missing and cannot be created (no password shown)."""


NUL_MARK = "\x1bheron-json:"
"""Prefix of a text value stored JSON-encoded on PostgreSQL (see :class:`Text`)."""


class Text(sa.types.TypeDecorator[str]):
    """Unbounded text that may hold U+0000, which PostgreSQL's ``text`` cannot store.

    On PostgreSQL a value containing NUL (or, so decoding stays unambiguous, one
    starting with :data:`NUL_MARK`) is stored as ``NUL_MARK`` + its JSON encoding
    and decoded on the way out; every other value is stored as it is, so the
    column stays plain readable text. SQLite stores every value as it is.
    """

    impl = sa.Text
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: sa.Dialect) -> str | None:
        """Encode a value PostgreSQL could not store (see the class docstring)."""
        if (
            value is not None
            and dialect.name == "postgresql"
            and ("\x00" in value or value.startswith(NUL_MARK))
        ):
            return NUL_MARK + json.dumps(value)
        return value

    def process_result_value(self, value: str | None, dialect: sa.Dialect) -> str | None:
        """Decode what :meth:`process_bind_param` encoded."""
        if value is not None and dialect.name == "postgresql" and value.startswith(NUL_MARK):
            decoded: str = json.loads(value[len(NUL_MARK) :])
            return decoded
        return value


metadata = sa.MetaData()

nodes = sa.Table(
    "heron_nodes",
    metadata,
    sa.Column("node_id", sa.String(128), primary_key=True),
    sa.Column("status", sa.String(16), nullable=False, index=True),
    sa.Column("root", sa.Boolean, nullable=False),
    sa.Column("root_lifecycle", sa.String(16), nullable=False),
    sa.Column("mode", sa.String(16), nullable=False),
    sa.Column("name", Text),
    sa.Column("description", Text),
    sa.Column("prompt", Text),
    sa.Column("kind", Text),
    sa.Column("model", Text),
    sa.Column("profile", Text),
    sa.Column("cwd", Text),
    sa.Column("pin_cwd", sa.Boolean, nullable=False),
    sa.Column("scopes", sa.JSON),
    sa.Column("parent", sa.String(128), index=True),
    sa.Column("creator", sa.String(128)),
    sa.Column("output_schema", sa.JSON),
    sa.Column("situational_context", Text),
    sa.Column("extra", sa.JSON, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
    sa.Column("deadline_at", sa.Float),
    sa.Column("settled_at", sa.Float),
    sa.Column("runs", sa.Integer, nullable=False),
    sa.Column("turns", sa.Integer, nullable=False),
    # 64-bit: a long-lived resident node re-sends its whole context every turn.
    sa.Column("input_tokens", sa.BigInteger, nullable=False),
    sa.Column("output_tokens", sa.BigInteger, nullable=False),
    # The agent's saved conversation (heron.agents.AgentState) between runs.
    sa.Column("state", sa.JSON),
    # A structured result accepted mid-turn; the outcome settles when the turn ends.
    sa.Column("pending_result", sa.JSON),
    # The highest number handed out to an event that is not logged (a text delta),
    # written before the delta streams: a restart continues above it, skipping none.
    sa.Column("events_reserved", sa.BigInteger),
    # The workflow step ("run:step") whose events (and a model turn's usage) were last
    # written: a step DBOS runs again after a crash finds it and runs quietly (_events).
    sa.Column("step_mark", sa.String(64)),
    # A pre-started node of the warm pool (its launch tuple) that no create has taken
    # yet: left out of every list and count (see _warm.py). NULL for every real node.
    sa.Column("warm", Text),
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
    sa.Column("body", Text, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    # Which run of the node took the message into its conversation (NULL: not yet),
    # and at which of that run's steps (its begin or end), or which of its reads between
    # turns (negative: the first is -1): a step DBOS runs again (at-least-once after a
    # crash), or a read a recovered run makes again, gets back what it claimed the first
    # time instead of nothing.
    sa.Column("claimed_run", sa.Integer),
    sa.Column("claimed_step", sa.Integer),
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


daemons = sa.Table(
    "heron_daemons",
    metadata,
    # The daemon's DBOS executor id: its workflows' rows in DBOS's tables name it.
    sa.Column("executor_id", sa.String(128), primary_key=True),
    sa.Column("host", Text, nullable=False),
    sa.Column("pid", sa.Integer, nullable=False),
    sa.Column("home", Text, nullable=False),
    sa.Column("socket", Text, nullable=False),
    sa.Column("version", sa.String(64), nullable=False),
    # Times are the database's clock (never a daemon's own): hosts' clocks may disagree.
    sa.Column("started_at", sa.Float, nullable=False),
    sa.Column("heartbeat_at", sa.Float, nullable=False),
    sa.Column("running", sa.Integer, nullable=False),
    # Set by a clean stop: its runs are for the others to take at once.
    sa.Column("stopped_at", sa.Float),
    # The live daemon that claimed the recovery of this one's runs, and when.
    sa.Column("recovered_by", sa.String(128)),
    sa.Column("recovered_at", sa.Float),
    # "daemon", "front" (the API process of a daemon with workers) or "worker".
    sa.Column("role", sa.String(16), nullable=False, server_default="daemon"),
    # A worker's front: its executor id.
    sa.Column("front", sa.String(128)),
)


def _v1(conn: sa.Connection) -> None:
    """The first schema: nodes, outcomes, messages, events."""
    # It creates the tables as they are defined now, so on a fresh database the
    # later migrations find their change made already: each must be idempotent.
    metadata.create_all(conn, tables=[nodes, outcomes, messages, events])


def _v2(conn: sa.Connection) -> None:
    """Token counts as 64-bit integers (PostgreSQL's ``integer`` stops at 2**31 - 1)."""
    if conn.dialect.name == "postgresql":  # SQLite's INTEGER is 64-bit already
        conn.execute(
            sa.text(
                "ALTER TABLE heron_nodes ALTER COLUMN input_tokens TYPE BIGINT,"
                " ALTER COLUMN output_tokens TYPE BIGINT"
            )
        )


def _v3(conn: sa.Connection) -> None:
    """Messages remember the step that claimed them (idempotent claims)."""
    add_column(conn, "heron_messages", "claimed_step", "INTEGER")


def _v4_reserved(conn: sa.Connection) -> None:
    """Durably reserved event numbers."""
    add_column(conn, "heron_nodes", "events_reserved", "BIGINT")


def _v5_warm(conn: sa.Connection) -> None:
    """Pre-started nodes of the warm pool (``prefer_warm``)."""
    add_column(conn, "heron_nodes", "warm", "TEXT")


def _v6_step_marks(conn: sa.Connection) -> None:
    """Nodes remember the workflow step whose events were last written (``step_mark``)."""
    add_column(conn, "heron_nodes", "step_mark", "VARCHAR(64)")


def _v7_daemons(conn: sa.Connection) -> None:
    """The daemons sharing the database, with their heartbeats (``nodes/_cluster.py``)."""
    metadata.create_all(conn, tables=[daemons])


NODES_SCHEMA = Schema(
    "nodes",
    steps=(_v1, _v2, _v3, _v4_reserved, _v5_warm, _v6_step_marks, _v7_daemons),
    # (nodes last: the rows that name a node go before it)
    per_node=(events, messages, outcomes, nodes),
    legacy=(1, 2, 3, 4, 5, 10),
)
"""The kernel's tables: nodes, their outcomes, messages and events, and the daemons."""


def migrate(engine: sa.Engine, schemas: Sequence[Schema]) -> dict[str, int]:
    """Bring every schema up to date (idempotent, safe to race); each one's version.

    Creates a missing PostgreSQL database first (see :func:`ensure_database`).
    """
    ensure_database(engine)
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            # One migrator at a time across daemons sharing the database.
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(726174)"))
        return apply(conn, schemas)


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
    return sa.create_engine(
        url,
        pool_size=10,
        max_overflow=20,
        pool_pre_ping=True,
        connect_args=_connect_args(sa.engine.make_url(url)),
    )


def _connect_args(url: sa.URL) -> dict[str, Any]:
    # libpq waits for an unreachable host forever by default: the daemon would
    # hang at startup instead of saying what is wrong.
    return {} if "connect_timeout" in url.query else {"connect_timeout": CONNECT_TIMEOUT}


def ensure_database(engine: sa.Engine) -> None:
    """Check the database answers; create a missing PostgreSQL database (as DBOS would).

    :class:`DatabaseUnavailable`, saying why, when it cannot be reached or created.
    Safe to race: a daemon that loses the race to create it just uses it.
    """
    try:
        _ping(engine)
        return
    except sa.exc.DBAPIError as exc:
        failure = exc
    if engine.dialect.name == "postgresql" and _create_missing(engine):
        try:
            _ping(engine)
            return
        except sa.exc.DBAPIError as exc:
            failure = exc
    raise DatabaseUnavailable(
        f"cannot connect to {redact_url(engine.url)}: {_reason(failure)}"
    ) from None


def _ping(engine: sa.Engine) -> None:
    with engine.connect() as conn:
        conn.execute(sa.text("SELECT 1"))


def _create_missing(engine: sa.Engine) -> bool:
    """Create the engine's database if it is missing; whether it is worth connecting again.

    ``True`` also when it exists already (another daemon may have just created
    it; if the connection failed for another reason, trying again says so).
    ``False`` when the server's maintenance database cannot be reached either.
    """
    name = engine.url.database
    if not name or name == MAINTENANCE_DATABASE:
        return False
    admin = sa.create_engine(
        engine.url.set(database=MAINTENANCE_DATABASE),
        poolclass=sa.NullPool,
        isolation_level="AUTOCOMMIT",
        connect_args=_connect_args(engine.url),
    )
    exists = sa.text("SELECT 1 FROM pg_database WHERE datname = :name")
    try:
        with admin.connect() as conn:
            if conn.execute(exists, {"name": name}).first() is not None:
                return True
            try:
                quoted = admin.dialect.identifier_preparer.quote(name)
                conn.execute(sa.text(f"CREATE DATABASE {quoted}"))
            except sa.exc.DBAPIError as exc:
                # duplicate_database, or the catalog's unique index when both
                # creators got that far at once: another daemon made it first.
                if getattr(exc.orig, "sqlstate", None) not in ("42P04", "23505"):
                    raise DatabaseUnavailable(
                        f"database {name!r} does not exist and cannot be created "
                        f"({redact_url(engine.url)}): {_reason(exc)}"
                    ) from None
    except sa.exc.OperationalError:
        return False
    finally:
        admin.dispose()
    return True


def _reason(exc: sa.exc.DBAPIError) -> str:
    """The driver's own message (SQLAlchemy's wrapper adds the statement and a link)."""
    return " ".join(str(exc.orig).split())


def database_kind(url: str) -> str:
    """``sqlite`` or ``postgresql`` (anything else is refused with a clear error)."""
    name = sa.engine.make_url(url).get_backend_name()
    if name not in ("sqlite", "postgresql"):
        raise ValueError(f"unsupported database {name!r}: use SQLite or PostgreSQL")
    return name


def redact_url(url: str | sa.URL) -> str:
    """``url`` without its password (in the user part or the query), for status and logs."""
    parsed = sa.engine.make_url(url)
    secrets = [key for key in parsed.query if key.lower() in SECRET_QUERY_KEYS]
    if secrets:
        parsed = parsed.update_query_dict(dict.fromkeys(secrets, "***"))
    return parsed.render_as_string(hide_password=True)


SECRET_QUERY_KEYS = frozenset({"password", "sslpassword"})
"""libpq connection parameters that hold secrets when given in the URL's query."""
