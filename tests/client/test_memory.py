"""``client.memory`` through both clients against a real daemon."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.support.daemon import Daemon

from heron import api
from heron.client import (
    APIError,
    BadRequestError,
    ConflictError,
    Heron,
    MemoryList,
    NotFoundError,
    UnprocessableEntityError,
)

from ._both import MODES, On, on_client


@pytest.fixture(params=MODES)
async def on(request: pytest.FixtureRequest, daemon: Daemon) -> AsyncIterator[On]:
    async with on_client(request.param, daemon) as client:
        yield client


@pytest.fixture
async def profile(on: On) -> str:
    """A fresh profile per test (the module's tests share one daemon)."""
    name = f"cm-{on.mode}-{secrets.token_hex(3)}"
    await on(lambda c: c.profiles.ensure(name))
    return name


async def test_round_trip_versions_move_delete_history(on: On, profile: str) -> None:
    entry = await on(
        lambda c: c.memory.create(
            "notes/db", "We use SQLite.", title="Database", tags=["design"], profile=profile
        )
    )
    assert isinstance(entry, api.MemoryEntry)
    assert (entry.path, entry.slug, entry.version, entry.tags) == ("notes/db", "db", 1, ["design"])
    got = await on(lambda c: c.memory.retrieve(entry.entry_id, profile=profile))
    assert got == entry
    updated = await on(
        lambda c: c.memory.update(
            entry.entry_id, profile=profile, body="We use PostgreSQL.", expected_version=1
        )
    )
    assert updated.version == 2 and updated.title == "Database"
    cleared = await on(lambda c: c.memory.update(entry.entry_id, profile=profile, title=None))
    assert cleared.title is None and cleared.version == 3
    with pytest.raises(ConflictError) as conflict:
        await on(
            lambda c: c.memory.update(entry.entry_id, profile=profile, body="x", expected_version=1)
        )
    assert conflict.value.code == "version_conflict"
    moved = await on(lambda c: c.memory.move(entry.entry_id, "archive/db", profile=profile))
    assert moved.path == "archive/db" and moved.version == 4
    resolved = await on(lambda c: c.memory.resolve(slug="db", profile=profile))
    assert resolved.entry_id == entry.entry_id
    hits = await on(lambda c: c.memory.search("postgresql", profile=profile))
    assert [h.entry.entry_id for h in hits] == [entry.entry_id]
    assert isinstance(hits[0], api.MemorySearchHit) and "**PostgreSQL**" in hits[0].snippet
    deleted = await on(lambda c: c.memory.delete(entry.entry_id, profile=profile))
    assert deleted.deleted_at is not None
    with pytest.raises(NotFoundError) as gone:
        await on(lambda c: c.memory.retrieve(entry.entry_id, profile=profile))
    assert gone.value.code == "memory_not_found"
    history = await on(lambda c: c.memory.history(entry.entry_id, profile=profile))
    assert [v.op for v in history] == ["delete", "move", "update", "update", "create"]
    assert all(isinstance(v, api.MemoryVersion) for v in history)


async def test_list_pages_and_list_all(on: On, profile: str) -> None:
    paths = [f"k/{i:03d}" for i in range(5)]
    for path in paths:
        await on(lambda c, path=path: c.memory.create(path, f"body {path}", profile=profile))
    first = await on(lambda c: c.memory.list(profile=profile, limit=2))
    # A page is a plain list, as search and history answer: iterating it yields entries.
    assert isinstance(first, MemoryList) and isinstance(first, list)
    assert all(isinstance(e, api.MemoryEntrySummary) for e in first)
    assert [e.path for e in first] == paths[:2] and first.next_cursor is not None
    second = await on(lambda c: c.memory.list(profile=profile, limit=2, cursor=first.next_cursor))
    assert [e.path for e in second] == paths[2:4]
    last = await on(lambda c: c.memory.list(profile=profile, limit=2, cursor=second.next_cursor))
    assert [e.path for e in last] == paths[4:] and last.next_cursor is None
    everything = await on(lambda c: c.memory.list_all(profile=profile))
    assert [e.path for e in everything] == paths
    assert [e.path for e in await on(lambda c: c.memory.list_all(profile=profile, prefix="k"))] == (
        paths
    )
    with pytest.raises(BadRequestError) as bad:
        await on(lambda c: c.memory.list(profile=profile, cursor="garbage"))
    assert bad.value.code == "invalid_cursor"


async def test_daemon_refusals_keep_their_codes(on: On, profile: str) -> None:
    await on(lambda c: c.memory.create("a/x", "one", profile=profile))
    await on(lambda c: c.memory.create("b/x", "two", profile=profile))
    with pytest.raises(ConflictError) as taken:
        await on(lambda c: c.memory.create("a/x", "again", profile=profile))
    assert taken.value.code == "memory_path_exists"
    with pytest.raises(ConflictError) as ambiguous:
        await on(lambda c: c.memory.resolve(slug="x", profile=profile))
    assert ambiguous.value.code == "ambiguous_slug"
    assert ambiguous.value.details == {"paths": ["a/x", "b/x"]}
    with pytest.raises(UnprocessableEntityError) as path:
        await on(lambda c: c.memory.create("a/../b", "x", profile=profile))
    assert path.value.code == "invalid_memory_path"
    with pytest.raises(UnprocessableEntityError) as unknown:
        await on(lambda c: c.memory.list(profile="never-ensured-profile"))
    assert unknown.value.code == "unknown_profile"
    with pytest.raises(APIError) as large:
        await on(lambda c: c.memory.create("big", "x" * (api.MAX_MEMORY_BODY + 1), profile=profile))
    assert (large.value.status, large.value.code) == (413, "memory_too_large")


async def test_bad_arguments_are_refused_before_sending(on: On) -> None:
    for call in (
        lambda c: c.memory.retrieve("bad id"),
        lambda c: c.memory.update("../x", body="x"),
        lambda c: c.memory.delete(""),
        lambda c: c.memory.move(None, "a"),
        lambda c: c.memory.history("a/b"),
        lambda c: c.memory.list(profile="bad profile"),
    ):
        with pytest.raises(TypeError, match=r"invalid (memory id|profile name)"):
            await on(call)
    with pytest.raises(TypeError, match="exactly one of path= or slug="):
        await on(lambda c: c.memory.resolve())
    with pytest.raises(TypeError, match="exactly one"):
        await on(lambda c: c.memory.resolve(path="a", slug="a"))
    with pytest.raises(ValueError, match="limit"):
        await on(lambda c: c.memory.list(limit=201))
    with pytest.raises(ValueError, match="limit"):
        await on(lambda c: c.memory.search("x", limit=0))


async def test_list_filters_by_tags_and_a_bare_string_is_refused(on: On) -> None:
    profile = f"ct-{on.mode}-{secrets.token_hex(3)}"
    await on(lambda c: c.profiles.ensure(profile))
    await on(lambda c: c.memory.create("a", "one", tags=["x", "y"], profile=profile))
    await on(lambda c: c.memory.create("b", "two", tags=["x"], profile=profile))
    page = await on(lambda c: c.memory.list(profile=profile, tags=["y"]))
    assert [e.path for e in page] == ["a"]
    every = await on(lambda c: c.memory.list_all(profile=profile, tags=["X"]))
    assert [e.path for e in every] == ["a", "b"]
    for call in (
        lambda c: c.memory.create("c", "three", tags="x", profile=profile),
        lambda c: c.memory.search("three", tags="x", profile=profile),
        lambda c: c.memory.list(profile=profile, tags="x"),
    ):
        with pytest.raises(TypeError, match="not one string"):
            await on(call)
    assert [e.path for e in (await on(lambda c: c.memory.list_all(profile=profile)))] == ["a", "b"]


async def test_history_pages_through_both_clients(on: On) -> None:
    profile = f"ch-{on.mode}-{secrets.token_hex(3)}"
    await on(lambda c: c.profiles.ensure(profile))
    entry = await on(lambda c: c.memory.create("h", "1", profile=profile))
    for n in (2, 3):
        await on(lambda c, n=n: c.memory.update(entry.entry_id, body=str(n), profile=profile))
    newest = await on(lambda c: c.memory.history(entry.entry_id, profile=profile, limit=2))
    assert [v.version for v in newest] == [3, 2]
    older = await on(lambda c: c.memory.history(entry.entry_id, profile=profile, limit=2, before=2))
    assert [(v.version, v.op) for v in older] == [(1, "create")]


def test_nothing_is_sent_for_a_bad_id(tmp_path: Path) -> None:
    # Nothing listens on this socket: a request would fail with a connection error.
    with Heron(socket_path=tmp_path / "nobody.sock", auto_start=False) as client:
        with pytest.raises(TypeError):
            client.memory.retrieve("not an id")
