"""Memory behaviour a demanding user relies on (SQLite; PostgreSQL in test_postgres.py)."""

from __future__ import annotations

import secrets
from typing import Any

import httpx
import pytest
from tests.support.daemon import Daemon, create, wait_settled
from tests.support.memory import (
    MEMORY,
    call,
    check_summaries_without_bodies,
    make,
    transcript,
)


@pytest.fixture
def profile(client: httpx.Client) -> str:
    name = f"rev-{secrets.token_hex(4)}"
    assert client.post("/v1/profiles/ensure", json={"name": name}).status_code == 200
    return name


def test_list_and_search_answer_summaries(client: httpx.Client, profile: str) -> None:
    check_summaries_without_bodies(client, profile)


def test_a_node_browses_its_memory_and_reads_an_entry_by_its_last_segment(
    client: httpx.Client, scripts: Any, daemon: Daemon, profile: str
) -> None:
    for path, tags in [("projects/heron/db", ["design"]), ("projects/kite/db", []), ("todo", [])]:
        make(client, profile, path, f"notes of {path}", tags=tags, title=path.upper())
    model = scripts(
        "memory-browse",
        [
            call("memory-search"),
            call("memory-search", query=" ", prefix="projects", limit=1),
            call("memory-search", prefix="projects", tags=["Design"]),
            call("memory-search", prefix="nothing/here"),
            call("memory-read", path="todo"),
            call("memory-read", path="db"),
            call("memory-read", path="nowhere"),
            call("memory-search", query="zebra"),
            "Done.",
        ],
    )
    node = create(client, prompt="look", model=model, profile=profile, scopes=MEMORY)
    assert wait_settled(client, node["node_id"])["outcome"]["output_text"] == "Done."
    said = transcript(daemon, node["node_id"])
    head = "by path (read one with memory-read):\\n"
    heron, kite = (
        "projects/heron/db — PROJECTS/HERON/DB [design]",
        "projects/kite/db — PROJECTS/KITE/DB",
    )
    assert f"Entries {head}{heron}\\n{kite}\\ntodo — TODO" in said
    assert f"Entries under projects {head}{heron}\\n… and more" in said
    assert f'Entries under projects {head}{heron}"' in said  # the tag filter: heron's only
    assert "Your memory holds no entries under nothing/here yet." in said
    assert "path: todo" in said and "notes of todo" in said
    assert "several entries end in 'db': read one of projects/heron/db, projects/kite/db" in said
    assert "no memory entry at 'nowhere': find entries with memory-search" in said
    assert "No memory entry matches 'zebra'. Try fewer or other words" in said


def test_list_filters_by_tags(client: httpx.Client, profile: str) -> None:
    make(client, profile, "a", "one", tags=["x", "y"])
    make(client, profile, "b", "two", tags=["x"])
    make(client, profile, "c", "three")
    listed = client.get("/v1/memory", params={"profile": profile, "tag": ["X"]}).json()
    assert [e["path"] for e in listed["items"]] == ["a", "b"]
    listed = client.get("/v1/memory", params={"profile": profile, "tag": ["x", "y"]}).json()
    assert [e["path"] for e in listed["items"]] == ["a"]


def test_history_reads_in_pages(client: httpx.Client, profile: str) -> None:
    entry = make(client, profile, "often/edited", "v1")
    where = f"/v1/memory/{entry['entry_id']}"
    for n in range(2, 6):
        patched = client.patch(where, params={"profile": profile}, json={"body": f"v{n}"})
        assert patched.status_code == 200, patched.text
    seen: list[int] = []
    params: dict[str, Any] = {"profile": profile, "limit": 2}
    while page := client.get(f"{where}/history", params=params).json():
        assert len(page) <= 2
        seen += [v["version"] for v in page]
        params["before"] = page[-1]["version"]
    assert seen == [5, 4, 3, 2, 1]
    every = client.get(f"{where}/history", params={"profile": profile}).json()
    assert [v["body"] for v in every] == ["v5", "v4", "v3", "v2", "v1"]
    for bad in ({"limit": 0}, {"limit": 1001}, {"before": 0}):
        response = client.get(f"{where}/history", params={"profile": profile, **bad})
        assert response.status_code == 422, (bad, response.text)


def test_a_models_lone_surrogate_is_an_error_it_can_fix(
    client: httpx.Client, scripts: Any, daemon: Daemon, profile: str
) -> None:
    model = scripts(
        "memory-surrogate",
        [
            call("memory-write", path="odd", body="half \ud800 a pair"),
            call("memory-write", path="odd", body="fine", title="t \udfff"),
            call("memory-search", query="half \ud800"),
            call("memory-search", query="x", prefix="p" * 1100),
            "Done.",
        ],
    )
    node = create(client, prompt="x", model=model, profile=profile, scopes=MEMORY)
    assert wait_settled(client, node["node_id"])["outcome"]["output_text"] == "Done."
    said = transcript(daemon, node["node_id"])
    assert "the body holds a lone UTF-16 surrogate" in said
    assert "the title holds a lone UTF-16 surrogate" in said
    assert "No memory entry matches 'half ?'" in said
    assert "memory-search: prefix: String should have at most 1024 characters" in said
    assert client.get("/v1/memory", params={"profile": profile}).json()["items"] == []
