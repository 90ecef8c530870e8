"""Memory's own store: ``heron_memory_entries`` and every version in ``heron_memory_versions``.

Each write is one transaction: the entry's row, its new version in
``heron_memory_versions`` and (SQLite) the FTS table change together or not at
all. A write made by a node's tool call carries that call's key: the same call
run again after a crash finds its version and changes nothing.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, cast

import sqlalchemy as sa

from ..db import Database, Row
from ..server import ApiError
from ._paths import new_entry_id, slug_of
from ._search import live, search, sync_index
from ._tables import memory_entries, memory_versions
from ._types import EntryRow, VersionRow, Written

__all__ = ["MemoryStore"]

_VERSIONED = ("path", "title", "body")


class MemoryStore:
    """Reads and writes memory's tables."""

    def __init__(self, database: Database) -> None:
        self.db = database
        """The daemon's database."""

    # -- writes ---------------------------------------------------------------

    async def memory_create(
        self, row: Row, *, author: str | None = None, call_key: str | None = None
    ) -> Written:
        """Insert a new entry (``row`` without version or times); ``409 memory_path_exists``
        if a live entry of the profile has its path."""
        return await self.db.run(self._memory_write, None, row, "create", None, author, call_key)

    async def memory_change(
        self,
        entry_id: str,
        profile: str,
        op: str,
        values: Mapping[str, Any],
        *,
        expected_version: int | None = None,
        author: str | None = None,
        call_key: str | None = None,
    ) -> Written:
        """Update, move or delete a live entry (``op``) with ``values``; ``404
        memory_not_found``, ``409 version_conflict`` or ``409 memory_path_exists``.

        A change that changes nothing makes no version (the current one is returned).
        """
        target = (entry_id, profile)
        return await self.db.run(
            self._memory_write, target, dict(values), op, expected_version, author, call_key
        )

    async def memory_put(
        self,
        profile: str,
        path: str,
        values: Mapping[str, Any],
        *,
        author: str | None = None,
        call_key: str | None = None,
    ) -> Written:
        """Create the entry at ``path``, or update the live one there with ``values``."""
        return await self.db.run(self._memory_put, profile, path, dict(values), author, call_key)

    def _memory_put(
        self, profile: str, path: str, values: Row, author: str | None, call_key: str | None
    ) -> Written:
        for _ in range(2):  # a create racing ours at the same path: update it instead
            with self.db.engine.connect() as conn:
                found = _at(conn, profile, path)
            try:
                if found is None:
                    row = {
                        "entry_id": new_entry_id(),
                        "profile": profile,
                        "path": path,
                        "slug": slug_of(path),
                        "title": None,
                        "tags": "",
                        **values,
                    }
                    return self._memory_write(None, row, "create", None, author, call_key)
                target = (found["entry_id"], profile)
                return self._memory_write(target, values, "update", None, author, call_key)
            except ApiError as exc:
                if exc.code not in ("memory_path_exists", "memory_not_found"):
                    raise
        raise ApiError(409, "memory_path_exists", f"{path!r} changed under this write: try again")

    def _memory_write(
        self,
        target: tuple[str, str] | None,
        values: Row,
        op: str,
        expected_version: int | None,
        author: str | None,
        call_key: str | None,
    ) -> Written:
        now = time.time()
        try:
            with self.db.engine.begin() as conn:
                done = _by_call(conn, call_key) if call_key is not None else None
                if done is not None:
                    return done
                if target is None:
                    row = {**values, "version": 1, "created_at": now, "updated_at": now}
                    row["deleted_at"] = None
                    _check_path_free(conn, row["profile"], row["path"], None)
                    conn.execute(memory_entries.insert().values(**row))
                else:
                    current: dict[str, Any] = dict(_locked(conn, *target))
                    if expected_version is not None and current["version"] != expected_version:
                        raise ApiError(
                            409,
                            "version_conflict",
                            f"memory {target[0]} is at version {current['version']}, "
                            f"not {expected_version}",
                            {"version": current["version"]},
                        )
                    row = {**current, **values}
                    if op != "delete" and all(row[k] == current[k] for k in (*_VERSIONED, "tags")):
                        return _entry(current), _last_version(conn, current)
                    if row["path"] != current["path"]:
                        _check_path_free(conn, row["profile"], row["path"], row["entry_id"])
                    row.update(version=current["version"] + 1, updated_at=now)
                    if op == "delete":
                        row["deleted_at"] = now
                    conn.execute(
                        memory_entries.update()
                        .where(memory_entries.c.entry_id == row["entry_id"])
                        .values({k: v for k, v in row.items() if k != "entry_id"})
                    )
                version = {
                    "entry_id": row["entry_id"],
                    "version": row["version"],
                    "op": op,
                    **{k: row[k] for k in _VERSIONED},
                    "tags": row["tags"].split(),
                    "author": author,
                    "created_at": now,
                    "call_key": call_key,
                }
                conn.execute(memory_versions.insert().values(**version))
                sync_index(conn, row)
                return _entry(row), _version(version)
        except sa.exc.IntegrityError:
            # Another write took the path between our check and our insert (PostgreSQL).
            path = values.get("path")
            raise ApiError(
                409, "memory_path_exists", f"a memory entry exists at {path!r}", {"path": path}
            ) from None

    # -- reads ----------------------------------------------------------------

    async def memory_by_call(self, call_key: str) -> Written | None:
        """What the node's tool call ``call_key`` wrote, if it wrote already."""
        return await self.db.run(self._memory_by_call, call_key)

    def _memory_by_call(self, call_key: str) -> Written | None:
        with self.db.engine.connect() as conn:
            return _by_call(conn, call_key)

    async def memory_entry(self, entry_id: str, profile: str) -> EntryRow | None:
        """The entry (live or deleted) of the profile, or ``None``."""
        query = sa.select(memory_entries).where(
            memory_entries.c.entry_id == entry_id, memory_entries.c.profile == profile
        )
        found = await self.db.first(query)
        return _entry(found) if found is not None else None

    async def memory_at(self, profile: str, path: str) -> EntryRow | None:
        """The profile's live entry at ``path``, or ``None``."""
        return await self.db.read(_at, profile, path)

    async def memory_by_slug(self, profile: str, slug: str) -> list[EntryRow]:
        """The profile's live entries whose last path segment is ``slug``, by path."""
        return await self.db.run(self._memory_by_slug, profile, slug)

    def _memory_by_slug(self, profile: str, slug: str) -> list[EntryRow]:
        query = (
            sa.select(memory_entries)
            .where(*live(profile), memory_entries.c.slug == slug)
            .order_by(memory_entries.c.path)
        )
        with self.db.engine.connect() as conn:
            return [_entry(r._mapping) for r in conn.execute(query)]

    async def memory_page(
        self,
        profile: str,
        *,
        prefix: str | None,
        limit: int,
        after: str | None,
        tags: Sequence[str] | None = None,
    ) -> list[Row]:
        """Up to ``limit`` live entries in path order, after the path ``after`` if given
        (paths are unique among live entries: the last one seen is the whole cursor);
        each row has the body's ``size`` in bytes instead of the body."""
        return await self.db.run(self._memory_page, profile, prefix, limit, after, tags)

    def _memory_page(
        self,
        profile: str,
        prefix: str | None,
        limit: int,
        after: str | None,
        tags: Sequence[str] | None,
    ) -> list[Row]:
        c = memory_entries.c
        path = c.path
        # The body's bytes, counted by the database (a page never reads bodies).
        if self.db.engine.dialect.name == "postgresql":
            size = sa.func.octet_length(c.body)
        else:
            size = sa.func.length(sa.cast(c.body, sa.LargeBinary))
        columns = [col for col in memory_entries.c if col.name != "body"]
        query = (
            sa.select(*columns, size.label("size"))
            .where(*live(profile, prefix, tags))
            .order_by(path)
            .limit(limit)
        )
        if after is not None:
            query = query.where(path > after)
        with self.db.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(query)]

    async def memory_history(
        self, entry_id: str, *, limit: int | None = None, before: int | None = None
    ) -> list[VersionRow]:
        """The entry's versions, newest first (up to ``limit``, older than ``before``)."""
        return await self.db.run(self._memory_history, entry_id, limit, before)

    def _memory_history(
        self, entry_id: str, limit: int | None, before: int | None
    ) -> list[VersionRow]:
        v = memory_versions.c
        query = sa.select(memory_versions).where(v.entry_id == entry_id).order_by(v.version.desc())
        if before is not None:
            query = query.where(v.version < before)
        if limit is not None:
            query = query.limit(limit)
        with self.db.engine.connect() as conn:
            return [_version(r._mapping) for r in conn.execute(query)]

    async def memory_search(
        self,
        text: str,
        *,
        profile: str,
        limit: int,
        prefix: str | None = None,
        tags: Sequence[str] | None = None,
    ) -> list[tuple[EntryRow, float, str]]:
        """The best matches among the profile's live entries: (row, score, snippet)."""
        return await self.db.run(self._memory_search, text, profile, limit, prefix, tags)

    def _memory_search(
        self,
        text: str,
        profile: str,
        limit: int,
        prefix: str | None,
        tags: Sequence[str] | None,
    ) -> list[tuple[EntryRow, float, str]]:
        with self.db.engine.connect() as conn:
            return search(conn, text, profile=profile, limit=limit, prefix=prefix, tags=tags)


def _at(conn: sa.Connection, profile: str, path: str) -> EntryRow | None:
    """The profile's live entry at ``path``, or ``None``."""
    query = sa.select(memory_entries).where(*live(profile), memory_entries.c.path == path)
    found = conn.execute(query).first()
    return _entry(found._mapping) if found is not None else None


def _by_call(conn: sa.Connection, call_key: str) -> Written | None:
    """The entry now and the version the call ``call_key`` made, if it made one."""
    done = conn.execute(
        sa.select(memory_versions).where(memory_versions.c.call_key == call_key)
    ).first()
    if done is None:
        return None
    version = _version(done._mapping)
    query = sa.select(memory_entries).where(memory_entries.c.entry_id == version["entry_id"])
    return _entry(conn.execute(query).one()._mapping), version


def _locked(conn: sa.Connection, entry_id: str, profile: str) -> EntryRow:
    """The live entry, held until the transaction ends; ``404`` if there is none."""
    found = conn.execute(
        sa.select(memory_entries)
        .where(
            memory_entries.c.entry_id == entry_id,
            memory_entries.c.profile == profile,
            memory_entries.c.deleted_at.is_(None),
        )
        # FOR UPDATE: PostgreSQL holds the row until the write (SQLite locks at BEGIN).
        .with_for_update()
    ).first()
    if found is None:
        raise ApiError(404, "memory_not_found", f"no memory entry {entry_id!r} in {profile!r}")
    return _entry(found._mapping)


def _last_version(conn: sa.Connection, row: Mapping[str, Any]) -> VersionRow:
    found = conn.execute(
        sa.select(memory_versions).where(
            memory_versions.c.entry_id == row["entry_id"],
            memory_versions.c.version == row["version"],
        )
    ).one()
    return _version(found._mapping)


def _check_path_free(conn: sa.Connection, profile: str, path: str, entry_id: str | None) -> None:
    taken = conn.execute(
        sa.select(memory_entries.c.entry_id).where(*live(profile), memory_entries.c.path == path)
    ).first()
    if taken is not None and taken[0] != entry_id:
        raise ApiError(
            409,
            "memory_path_exists",
            f"a memory entry exists at {path!r} ({taken[0]})",
            {"path": path, "entry_id": taken[0]},
        )


def _entry(values: Mapping[Any, Any]) -> EntryRow:
    return cast(EntryRow, dict(values))


def _version(values: Mapping[Any, Any]) -> VersionRow:
    return cast(VersionRow, dict(values))
