"""``client.memory`` tags: list filters by them; a bare string is refused locally."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator

import pytest
from tests.runtime.conftest import Daemon

from ._both import MODES, On, on_client


@pytest.fixture(params=MODES)
async def on(request: pytest.FixtureRequest, daemon: Daemon) -> AsyncIterator[On]:
    async with on_client(request.param, daemon) as client:
        yield client


async def test_list_filters_by_tags_and_a_bare_string_is_refused(on: On) -> None:
    profile = f"ct-{on.mode}-{secrets.token_hex(3)}"
    await on(lambda c: c.profiles.ensure(profile))
    await on(lambda c: c.memory.create("a", "one", tags=["x", "y"], profile=profile))
    await on(lambda c: c.memory.create("b", "two", tags=["x"], profile=profile))
    page = await on(lambda c: c.memory.list(profile=profile, tags=["y"]))
    assert [e.path for e in page.items] == ["a"]
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
