"""Memory: a profile's notes by path, every version kept, full-text searchable."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ... import api
from .. import profiles
from ..nodes import Feature, Kernel, RunTools, maybe_when, when
from ..server import ApiError
from ._paths import check_entry_id, new_entry_id, normal_path, normal_tags, slug_of
from ._store import MemoryStore
from ._tables import MEMORY_SCHEMA
from ._types import EntryRow, VersionRow

if TYPE_CHECKING:
    from fastapi import FastAPI

    from ...tools import Tool

__all__ = [
    "CURSOR_PATTERN",
    "Memory",
    "body_of",
    "title_of",
    "to_entry",
    "to_summary",
    "to_version",
]


class Memory(Feature):
    """Keeps, finds and versions memory entries."""

    schema = MEMORY_SCHEMA

    def __init__(self, engine: Kernel) -> None:
        self.engine = engine
        self.store = MemoryStore(engine.db)
        """The entries and their versions."""
        # Profiles are never deleted: one known to exist need not be read again.
        self._known: set[str] = set()

    def routes(self, app: FastAPI) -> None:
        """Serve the memory routes."""
        from ._routes import add_memory_routes  # (it imports this module)

        add_memory_routes(app, self)

    async def profile(self, name: str | None) -> str:
        """An existing profile's name (``None``: ``default``), else ``400``/``422``."""
        name = name or "default"
        if name not in self._known:
            self._known.add(await self.engine.features.get(profiles.Profiles).require(name))
        return name

    # -- reads ----------------------------------------------------------------

    async def page(
        self,
        profile: str | None,
        *,
        prefix: str | None,
        limit: int,
        cursor: str | None,
        tags: Sequence[str] | None = None,
    ) -> api.MemoryPage:
        """One page of the profile's live entries in path order (carrying every tag of
        ``tags``, if given)."""
        name = await self.profile(profile)
        after = _decode_cursor(cursor) if cursor is not None else None
        under = normal_path(prefix, "prefix") if prefix else None
        wanted = normal_tags(tags) if tags else None
        rows = await self.store.memory_page(
            name, prefix=under, limit=limit + 1, after=after, tags=wanted
        )
        more = len(rows) > limit
        rows = rows[:limit]
        next_cursor = _encode_cursor(rows[-1]["path"]) if more else None
        return api.MemoryPage(items=[to_summary(r) for r in rows], next_cursor=next_cursor)

    async def get(self, entry_id: str, profile: str | None) -> api.MemoryEntry:
        """The live entry; ``404 memory_not_found`` if there is none (or it was deleted)."""
        return to_entry(await self._live(entry_id, profile))

    async def history(
        self,
        entry_id: str,
        profile: str | None,
        *,
        limit: int | None = None,
        before: int | None = None,
    ) -> list[api.MemoryVersion]:
        """The entry's versions (a deleted one's too), newest first: every one, or the
        ``limit`` newest older than version ``before``."""
        row = await self._row(entry_id, profile)
        rows = await self.store.memory_history(row["entry_id"], limit=limit, before=before)
        return [to_version(v) for v in rows]

    async def resolve(
        self, profile: str | None, *, path: str | None, slug: str | None
    ) -> api.MemoryEntry:
        """The live entry at ``path``, or the one whose slug is ``slug`` (exactly one
        given); ``409 ambiguous_slug`` when several share the slug."""
        if (path is None) == (slug is None):
            raise ApiError(422, "invalid_request", "give exactly one of path or slug")
        name = await self.profile(profile)
        store = self.store
        if path is not None:
            where = normal_path(path)
            found = await store.memory_at(name, where)
            if found is None:
                raise ApiError(404, "memory_not_found", f"no memory entry at {where!r} in {name!r}")
            return to_entry(found)
        assert slug is not None
        rows = await store.memory_by_slug(name, normal_path(slug, "slug"))
        if not rows:
            raise ApiError(404, "memory_not_found", f"no memory entry with slug {slug!r}")
        if len(rows) > 1:
            paths = [r["path"] for r in rows]
            raise ApiError(
                409,
                "ambiguous_slug",
                f"{len(rows)} entries have slug {slug!r}: resolve one by path ({', '.join(paths)})",
                {"paths": paths},
            )
        return to_entry(rows[0])

    async def search(self, request: api.MemorySearchRequest) -> list[api.MemorySearchHit]:
        """The profile's live entries best matching the query, best first."""
        name = await self.profile(request.profile)
        hits = await self.store.memory_search(
            request.query,
            profile=name,
            limit=request.limit,
            prefix=normal_path(request.prefix, "prefix") if request.prefix else None,
            tags=normal_tags(request.tags) if request.tags else None,
        )
        return [
            api.MemorySearchHit(entry=to_summary(row), score=score, snippet=snippet)
            for row, score, snippet in hits
        ]

    # -- writes ---------------------------------------------------------------

    async def create(
        self, request: api.MemoryCreateRequest, *, author: str | None = None
    ) -> api.MemoryEntry:
        """A new entry; ``409 memory_path_exists`` if its path is taken."""
        name = await self.profile(request.profile)
        path = normal_path(request.path)
        row = {
            "entry_id": new_entry_id(),
            "profile": name,
            "path": path,
            "slug": slug_of(path),
            "title": title_of(request.title),
            "body": body_of(request.body),
            "tags": " ".join(normal_tags(request.tags)),
        }
        entry, _ = await self.store.memory_create(row, author=author)
        return to_entry(entry)

    async def update(
        self, entry_id: str, profile: str | None, request: api.MemoryUpdateRequest
    ) -> api.MemoryEntry:
        """Replace the fields the request gives."""
        values = _fields(request.model_dump(include=request.model_fields_set))
        return await self._change(entry_id, profile, "update", values, request.expected_version)

    async def move(
        self, entry_id: str, profile: str | None, request: api.MemoryMoveRequest
    ) -> api.MemoryEntry:
        """Give the entry a new path."""
        path = normal_path(request.path)
        values = {"path": path, "slug": slug_of(path)}
        return await self._change(entry_id, profile, "move", values, request.expected_version)

    async def delete(
        self, entry_id: str, profile: str | None, expected_version: int | None
    ) -> api.MemoryEntry:
        """Delete the entry (soft: its history stays); the entry as deleted."""
        return await self._change(entry_id, profile, "delete", {}, expected_version)

    async def _change(
        self,
        entry_id: str,
        profile: str | None,
        op: str,
        values: dict[str, Any],
        expected_version: int | None,
    ) -> api.MemoryEntry:
        check_entry_id(entry_id)
        name = await self.profile(profile)
        entry, _ = await self.store.memory_change(
            entry_id, name, op, values, expected_version=expected_version
        )
        return to_entry(entry)

    async def _row(self, entry_id: str, profile: str | None) -> EntryRow:
        """The entry's row (live or deleted); ``400``/``404`` otherwise."""
        check_entry_id(entry_id)
        name = await self.profile(profile)
        row = await self.store.memory_entry(entry_id, name)
        if row is None:
            raise ApiError(404, "memory_not_found", f"no memory entry {entry_id!r} in {name!r}")
        return row

    async def _live(self, entry_id: str, profile: str | None) -> EntryRow:
        row = await self._row(entry_id, profile)
        if row["deleted_at"] is not None:
            raise ApiError(
                404,
                "memory_not_found",
                f"memory entry {entry_id!r} was deleted (its history remains)",
            )
        return row

    # -- nodes ----------------------------------------------------------------

    def tools(self, run: RunTools) -> list[Tool]:
        """The ``memory-*`` tools the node's scopes and kind admit (by name), for a node
        running under its profile (none are made for a node whose scopes admit none)."""
        from ._tools import memory_tools

        profile = run.plan.get("profile") or "default"
        return memory_tools(self, run.node_id, profile, run.run, run.admits)


def to_entry(row: EntryRow) -> api.MemoryEntry:
    """A row of ``heron_memory_entries`` as the wire's :class:`heron.api.MemoryEntry`."""
    return api.MemoryEntry(**_summary_fields(row), body=row["body"])


def to_summary(row: Mapping[str, Any]) -> api.MemoryEntrySummary:
    """A row (its ``body``, or the ``size`` a page query reads instead) as the wire's
    :class:`heron.api.MemoryEntrySummary`."""
    return api.MemoryEntrySummary(**_summary_fields(row))


def _summary_fields(row: Mapping[str, Any]) -> dict[str, Any]:
    size = row["size"] if "size" in row else len(row["body"].encode("utf-8", "surrogatepass"))
    return {
        "entry_id": row["entry_id"],
        "profile": row["profile"],
        "path": row["path"],
        "slug": row["slug"],
        "title": row["title"],
        "tags": row["tags"].split(),
        "size": size,
        "version": row["version"],
        "created_at": when(row["created_at"]),
        "updated_at": when(row["updated_at"]),
        "deleted_at": maybe_when(row["deleted_at"]),
    }


def to_version(row: VersionRow) -> api.MemoryVersion:
    """A row of ``heron_memory_versions`` as the wire's :class:`heron.api.MemoryVersion`."""
    return api.MemoryVersion(
        entry_id=row["entry_id"],
        version=row["version"],
        op=row["op"],
        path=row["path"],
        title=row["title"],
        body=row["body"],
        tags=list(row["tags"]),
        author=row["author"],
        created_at=when(row["created_at"]),
    )


def _fields(given: dict[str, Any]) -> dict[str, Any]:
    """An update's given fields as columns (checked)."""
    values: dict[str, Any] = {}
    if "title" in given:
        values["title"] = title_of(given["title"])
    if given.get("body") is not None:
        values["body"] = body_of(given["body"])
    if given.get("tags") is not None:
        values["tags"] = " ".join(normal_tags(given["tags"]))
    return values


def title_of(title: str | None) -> str | None:
    """A title as kept: one line, ``None`` when blank."""
    text = _unicode((title or "").strip(), "title")
    if any(c in text for c in "\r\n"):
        raise ApiError(422, "invalid_request", "a memory title is one line")
    return text or None


def body_of(body: str) -> str:
    """``body`` if it fits, else ``413 memory_too_large``."""
    size = len(_unicode(body, "body").encode("utf-8"))
    if size > api.MAX_MEMORY_BODY:
        raise ApiError(
            413,
            "memory_too_large",
            f"the body is {size} bytes: a memory entry holds at most {api.MAX_MEMORY_BODY}",
            {"size": size, "limit": api.MAX_MEMORY_BODY},
        )
    return body


def _unicode(text: str, what: str) -> str:
    """``text`` if it is Unicode text, else ``422``: a lone surrogate (a node's model
    can send one; the routes refuse them before this) cannot be stored."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ApiError(
            422,
            "invalid_request",
            f"the {what} holds a lone UTF-16 surrogate (\\ud800-\\udfff), which is not text",
        ) from None
    return text


CURSOR_PATTERN = r"^(?:[0-9a-f]{2}){1,4096}$"
"""A page cursor: the hex of the UTF-8 path the next page starts after. Any string of
this form is a position in path order, so every cursor the pattern allows is one."""

_CURSOR = re.compile(CURSOR_PATTERN)


def _encode_cursor(path: str) -> str:
    return path.encode("utf-8").hex()


def _decode_cursor(cursor: str) -> str:
    """The path a cursor continues after; ``400 invalid_cursor`` otherwise."""
    if _CURSOR.fullmatch(cursor) is None:
        raise ApiError(400, "invalid_cursor", f"not a cursor this list gave: {cursor[:80]!r}")
    return bytes.fromhex(cursor).decode("utf-8", "replace")
