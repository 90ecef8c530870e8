"""The daemon's database: one SQLAlchemy engine shared with DBOS, its tables and migrations.

SQLite (a file under ``HERON_HOME``) by default; PostgreSQL when
``HERON_DATABASE_URL`` names one. DBOS keeps its workflow tables in the same
database (schema ``dbos`` on PostgreSQL, the same file on SQLite).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event

__all__ = [
    "MEMORY_FTS",
    "MEMORY_VECTOR",
    "MIGRATIONS",
    "DatabaseUnavailable",
    "create_engine",
    "cron_firings",
    "crons",
    "database_kind",
    "ensure_database",
    "events",
    "human_requests",
    "memory_entries",
    "memory_versions",
    "messages",
    "metadata",
    "migrate",
    "nodes",
    "outcomes",
    "profiles",
    "redact_url",
    "reports",
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
    # and at which of that run's steps: a step DBOS runs again (at-least-once after a
    # crash) gets back what it claimed the first time instead of nothing.
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

profiles = sa.Table(
    "heron_profiles",
    metadata,
    sa.Column("name", sa.String(128), primary_key=True),
    sa.Column("description", Text),
    # Defaults for the profile's nodes (kind, model ...), as the profile routes define them.
    sa.Column("settings", sa.JSON, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
)

# -- memory: a profile's notes by path, every version kept, searchable ---------------------

memory_entries = sa.Table(
    "heron_memory_entries",
    metadata,
    sa.Column("entry_id", sa.String(128), primary_key=True),
    sa.Column("profile", sa.String(128), nullable=False),
    # Normalised ``a/b/c``; unique per profile among live (not deleted) entries. Byte
    # order on both databases (PostgreSQL's locale would ignore punctuation), so the
    # unique index also serves list's path order and its cursor.
    sa.Column(
        "path",
        sa.String(512).with_variant(sa.String(512, collation="C"), "postgresql"),
        nullable=False,
    ),
    sa.Column("slug", sa.String(512), nullable=False),
    sa.Column("title", Text),
    sa.Column("body", Text, nullable=False),
    # The tags joined by single spaces (a tag holds none): one text column that the
    # search vector and a LIKE filter both read on SQLite and PostgreSQL alike.
    sa.Column("tags", Text, nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
    sa.Column("deleted_at", sa.Float),
    # SQLite: the rowid of the entry's row in MEMORY_FTS (NULL once deleted), so a
    # write finds it by key instead of scanning the FTS table. Unused on PostgreSQL.
    sa.Column("search_rowid", sa.Integer),
    sa.Index(
        "ux_heron_memory_live_path",
        "profile",
        "path",
        unique=True,
        sqlite_where=sa.text("deleted_at IS NULL"),
        postgresql_where=sa.text("deleted_at IS NULL"),
    ),
    sa.Index("ix_heron_memory_slug", "profile", "slug"),
)

memory_versions = sa.Table(
    "heron_memory_versions",
    metadata,
    sa.Column("entry_id", sa.String(128), primary_key=True),
    sa.Column("version", sa.Integer, primary_key=True),
    # create, update, move or delete
    sa.Column("op", sa.String(16), nullable=False),
    sa.Column("path", sa.String(512), nullable=False),
    sa.Column("title", Text),
    sa.Column("body", Text, nullable=False),
    sa.Column("tags", sa.JSON, nullable=False),
    # The node that wrote it (NULL: a client of the API).
    sa.Column("author", sa.String(128)),
    sa.Column("created_at", sa.Float, nullable=False),
    # The node's tool call that made it: a call DBOS runs again after a crash finds
    # the change it made instead of making it twice.
    sa.Column("call_key", sa.String(128), unique=True),
)

MEMORY_FTS = "heron_memory_fts"
"""SQLite's FTS5 table over live entries (PostgreSQL uses a GIN expression index instead)."""

MEMORY_VECTOR = (
    "setweight(to_tsvector('english', coalesce(title, '')), 'A')"
    " || setweight(to_tsvector('english', replace(path, '/', ' ')), 'A')"
    " || setweight(to_tsvector('english', tags), 'A')"
    " || setweight(to_tsvector('english', body), 'B')"
)
"""PostgreSQL's search vector of an entry, kept in the generated column ``search_vector``
(indexed by GIN): ranking reads it instead of parsing every matching body again."""

# -- crons: schedules that create nodes, and the ticks they fired --------------------------

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

# -- human requests: questions put to a person, and the inbox ------------------------------

human_requests = sa.Table(
    "heron_human_requests",
    metadata,
    sa.Column("request_id", sa.String(128), primary_key=True),
    # The node the answer wakes; NULL for a request an application filed for nobody.
    sa.Column("node_id", sa.String(128), index=True),
    sa.Column("profile", sa.String(128), nullable=False),
    # open, answered, dismissed or cancelled
    sa.Column("status", sa.String(16), nullable=False, index=True),
    sa.Column("title", Text, nullable=False),
    # [{question, context, choices, multiple, free_text}]
    sa.Column("questions", sa.JSON, nullable=False),
    sa.Column("body", Text),
    # {answers, text, responded_by, responded_at}
    sa.Column("response", sa.JSON),
    # [{note, percent, by, at}]
    sa.Column("progress", sa.JSON, nullable=False),
    # Why it was dismissed or cancelled.
    sa.Column("reason", Text),
    sa.Column("revision", sa.Integer, nullable=False),
    # The ask-questions call that filed it (run, DBOS step, call id, hashed): a call
    # DBOS runs again after a crash finds its request instead of filing a second one.
    sa.Column("call_key", sa.String(128)),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
    sa.Column("resolved_at", sa.Float),
    sa.Index("ix_heron_human_requests_call_key", "node_id", "call_key", unique=True),
)

migrations_table = sa.Table(
    "heron_migrations",
    sa.MetaData(),
    sa.Column("version", sa.Integer, primary_key=True),
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
    columns = {c["name"] for c in sa.inspect(conn).get_columns("heron_messages")}
    if "claimed_step" not in columns:
        conn.execute(sa.text("ALTER TABLE heron_messages ADD COLUMN claimed_step INTEGER"))


def _v4(conn: sa.Connection) -> None:
    """Reports, profiles, and durably reserved event numbers."""
    metadata.create_all(conn, tables=[reports, profiles])
    columns = {c["name"] for c in sa.inspect(conn).get_columns("heron_nodes")}
    if "events_reserved" not in columns:
        conn.execute(sa.text("ALTER TABLE heron_nodes ADD COLUMN events_reserved BIGINT"))


def _v5_warm(conn: sa.Connection) -> None:
    """Pre-started nodes of the warm pool (``prefer_warm``)."""
    columns = {c["name"] for c in sa.inspect(conn).get_columns("heron_nodes")}
    if "warm" not in columns:
        conn.execute(sa.text("ALTER TABLE heron_nodes ADD COLUMN warm TEXT"))


def _v6_reports_key(conn: sa.Connection) -> None:
    """Reports remember the tool call that pushed them (idempotent push-report)."""
    inspector = sa.inspect(conn)
    if "call_key" not in {c["name"] for c in inspector.get_columns("heron_reports")}:
        conn.execute(sa.text("ALTER TABLE heron_reports ADD COLUMN call_key VARCHAR(128)"))
    indexes = {i["name"] for i in inspector.get_indexes("heron_reports")}
    if "ix_heron_reports_call_key" not in indexes:
        conn.execute(
            sa.text(
                "CREATE UNIQUE INDEX ix_heron_reports_call_key ON heron_reports (node_id, call_key)"
            )
        )


def _v7_memory(conn: sa.Connection) -> None:
    """Memory: entries, their versions, and full-text search over them."""
    metadata.create_all(conn, tables=[memory_entries, memory_versions])
    if conn.dialect.name == "postgresql":
        # Not in ``memory_entries``: SQLite has no such column (it searches MEMORY_FTS).
        conn.execute(
            sa.text(
                "ALTER TABLE heron_memory_entries ADD COLUMN IF NOT EXISTS search_vector tsvector"
                f" GENERATED ALWAYS AS ({MEMORY_VECTOR}) STORED"
            )
        )
        conn.execute(
            sa.text(
                "CREATE INDEX IF NOT EXISTS ix_heron_memory_search"
                " ON heron_memory_entries USING GIN (search_vector)"
            )
        )
    else:
        # Porter stemming, as PostgreSQL's 'english' configuration stems.
        conn.execute(
            sa.text(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {MEMORY_FTS} USING fts5("
                "entry_id UNINDEXED, title, path, tags, body,"
                " tokenize = 'porter unicode61 remove_diacritics 2')"
            )
        )


def _v8_crons(conn: sa.Connection) -> None:
    """Crons and their firings."""
    metadata.create_all(conn, tables=[crons, cron_firings])


def _v9_human(conn: sa.Connection) -> None:
    """Human requests and the inbox."""
    metadata.create_all(conn, tables=[human_requests])


def _v10_step_marks(conn: sa.Connection) -> None:
    """Nodes remember the workflow step whose events were last written (``step_mark``)."""
    columns = {c["name"] for c in sa.inspect(conn).get_columns("heron_nodes")}
    if "step_mark" not in columns:
        conn.execute(sa.text("ALTER TABLE heron_nodes ADD COLUMN step_mark VARCHAR(64)"))


MIGRATIONS: Sequence[Callable[[sa.Connection], None]] = (
    _v1,
    _v2,
    _v3,
    _v4,
    _v5_warm,
    _v6_reports_key,
    _v7_memory,
    _v8_crons,
    _v9_human,
    _v10_step_marks,
)
"""Schema migrations in order; version N is ``MIGRATIONS[N - 1]``. Append, never edit."""


def migrate(engine: sa.Engine) -> int:
    """Bring the schema up to date (idempotent, safe to race); returns the version.

    Creates a missing PostgreSQL database first (see :func:`ensure_database`).
    """
    ensure_database(engine)
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
