"""Memory's SQL that differs by database (full-text search: FTS5 or PostgreSQL's), and the
live-entry filters. A user's query is never handed to FTS5 as syntax (:func:`fts5_query`)."""

from __future__ import annotations

import re
from collections.abc import MutableMapping, Sequence
from typing import Any, cast

import sqlalchemy as sa

from ._tables import MEMORY_FTS, memory_entries
from ._types import EntryRow

__all__ = ["fts5_query", "live", "search", "sync_index"]

_WORD = re.compile(r"\w+")
_CHUNK = re.compile(r'(-?)"([^"]*)"?|(\S+)')

SNIPPET_WORDS = 24
"""About how many words a snippet holds."""

_ENGLISH: sa.ColumnClause[Any] = sa.literal_column("'english'::regconfig")


def fts5_query(text: str) -> str | None:
    """``text`` as a safe FTS5 expression (``None``: it has no word to look for).

    Every term is a quoted string of the words in it (quotes and operators the
    user typed are not syntax); terms are ANDed, ``-term`` excluded, ``or``
    separates alternatives, as ``websearch_to_tsquery`` reads them.
    """
    groups: list[tuple[list[str], list[str]]] = [([], [])]
    for match in _CHUNK.finditer(text):
        negated, phrase, bare = match.groups()
        if bare is not None:
            if bare.lower() == "or":
                groups.append(([], []))
                continue
            negated = "-" if bare.startswith("-") and len(bare) > 1 else ""
            words = _WORD.findall(bare)
        else:
            words = _WORD.findall(phrase)
        if words:
            groups[-1][1 if negated else 0].append('"' + " ".join(words) + '"')
    clauses = []
    for wanted, excluded in groups:
        if not wanted:  # only exclusions: nothing to rank by, as on PostgreSQL
            continue
        clause = " AND ".join(wanted)
        if excluded:
            clause = f"({clause}) NOT ({' OR '.join(excluded)})"
        clauses.append(f"({clause})")
    return " OR ".join(clauses) or None


def live(
    profile: str, prefix: str | None = None, tags: Sequence[str] | None = None
) -> list[sa.ColumnElement[bool]]:
    """The conditions picking a profile's live entries, at or under ``prefix``, carrying
    every tag of ``tags``."""
    c = memory_entries.c
    where = [c.profile == profile, c.deleted_at.is_(None)]
    if prefix:
        # substr, not LIKE: SQLite's LIKE ignores case, and paths are case-sensitive.
        under = sa.func.substr(c.path, 1, len(prefix) + 1) == prefix + "/"
        where.append(sa.or_(c.path == prefix, under))
    for tag in tags or ():
        spaced = sa.literal(" ") + c.tags + sa.literal(" ")
        where.append(spaced.contains(f" {tag} ", autoescape=True))
    return where


def sync_index(conn: sa.Connection, row: MutableMapping[str, Any]) -> None:
    """Bring SQLite's FTS table in line with the entry ``row`` just written (in the
    write's transaction; ``row["search_rowid"]`` follows); PostgreSQL's vector is a
    generated column, which follows the row by itself."""
    if conn.dialect.name != "sqlite":
        return
    fts_row = row.get("search_rowid")
    values = {k: row[k] for k in ("entry_id", "title", "path", "tags", "body")}
    if fts_row is not None and row["deleted_at"] is not None:
        conn.execute(sa.text(f"DELETE FROM {MEMORY_FTS} WHERE rowid = :r"), {"r": fts_row})
        fts_row = None
    elif fts_row is not None:
        conn.execute(
            sa.text(
                f"UPDATE {MEMORY_FTS} SET title = :title, path = :path, tags = :tags,"
                " body = :body WHERE rowid = :r"
            ),
            {**values, "r": fts_row},
        )
        return
    elif row["deleted_at"] is None:
        fts_row = conn.execute(
            sa.text(
                f"INSERT INTO {MEMORY_FTS} (entry_id, title, path, tags, body)"
                " VALUES (:entry_id, :title, :path, :tags, :body)"
            ),
            values,
        ).lastrowid
    row["search_rowid"] = fts_row
    conn.execute(
        memory_entries.update()
        .where(memory_entries.c.entry_id == row["entry_id"])
        .values(search_rowid=fts_row)
    )


def search(
    conn: sa.Connection,
    text: str,
    *,
    profile: str,
    limit: int,
    prefix: str | None,
    tags: Sequence[str] | None,
) -> list[tuple[EntryRow, float, str]]:
    """The best ``limit`` live entries matching ``text``: (row, score, snippet), best first."""
    if conn.dialect.name == "postgresql":
        return _search_postgres(conn, text, profile, limit, prefix, tags)
    return _search_sqlite(conn, text, profile, limit, prefix, tags)


def _search_sqlite(
    conn: sa.Connection,
    text: str,
    profile: str,
    limit: int,
    prefix: str | None,
    tags: Sequence[str] | None,
) -> list[tuple[EntryRow, float, str]]:
    expression = fts5_query(text)
    if expression is None:
        return []
    fts = sa.table(MEMORY_FTS, sa.column("entry_id"))
    table: sa.ColumnClause[Any] = sa.literal_column(MEMORY_FTS)
    # Columns: entry_id (unindexed), title, path, tags, body. A title or path match
    # says more about what an entry is than a word somewhere in its body.
    rank = sa.func.bm25(table, 0.0, 4.0, 2.0, 2.0, 1.0)
    snippet = sa.func.snippet(table, -1, "**", "**", "…", SNIPPET_WORDS)
    query = (
        sa.select(memory_entries, (-rank).label("score"), snippet.label("snippet"))
        .select_from(fts.join(memory_entries, memory_entries.c.entry_id == fts.c.entry_id))
        .where(table.op("MATCH")(expression), *live(profile, prefix, tags))
        .order_by(rank, memory_entries.c.path)
        .limit(limit)
    )
    return _hits(conn.execute(query))


def _search_postgres(
    conn: sa.Connection,
    text: str,
    profile: str,
    limit: int,
    prefix: str | None,
    tags: Sequence[str] | None,
) -> list[tuple[EntryRow, float, str]]:
    vector: sa.ColumnClause[Any] = sa.literal_column("heron_memory_entries.search_vector")
    # PostgreSQL's text cannot hold U+0000; websearch_to_tsquery takes anything else.
    wanted = sa.func.websearch_to_tsquery(_ENGLISH, sa.cast(text.replace("\x00", " "), sa.Text))
    rank = sa.func.ts_rank_cd(vector, wanted)
    options = f"StartSel=**, StopSel=**, MaxWords={SNIPPET_WORDS}, MinWords=8, MaxFragments=2"
    best = (
        sa.select(memory_entries, rank.label("score"))
        .where(vector.op("@@")(wanted), *live(profile, prefix, tags))
        .order_by(rank.desc(), memory_entries.c.path)
        .limit(limit)
        .subquery()
    )
    # Excerpts of the best only: ts_headline parses the whole body again.
    snippet = sa.func.ts_headline(_ENGLISH, best.c.body, wanted, options)
    query = sa.select(best, snippet.label("snippet")).order_by(best.c.score.desc(), best.c.path)
    return _hits(conn.execute(query))


def _hits(result: sa.CursorResult[Any]) -> list[tuple[EntryRow, float, str]]:
    hits = []
    for found in result:
        row = dict(found._mapping)
        score, snippet = float(row.pop("score")), str(row.pop("snippet") or "")
        hits.append((cast(EntryRow, row), score, snippet))
    return hits
