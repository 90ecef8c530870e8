"""Memory over HTTP on a real daemon (SQLite): entries, versions, paths, search, paging."""

from __future__ import annotations

import secrets
from typing import Any

import httpx
import pytest
from tests.support.memory import code, make, search

from heron import api


@pytest.fixture
def profile(client: httpx.Client) -> str:
    """A fresh profile per test: the module's tests share one daemon."""
    name = f"mem-{secrets.token_hex(4)}"
    response = client.post("/v1/profiles/ensure", json={"name": name})
    assert response.status_code == 200, response.text
    return name


def test_create_read_update_delete_round_trip(client: httpx.Client, profile: str) -> None:
    entry = make(
        client,
        profile,
        "/projects/heron/decisions/",
        "# Use SQLite\n",
        title="DB",
        tags=["Design", "db"],
    )
    api.MemoryEntry.model_validate(entry)
    assert entry["entry_id"].startswith("mem_") and api.is_valid_id(entry["entry_id"])
    assert entry["path"] == "projects/heron/decisions" and entry["slug"] == "decisions"
    assert entry["tags"] == ["design", "db"] and entry["version"] == 1
    assert entry["profile"] == profile and entry["deleted_at"] is None
    entry_id = entry["entry_id"]
    got = client.get(f"/v1/memory/{entry_id}", params={"profile": profile}).json()
    assert got == entry

    patched = client.patch(
        f"/v1/memory/{entry_id}",
        params={"profile": profile},
        json={"body": "# Use PostgreSQL too\n"},
    ).json()
    assert (
        patched["version"] == 2 and patched["title"] == "DB" and patched["tags"] == ["design", "db"]
    )
    assert patched["body"] == "# Use PostgreSQL too\n"
    # A patch that changes nothing makes no version.
    same = client.patch(
        f"/v1/memory/{entry_id}", params={"profile": profile}, json={"title": "DB"}
    ).json()
    assert same["version"] == 2
    cleared = client.patch(
        f"/v1/memory/{entry_id}", params={"profile": profile}, json={"title": None, "tags": []}
    ).json()
    assert cleared["version"] == 3 and cleared["title"] is None and cleared["tags"] == []

    deleted = client.delete(f"/v1/memory/{entry_id}", params={"profile": profile})
    assert deleted.status_code == 200 and deleted.json()["deleted_at"] is not None
    assert deleted.json()["version"] == 4
    assert code(client.get(f"/v1/memory/{entry_id}", params={"profile": profile})) == (
        404,
        "memory_not_found",
    )
    assert client.get("/v1/memory", params={"profile": profile}).json()["items"] == []
    assert search(client, profile, "PostgreSQL") == []
    assert code(
        client.get(
            "/v1/memory/resolve", params={"profile": profile, "path": "projects/heron/decisions"}
        )
    ) == (404, "memory_not_found")
    assert code(client.delete(f"/v1/memory/{entry_id}", params={"profile": profile})) == (
        404,
        "memory_not_found",
    )
    # The path is free again; the history of the deleted entry stays.
    again = make(client, profile, "projects/heron/decisions", "fresh")
    assert again["entry_id"] != entry_id and again["version"] == 1
    history = client.get(f"/v1/memory/{entry_id}/history", params={"profile": profile}).json()
    assert [v["op"] for v in history] == ["delete", "update", "update", "create"]
    assert [v["version"] for v in history] == [4, 3, 2, 1]
    assert history[-1]["body"] == "# Use SQLite\n" and history[-1]["tags"] == ["design", "db"]
    assert all(v["author"] is None for v in history)


def test_entries_belong_to_their_profile(client: httpx.Client, profile: str) -> None:
    entry = make(client, profile, "notes/a", "only here")
    assert code(client.get(f"/v1/memory/{entry['entry_id']}")) == (404, "memory_not_found")
    listed = client.get("/v1/memory", params={"prefix": "notes/a"}).json()["items"]
    assert entry["entry_id"] not in [e["entry_id"] for e in listed]
    # The same path in another profile is another entry.
    other = make(client, "default", f"notes/{profile}", "default's")
    assert other["profile"] == "default"
    assert search(client, profile, "default's") == []
    assert search(client, "default", profile)[0]["entry"]["entry_id"] == other["entry_id"]


def test_move_resolve_and_ambiguous_slug(client: httpx.Client, profile: str) -> None:
    a = make(client, profile, "team/alpha/plan", "alpha's plan")
    b = make(client, profile, "team/beta/notes", "beta's notes")
    moved = client.post(
        f"/v1/memory/{b['entry_id']}/move",
        params={"profile": profile},
        json={"path": "team/beta/plan"},
    )
    assert moved.status_code == 200, moved.text
    assert moved.json()["path"] == "team/beta/plan" and moved.json()["slug"] == "plan"
    assert moved.json()["version"] == 2
    ambiguous = client.get("/v1/memory/resolve", params={"profile": profile, "slug": "plan"})
    assert code(ambiguous) == (409, "ambiguous_slug")
    assert ambiguous.json()["error"]["details"]["paths"] == ["team/alpha/plan", "team/beta/plan"]
    by_path = client.get(
        "/v1/memory/resolve", params={"profile": profile, "path": "/team/alpha/plan"}
    )
    assert by_path.json()["entry_id"] == a["entry_id"]
    taken = client.post(
        f"/v1/memory/{b['entry_id']}/move",
        params={"profile": profile},
        json={"path": "team/alpha/plan"},
    )
    assert code(taken) == (409, "memory_path_exists")
    client.delete(f"/v1/memory/{a['entry_id']}", params={"profile": profile})
    only = client.get("/v1/memory/resolve", params={"profile": profile, "slug": "plan"})
    assert only.json()["entry_id"] == b["entry_id"]
    history = client.get(f"/v1/memory/{b['entry_id']}/history", params={"profile": profile}).json()
    assert [(v["op"], v["path"]) for v in history] == [
        ("move", "team/beta/plan"),
        ("create", "team/beta/notes"),
    ]


def test_expected_version_guards_changes(client: httpx.Client, profile: str) -> None:
    entry = make(client, profile, "guarded", "v1")
    where = f"/v1/memory/{entry['entry_id']}"
    ok = client.patch(
        where, params={"profile": profile}, json={"body": "v2", "expected_version": 1}
    )
    assert ok.json()["version"] == 2
    stale = client.patch(
        where, params={"profile": profile}, json={"body": "v3", "expected_version": 1}
    )
    assert code(stale) == (409, "version_conflict")
    assert stale.json()["error"]["details"] == {"version": 2}
    stale_move = client.post(
        f"{where}/move",
        params={"profile": profile},
        json={"path": "elsewhere", "expected_version": 1},
    )
    assert code(stale_move) == (409, "version_conflict")
    stale_delete = client.delete(where, params={"profile": profile, "expected_version": 1})
    assert code(stale_delete) == (409, "version_conflict")
    assert client.get(where, params={"profile": profile}).json()["body"] == "v2"


def test_search_ranks_the_better_match_first_with_a_snippet(
    client: httpx.Client, profile: str
) -> None:
    make(client, profile, "misc/groceries", "Buy milk, eggs and bread. Maybe a heron figurine.")
    best = make(
        client,
        profile,
        "birds/heron",
        "The grey heron hunts fish. A heron stands still in shallow water for hours.",
        title="Heron habits",
    )
    make(client, profile, "birds/sparrow", "Sparrows eat seeds.", tags=["garden"])
    hits = search(client, profile, "heron")
    assert [h["entry"]["path"] for h in hits] == ["birds/heron", "misc/groceries"]
    assert hits[0]["entry"]["entry_id"] == best["entry_id"]
    assert hits[0]["score"] > hits[1]["score"]
    assert "**heron**" in hits[0]["snippet"].lower()
    # Stemming: "hunting" finds "hunts".
    assert [h["entry"]["path"] for h in search(client, profile, "hunting")] == ["birds/heron"]
    # Filters: prefix (by whole segments), tags, limit.
    assert [h["entry"]["path"] for h in search(client, profile, "heron", prefix="birds")] == [
        "birds/heron"
    ]
    assert search(client, profile, "heron", prefix="bird") == []
    assert [h["entry"]["path"] for h in search(client, profile, "seeds", tags=["GARDEN"])] == [
        "birds/sparrow"
    ]
    assert search(client, profile, "heron", tags=["garden"]) == []
    assert len(search(client, profile, "heron", limit=1)) == 1
    # Web-search syntax: exclusion, phrases, or.
    assert [h["entry"]["path"] for h in search(client, profile, "heron -milk")] == ["birds/heron"]
    assert [h["entry"]["path"] for h in search(client, profile, '"shallow water"')] == [
        "birds/heron"
    ]
    found = {h["entry"]["path"] for h in search(client, profile, "sparrows or milk")}
    assert found == {"birds/sparrow", "misc/groceries"}


@pytest.mark.parametrize(
    "query",
    [
        '"',
        "*",
        "AND",
        "heron AND",
        "NOT",
        '"heron',
        "heron*",
        "(",
        ")",
        "NEAR(a b)",
        "-",
        "'",
        "^",
        ":",
        "a:b",
        "\x00",
        "OR OR",
        "💥",
    ],
)
def test_hostile_queries_are_text_not_syntax(
    client: httpx.Client, profile: str, query: str
) -> None:
    make(client, profile, "and/notes", "Herons AND egrets; near the lake.")
    response = client.post("/v1/memory/search", json={"profile": profile, "query": query})
    assert response.status_code == 200, response.text
    assert isinstance(response.json(), list)


def test_hostile_query_words_still_match(client: httpx.Client, profile: str) -> None:
    make(client, profile, "ops/and", "The AND gate and the NOT gate.")
    assert len(search(client, profile, 'AND "gate')) == 1
    assert len(search(client, profile, "gate*")) == 1


def test_paging_walks_every_entry_once_in_path_order(client: httpx.Client, profile: str) -> None:
    paths = [f"p/{i:02d}" for i in range(7)] + ["p-x", "p.y", "P/upper", "q"]
    for path in reversed(paths):
        make(client, profile, path, f"body of {path}")
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        params: dict[str, Any] = {"profile": profile, "limit": 3}
        if cursor:
            params["cursor"] = cursor
        page = client.get("/v1/memory", params=params).json()
        api.MemoryPage.model_validate(page)
        seen += [e["path"] for e in page["items"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == sorted(paths) and pages == 4
    under = client.get("/v1/memory", params={"profile": profile, "prefix": "p"}).json()
    assert [e["path"] for e in under["items"]] == [f"p/{i:02d}" for i in range(7)]
    assert under["next_cursor"] is None


@pytest.mark.parametrize(
    ("path", "why"),
    [
        (" / ", "empty"),
        ("a//b", "empty segment"),
        ("a/../b", "'..'"),
        ("./a", "'.'"),
        ("a b", "segment"),
        ("a/ü", "segment"),
        ("x" * 513, "longer than 512"),
    ],
)
def test_bad_paths_are_refused(client: httpx.Client, profile: str, path: str, why: str) -> None:
    response = client.post("/v1/memory", json={"profile": profile, "path": path, "body": "x"})
    assert code(response) == (422, "invalid_memory_path") or (
        path == "" and response.status_code == 422
    )
    if response.json()["error"]["code"] == "invalid_memory_path":
        assert why in response.json()["error"]["message"]


def test_every_bad_input_has_its_code(client: httpx.Client, profile: str) -> None:
    entry = make(client, profile, "codes/one", "one")
    where = f"/v1/memory/{entry['entry_id']}"
    q = {"profile": profile}
    assert code(client.get("/v1/memory/bad id!", params=q)) == (400, "invalid_memory_id")
    assert code(client.patch("/v1/memory/-x", params=q, json={"body": "x"})) == (
        400,
        "invalid_memory_id",
    )
    assert code(client.get("/v1/memory/mem_0000000000000000", params=q)) == (
        404,
        "memory_not_found",
    )
    assert code(client.get("/v1/memory/mem_0000000000000000/history", params=q)) == (
        404,
        "memory_not_found",
    )
    assert code(
        client.post("/v1/memory", json={"profile": profile, "path": "codes/one", "body": "2"})
    ) == (
        409,
        "memory_path_exists",
    )
    big = "x" * (api.MAX_MEMORY_BODY + 1)
    too_large = client.post("/v1/memory", json={"profile": profile, "path": "big", "body": big})
    assert code(too_large) == (413, "memory_too_large")
    assert too_large.json()["error"]["details"]["limit"] == api.MAX_MEMORY_BODY
    assert code(client.patch(where, params=q, json={"body": big})) == (413, "memory_too_large")
    assert client.get(where, params=q).json()["body"] == "one"  # nothing lost
    assert code(client.get("/v1/memory", params={"profile": "never-ensured"})) == (
        422,
        "unknown_profile",
    )
    assert code(
        client.post("/v1/memory", json={"profile": "never-ensured", "path": "a", "body": "b"})
    ) == (
        422,
        "unknown_profile",
    )
    assert code(client.get("/v1/memory", params={"profile": "bad name!"})) == (
        400,
        "invalid_profile_name",
    )
    assert code(client.get("/v1/memory", params={**q, "cursor": "not-a-cursor"})) == (
        400,
        "invalid_cursor",
    )
    assert code(client.get("/v1/memory", params={**q, "limit": 0})) == (422, "invalid_request")
    assert code(client.get("/v1/memory", params={**q, "limit": 201})) == (422, "invalid_request")
    assert code(client.get("/v1/memory/resolve", params=q)) == (422, "invalid_request")
    assert code(client.get("/v1/memory/resolve", params={**q, "path": "a", "slug": "a"})) == (
        422,
        "invalid_request",
    )
    assert code(
        client.post(
            "/v1/memory", json={"profile": profile, "path": "t", "body": "b", "tags": ["no spaces"]}
        )
    ) == (
        422,
        "invalid_request",
    )
    assert code(
        client.post("/v1/memory", json={"profile": profile, "path": "t", "body": "b", "extra": 1})
    ) == (
        422,
        "invalid_request",
    )
    assert code(client.post("/v1/memory/search", json={"profile": profile, "query": ""})) == (
        422,
        "invalid_request",
    )
    assert code(client.patch(where, params=q, json={"title": "two\nlines"})) == (
        422,
        "invalid_request",
    )
    assert code(client.post(f"{where}/move", params=q, json={"path": "../up"})) == (
        422,
        "invalid_memory_path",
    )
