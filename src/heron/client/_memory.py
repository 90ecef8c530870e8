"""``client.memory``: a profile's notes by path, versioned and searchable (``/v1/memory``)."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any, TypedDict, Unpack

from .. import api
from ._flow import Flow
from ._options import RequestOptions
from ._resource import M, Resource, check_id, endpoint

__all__ = ["MAX_HITS", "MAX_PAGE", "Memory", "MemoryList", "MemoryUpdateParams"]

MAX_PAGE = 200
"""The most entries one ``memory.list`` page holds."""
MAX_VERSIONS = 1000
"""The most versions one ``memory.history`` call asks for by ``limit``."""
MAX_HITS = 100
"""The most hits one ``memory.search`` returns."""


class MemoryList(builtins.list["api.MemoryEntrySummary"]):
    """What ``client.memory.list`` returns: a plain list of entry summaries, in path
    order, that also knows the cursor of its next page (as ``search`` and ``history``
    return plain lists, and ``client.nodes.list`` a list with its ``next_cursor``)."""

    next_cursor: str | None = None
    """Pass it as ``cursor`` for the next page (``None``: this was the last)."""


class MemoryUpdateParams(TypedDict, total=False):
    """``PATCH /v1/memory/{id}``: the fields given replace the entry's."""

    title: str | None
    """A new one-line title (``None`` clears it)."""
    body: str
    """A new Markdown body."""
    tags: list[str]
    """New tags, replacing all of them."""
    expected_version: int
    """Refuse (``ConflictError`` ``version_conflict``) unless the entry is at this version."""


def _entry(entry_id: object) -> str:
    return f"/v1/memory/{check_id(entry_id, 'memory id')}"


def _profile(profile: str | None) -> dict[str, Any]:
    return {"profile": check_id(profile, "profile name")} if profile is not None else {}


def _tag_list(tags: Sequence[str]) -> builtins.list[str]:
    if isinstance(tags, str):  # a str is a Sequence[str]: it would go letter by letter
        raise TypeError(f"tags must be a list of strings, not one string ({tags!r})")
    return builtins.list(tags)


def _tags(tags: Sequence[str] | None) -> builtins.list[str] | None:
    return _tag_list(tags) if tags is not None and len(tags) else None


def _limit(limit: int | None, most: int) -> int | None:
    if limit is not None and (
        isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= most
    ):
        raise ValueError(f"limit must be a whole number from 1 to {most}, got {limit!r}")
    return limit


class Memory(Resource[M]):
    """``client.memory``: notes kept per profile by path (``a/b/c``), every version kept.

    Every method works in one profile's memory: ``profile`` (default ``default``;
    one never ensured is ``UnprocessableEntityError`` ``unknown_profile``). Entry
    ids are checked before anything is sent (``TypeError``).

    Example::

        entry = client.memory.create("projects/heron/db", "We use SQLite.", tags=["design"])
        client.memory.update(entry.entry_id, body="We use SQLite and PostgreSQL.")
        for hit in client.memory.search("postgresql"):
            print(hit.entry.path, hit.score, hit.snippet)
    """

    @endpoint
    def list(
        self,
        *,
        profile: str | None = None,
        prefix: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        tags: Sequence[str] | None = None,
        options: RequestOptions | None = None,
    ) -> Flow[MemoryList]:
        """``GET /v1/memory``: one page of live entries in path order, without their
        bodies (``retrieve`` one for its body), as a plain list.

        ``prefix`` keeps the entries at that path or under it; ``limit`` (1-200,
        default 50 by the daemon) sizes the page; ``cursor`` is the previous page's
        ``next_cursor`` (the list's, ``None`` on the last page). ``list_all`` follows
        them all. ``tags`` keeps the entries carrying every one of them::

            page = client.memory.list(limit=50)
            for entry in page:
                print(entry.path)
            if page.next_cursor is not None:
                page = client.memory.list(limit=50, cursor=page.next_cursor)
        """
        query = {**_profile(profile), "prefix": prefix, "limit": _limit(limit, MAX_PAGE)}
        query.update(cursor=cursor, tag=_tags(tags))
        return self._page(query, options)

    def _page(self, query: dict[str, Any], options: RequestOptions | None) -> Flow[MemoryList]:
        page: api.MemoryPage = yield from self._call(
            "GET", "/v1/memory", api.MemoryPage, query=query, options=options
        )
        entries = MemoryList(page.items)
        entries.next_cursor = page.next_cursor
        return entries

    @endpoint
    def list_all(
        self,
        *,
        profile: str | None = None,
        prefix: str | None = None,
        tags: Sequence[str] | None = None,
        options: RequestOptions | None = None,
    ) -> Flow[builtins.list[api.MemoryEntrySummary]]:
        """Every live entry in path order, without bodies: ``list`` page after page
        (200 at a time)."""
        query = {**_profile(profile), "prefix": prefix, "limit": MAX_PAGE, "tag": _tags(tags)}
        return self._all(query, options)

    def _all(
        self, query: dict[str, Any], options: RequestOptions | None
    ) -> Flow[builtins.list[api.MemoryEntrySummary]]:
        entries: builtins.list[api.MemoryEntrySummary] = []
        cursor: str | None = None
        while True:
            page: api.MemoryPage = yield from self._call(
                "GET",
                "/v1/memory",
                api.MemoryPage,
                query={**query, "cursor": cursor},
                options=options,
            )
            entries += page.items
            cursor = page.next_cursor
            if cursor is None:
                return entries

    @endpoint
    def retrieve(
        self, entry_id: str, *, profile: str | None = None, options: RequestOptions | None = None
    ) -> Flow[api.MemoryEntry]:
        """``GET /v1/memory/{id}``: one live entry (a deleted one is ``NotFoundError``)."""
        path = _entry(entry_id)
        return self._call("GET", path, api.MemoryEntry, query=_profile(profile), options=options)

    @endpoint
    def create(
        self,
        path: str,
        body: str,
        *,
        title: str | None = None,
        tags: Sequence[str] | None = None,
        profile: str | None = None,
        options: RequestOptions | None = None,
    ) -> Flow[api.MemoryEntry]:
        """``POST /v1/memory``: a new entry at ``path`` (segments of letters, digits,
        ``_ . -`` joined by ``/``). ``ConflictError`` ``memory_path_exists`` if a live
        entry has that path; ``APIError`` 413 ``memory_too_large`` over 256 KiB."""
        request: dict[str, Any] = {"path": path, "body": body, **_profile(profile)}
        if title is not None:
            request["title"] = title
        if tags is not None:
            request["tags"] = _tag_list(tags)
        return self._call("POST", "/v1/memory", api.MemoryEntry, body=request, options=options)

    @endpoint
    def update(
        self,
        entry_id: str,
        *,
        profile: str | None = None,
        options: RequestOptions | None = None,
        **fields: Unpack[MemoryUpdateParams],
    ) -> Flow[api.MemoryEntry]:
        """``PATCH /v1/memory/{id}``: replace the title, body or tags given (a new
        version, unless nothing changes)."""
        path = _entry(entry_id)
        return self._call(
            "PATCH",
            path,
            api.MemoryEntry,
            query=_profile(profile),
            body=dict(fields),
            options=options,
        )

    @endpoint
    def delete(
        self,
        entry_id: str,
        *,
        profile: str | None = None,
        expected_version: int | None = None,
        options: RequestOptions | None = None,
    ) -> Flow[api.MemoryEntry]:
        """``DELETE /v1/memory/{id}``: delete the entry (gone from list, search and
        resolve; its history stays); returns it as deleted."""
        query = {**_profile(profile), "expected_version": expected_version}
        return self._call("DELETE", _entry(entry_id), api.MemoryEntry, query=query, options=options)

    @endpoint
    def move(
        self,
        entry_id: str,
        path: str,
        *,
        profile: str | None = None,
        expected_version: int | None = None,
        options: RequestOptions | None = None,
    ) -> Flow[api.MemoryEntry]:
        """``POST /v1/memory/{id}/move``: give the entry the new ``path``."""
        request: dict[str, Any] = {"path": path}
        if expected_version is not None:
            request["expected_version"] = expected_version
        return self._call(
            "POST",
            f"{_entry(entry_id)}/move",
            api.MemoryEntry,
            query=_profile(profile),
            body=request,
            options=options,
        )

    @endpoint
    def search(
        self,
        query: str,
        *,
        profile: str | None = None,
        limit: int | None = None,
        prefix: str | None = None,
        tags: Sequence[str] | None = None,
        options: RequestOptions | None = None,
    ) -> Flow[builtins.list[api.MemorySearchHit]]:
        """``POST /v1/memory/search``: the best matching live entries, best first.

        ``query`` reads like a web search: words (all must match), ``"a phrase"``,
        ``-word`` to exclude, ``or`` between alternatives; nothing in it is an error.
        ``limit`` 1-100 (default 10), ``prefix`` and ``tags`` (all of them) filter.
        """
        request: dict[str, Any] = {"query": query, **_profile(profile)}
        extra: dict[str, Any] = {"limit": _limit(limit, MAX_HITS), "prefix": prefix}
        extra["tags"] = _tag_list(tags) if tags is not None else None
        request.update({k: v for k, v in extra.items() if v is not None})
        result = builtins.list[api.MemorySearchHit]
        return self._call("POST", "/v1/memory/search", result, body=request, options=options)

    @endpoint
    def history(
        self,
        entry_id: str,
        *,
        profile: str | None = None,
        limit: int | None = None,
        before: int | None = None,
        options: RequestOptions | None = None,
    ) -> Flow[builtins.list[api.MemoryVersion]]:
        """``GET /v1/memory/{id}/history``: the versions, newest first (a deleted
        entry's too): every one, or the ``limit`` newest (1-1000) older than version
        ``before`` (pass the last one's ``version`` to read on)."""
        path = f"{_entry(entry_id)}/history"
        result = builtins.list[api.MemoryVersion]
        query = {**_profile(profile), "limit": _limit(limit, MAX_VERSIONS), "before": before}
        return self._call("GET", path, result, query=query, options=options)

    @endpoint
    def resolve(
        self,
        *,
        path: str | None = None,
        slug: str | None = None,
        profile: str | None = None,
        options: RequestOptions | None = None,
    ) -> Flow[api.MemoryEntry]:
        """``GET /v1/memory/resolve``: the live entry at ``path``, or whose last path
        segment is ``slug`` (give exactly one: ``TypeError`` otherwise, nothing sent).
        ``ConflictError`` ``ambiguous_slug`` (its ``details["paths"]`` lists them) when
        several entries share the slug."""
        if (path is None) == (slug is None):
            raise TypeError("memory.resolve takes exactly one of path= or slug=")
        query = {**_profile(profile), "path": path, "slug": slug}
        return self._call(
            "GET", "/v1/memory/resolve", api.MemoryEntry, query=query, options=options
        )
