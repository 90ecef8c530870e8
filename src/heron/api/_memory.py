"""Memory: a profile's notes, kept by path, versioned, searchable (``/v1/memory``)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal, TypeAlias

from pydantic import Field, StringConstraints

from ._common import MEMORY_PATH_PATTERN, ProfileOrDefault, RequestModel, WireModel

__all__ = [
    "MAX_MEMORY_BODY",
    "MemoryCreateRequest",
    "MemoryEntry",
    "MemoryEntrySummary",
    "MemoryMoveRequest",
    "MemoryOp",
    "MemoryPage",
    "MemorySearchHit",
    "MemorySearchRequest",
    "MemoryTag",
    "MemoryUpdateRequest",
    "MemoryVersion",
]

MAX_MEMORY_BODY = 256 * 1024
"""The largest entry body accepted, in bytes of UTF-8 (a larger one is ``413 memory_too_large``)."""

MemoryOp: TypeAlias = Literal["create", "update", "move", "delete"]
"""What a version of an entry recorded."""

# Checked by the daemon (422 invalid_memory_path names the rule broken), so only bounded here.
_Path = Annotated[
    str,
    StringConstraints(min_length=1, max_length=1024),
    # Documented, but checked by the memory: another answers 422 invalid_memory_path.
    Field(json_schema_extra={"pattern": MEMORY_PATH_PATTERN, "maxLength": 512}),
]
_Title = Annotated[str, StringConstraints(max_length=512)]
MemoryTag: TypeAlias = Annotated[
    str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")
]
"""A tag: letters, digits, ``_ . : -`` (up to 64 characters; matched case-insensitively)."""
_Tags = Annotated[list[MemoryTag], Field(max_length=32)]
_Profile = ProfileOrDefault


class MemoryEntrySummary(WireModel):
    """An entry without its body: what ``list`` and ``search`` answer (a page of 200
    entries stays small); ``retrieve`` or ``resolve`` gives the body."""

    entry_id: str
    """Identifier (``mem_…``); stays the same across updates and moves."""
    profile: str
    """The profile whose memory holds it."""
    path: str
    """Where it lives: ``a/b/c`` (unique among the profile's live entries)."""
    slug: str
    """The last segment of its path (``resolve`` finds an entry by it)."""
    title: str | None
    """A one-line title, if given."""
    tags: list[str]
    """Short labels to filter by."""
    size: int
    """The body's length in bytes of UTF-8."""
    version: int
    """1 on create, one more on each change (update, move, delete)."""
    created_at: datetime
    """When it was created."""
    updated_at: datetime
    """When it last changed."""
    deleted_at: datetime | None
    """When it was deleted (only a ``DELETE`` answer shows one: deleted entries are gone
    from list, search and resolve; their history stays)."""


class MemoryEntry(MemoryEntrySummary):
    """One memory entry as it is now, body included."""

    body: str
    """The entry itself (Markdown)."""


class MemoryPage(WireModel):
    """One page of ``GET /v1/memory``, in path order."""

    items: list[MemoryEntrySummary]
    """The entries of this page (without bodies: ``retrieve`` one for its body)."""
    next_cursor: str | None
    """Pass as ``cursor`` for the next page; ``None`` on the last page."""


class MemoryVersion(WireModel):
    """One kept version of an entry: what it was after a create, update, move or delete."""

    entry_id: str
    """The entry."""
    version: int
    """The entry's version this recorded."""
    op: MemoryOp
    """What made it."""
    path: str
    """The entry's path then."""
    title: str | None
    """Its title then."""
    body: str
    """Its body then."""
    tags: list[str]
    """Its tags then."""
    author: str | None
    """The node that made the change (``None``: a client of the API)."""
    created_at: datetime
    """When the change was made."""


class MemorySearchHit(WireModel):
    """One search result, best first."""

    entry: MemoryEntrySummary
    """The matching entry (without its body: ``snippet`` shows the match)."""
    score: float
    """Relevance (higher is better; comparable only within one search)."""
    snippet: str
    """An excerpt around the match, matched words wrapped in ``**``."""


class MemoryCreateRequest(RequestModel):
    """``POST /v1/memory``: a new entry at a path not taken in the profile."""

    path: _Path
    """Where it goes: segments of letters, digits, ``_ . -`` joined by ``/`` (up to 512)."""
    body: str
    """The entry (Markdown; at most 256 KiB of UTF-8)."""
    title: _Title | None = None
    """A one-line title."""
    tags: _Tags = Field(default_factory=list)
    """Short labels (letters, digits, ``_ . : -``; up to 64 characters, 32 tags)."""
    profile: _Profile = "default"
    """The profile whose memory gets it (it must exist)."""


class MemoryUpdateRequest(RequestModel):
    """``PATCH /v1/memory/{id}``: the fields given replace the entry's."""

    title: _Title | None = None
    """A new title (``null`` clears it)."""
    body: str | None = None
    """A new body."""
    tags: _Tags | None = None
    """New tags (replacing all of them)."""
    expected_version: Annotated[int, Field(ge=1, le=2**53 - 1)] | None = None
    """Refuse (``409 version_conflict``) unless the entry is at this version."""


class MemoryMoveRequest(RequestModel):
    """``POST /v1/memory/{id}/move``: give the entry a new path."""

    path: _Path
    """The new path (not taken among the profile's live entries)."""
    expected_version: Annotated[int, Field(ge=1, le=2**53 - 1)] | None = None
    """Refuse (``409 version_conflict``) unless the entry is at this version."""


class MemorySearchRequest(RequestModel):
    """``POST /v1/memory/search``: full-text search of one profile's live entries.

    ``query`` is web-search style: words (all must match), ``"a phrase"``,
    ``-word`` to exclude, ``or`` between alternatives. Nothing in it is syntax
    that can fail: quotes, ``*`` or ``AND`` are matched as text.
    """

    query: Annotated[str, StringConstraints(min_length=1, max_length=1000)]
    """What to look for."""
    profile: _Profile = "default"
    """The profile whose memory is searched."""
    limit: Annotated[int, Field(ge=1, le=100)] = 10
    """At most this many hits."""
    prefix: _Path | None = None
    """Only entries at this path or under it."""
    tags: _Tags | None = None
    """Only entries carrying every one of these tags."""
