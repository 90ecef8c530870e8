"""Memory's rows: an entry as it is now, and each version of it."""

from __future__ import annotations

from typing import NotRequired, TypedDict

from ... import api

__all__ = ["EntryRow", "VersionRow", "Written"]


class EntryRow(TypedDict):
    """A row of ``heron_memory_entries``: an entry as it is now."""

    entry_id: str
    profile: str
    path: str
    """Normalised ``a/b/c``; unique per profile among live entries."""
    slug: str
    """The last segment of ``path``."""
    title: str | None
    body: str
    tags: str
    """The tags joined by single spaces."""
    version: int
    created_at: float
    updated_at: float
    deleted_at: float | None
    search_rowid: NotRequired[int | None]
    """SQLite: the entry's row in the full-text table (``None`` once deleted)."""


class VersionRow(TypedDict):
    """A row of ``heron_memory_versions``: one change of an entry."""

    entry_id: str
    version: int
    op: api.MemoryOp
    path: str
    title: str | None
    body: str
    tags: list[str]
    author: str | None
    """The node that wrote it (``None``: a client of the API)."""
    created_at: float
    call_key: str | None


Written = tuple[EntryRow, VersionRow]
"""A write's outcome: the entry's row as it is now, and the version row the write made
(or, for a call made before, the one it made then)."""
