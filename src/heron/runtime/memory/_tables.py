"""Memory's tables: a profile's notes by path, every version kept, searchable."""

from __future__ import annotations

import sqlalchemy as sa

from ..db import Schema, Text, metadata

__all__ = ["MEMORY_FTS", "MEMORY_SCHEMA", "MEMORY_VECTOR", "memory_entries", "memory_versions"]

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


def _v1(conn: sa.Connection) -> None:
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


MEMORY_SCHEMA = Schema("memory", steps=(_v1,), legacy=(7,))
"""Memory's tables (a profile's, not a node's: they outlive the nodes that wrote them)."""
