"""Memory routes: ``/v1/memory…`` (entries by path, versions, search, resolve)."""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Annotated

from fastapi import FastAPI, Path, Query

from ... import api
from ...api import MEMORY_PATH_PATTERN
from ..server import MAX_INTEGER, errors
from ._service import CURSOR_PATTERN

if TYPE_CHECKING:
    from ._service import Memory

__all__ = ["add_memory_routes"]

DEFAULT_LIMIT = 50
"""Entries a list page holds when no ``limit`` is given."""

EntryId = Annotated[
    str,
    Path(
        description="The entry's id (`mem_…`).",
        # Documented, but checked by the memory: a bad id answers 400 invalid_memory_id.
        json_schema_extra={"pattern": api.ID_PATTERN},
    ),
]
"""An ``{entry_id}`` path parameter."""

ProfileQuery = Annotated[
    str,
    Query(
        max_length=128,
        description="The profile whose memory it is.",
        # Empty: the default profile.
        json_schema_extra={"pattern": r"^(?:[A-Za-z0-9][A-Za-z0-9_.-]{0,127})?$"},
    ),
]
"""The ``profile`` a route works in (``default`` when not given)."""

ExpectedVersion = Annotated[
    int | None,
    Query(
        ge=1, le=MAX_INTEGER, description="Refuse (409 version_conflict) unless at this version."
    ),
]


def add_memory_routes(app: FastAPI, memory: Memory) -> None:
    """Serve ``/v1/memory…``."""
    tags: list[str | Enum] = ["memory"]

    @app.get("/v1/memory", tags=tags, responses=errors(400, 422))
    async def list_memory(
        profile: ProfileQuery = "default",
        prefix: Annotated[
            str | None,
            Query(
                max_length=1024,
                description="Only entries at or under this path (empty: all).",
                json_schema_extra={"pattern": f"^$|{MEMORY_PATH_PATTERN}", "maxLength": 512},
            ),
        ] = None,
        limit: Annotated[int, Query(ge=1, le=200, description="At most this many (1-200).")] = (
            DEFAULT_LIMIT
        ),
        cursor: Annotated[
            str | None,
            Query(
                max_length=8192,
                description="The previous page's next_cursor.",
                json_schema_extra={"pattern": CURSOR_PATTERN},
            ),
        ] = None,
        tag: Annotated[
            list[api.MemoryTag] | None,
            Query(max_length=32, description="Only entries carrying this tag (repeat: all)."),
        ] = None,
    ) -> api.MemoryPage:
        """The profile's live entries in path order, one page at a time (no bodies)."""
        return await memory.page(profile, prefix=prefix, limit=limit, cursor=cursor, tags=tag)

    @app.post("/v1/memory", status_code=201, tags=tags, responses=errors(400, 409, 413, 415, 422))
    async def create_memory(body: api.MemoryCreateRequest) -> api.MemoryEntry:
        """A new entry (``409 memory_path_exists`` if a live entry has its path)."""
        return await memory.create(body)

    @app.post("/v1/memory/search", tags=tags, responses=errors(400, 413, 415, 422))
    async def search_memory(body: api.MemorySearchRequest) -> list[api.MemorySearchHit]:
        """Full-text search of the profile's live entries, best match first."""
        return await memory.search(body)

    # Before /v1/memory/{entry_id}, which would take "resolve" for an id.
    @app.get("/v1/memory/resolve", tags=tags, responses=errors(400, 404, 409, 422))
    async def resolve_memory(
        profile: ProfileQuery = "default",
        path: Annotated[
            str | None,
            Query(
                max_length=1024,
                description="The entry's path.",
                json_schema_extra={"pattern": MEMORY_PATH_PATTERN, "maxLength": 512},
            ),
        ] = None,
        slug: Annotated[
            str | None,
            Query(
                max_length=512,
                description="The last segment of its path.",
                json_schema_extra={"pattern": MEMORY_PATH_PATTERN},
            ),
        ] = None,
    ) -> api.MemoryEntry:
        """The live entry at ``path``, or with ``slug`` (exactly one of them);
        ``409 ambiguous_slug`` lists the paths when several share the slug."""
        return await memory.resolve(profile, path=path, slug=slug)

    @app.get("/v1/memory/{entry_id}", tags=tags, responses=errors(400, 404, 422))
    async def get_memory(entry_id: EntryId, profile: ProfileQuery = "default") -> api.MemoryEntry:
        """One live entry."""
        return await memory.get(entry_id, profile)

    @app.patch("/v1/memory/{entry_id}", tags=tags, responses=errors(400, 404, 409, 413, 415, 422))
    async def update_memory(
        entry_id: EntryId, body: api.MemoryUpdateRequest, profile: ProfileQuery = "default"
    ) -> api.MemoryEntry:
        """Replace the title, body or tags given (a new version, unless nothing changes)."""
        return await memory.update(entry_id, profile, body)

    @app.delete("/v1/memory/{entry_id}", tags=tags, responses=errors(400, 404, 409, 422))
    async def delete_memory(
        entry_id: EntryId,
        profile: ProfileQuery = "default",
        expected_version: ExpectedVersion = None,
    ) -> api.MemoryEntry:
        """Delete the entry: gone from list, search and resolve; its history stays."""
        return await memory.delete(entry_id, profile, expected_version)

    @app.post(
        "/v1/memory/{entry_id}/move", tags=tags, responses=errors(400, 404, 409, 413, 415, 422)
    )
    async def move_memory(
        entry_id: EntryId, body: api.MemoryMoveRequest, profile: ProfileQuery = "default"
    ) -> api.MemoryEntry:
        """Give the entry a new path (``409 memory_path_exists`` if it is taken)."""
        return await memory.move(entry_id, profile, body)

    @app.get("/v1/memory/{entry_id}/history", tags=tags, responses=errors(400, 404, 422))
    async def memory_history(
        entry_id: EntryId,
        profile: ProfileQuery = "default",
        limit: Annotated[
            int | None, Query(ge=1, le=1000, description="At most this many (1-1000).")
        ] = None,
        before: Annotated[
            int | None,
            Query(ge=1, le=MAX_INTEGER, description="Only versions older than this one."),
        ] = None,
    ) -> list[api.MemoryVersion]:
        """The entry's versions, newest first (a deleted entry's too): all of them, or
        ``limit`` at a time, reading on with ``before`` = the last version seen."""
        return await memory.history(entry_id, profile, limit=limit, before=before)
