"""Memory on PostgreSQL: a real server (``pg.Cluster``) under a real daemon.

The same routes as on SQLite, with PostgreSQL's full-text search
(``websearch_to_tsquery``, ``ts_rank_cd``, ``ts_headline``) served by the GIN
expression index, and the partial unique index refusing a second live entry at
a path even when two creates race.
"""

from __future__ import annotations

import secrets
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from tests.support import pg
from tests.support.daemon import Daemon
from tests.support.memory import check_summaries_without_bodies, code, make, search


@pytest.fixture
def client(pg_client: httpx.Client) -> httpx.Client:
    """This module's ``client`` is on the PostgreSQL daemon (``plugin.pg_daemon``)."""
    return pg_client


@pytest.fixture
def profile(client: httpx.Client) -> str:
    name = f"pg-{secrets.token_hex(4)}"
    assert client.post("/v1/profiles/ensure", json={"name": name}).status_code == 200
    return name


def test_round_trip_and_history(client: httpx.Client, profile: str) -> None:
    entry = make(client, profile, "a/b", "first\x00with a NUL", tags=["x"])
    q = {"profile": profile}
    where = f"/v1/memory/{entry['entry_id']}"
    assert client.get(where, params=q).json()["body"] == "first\x00with a NUL"
    client.patch(where, params=q, json={"body": "second"})
    client.post(f"{where}/move", params=q, json={"path": "a/c"})
    client.delete(where, params=q)
    history = client.get(f"{where}/history", params=q).json()
    assert [(v["op"], v["path"], v["body"]) for v in history] == [
        ("delete", "a/c", "second"),
        ("move", "a/c", "second"),
        ("update", "a/b", "second"),
        ("create", "a/b", "first\x00with a NUL"),
    ]


def test_search_ranks_filters_and_highlights(client: httpx.Client, profile: str) -> None:
    make(client, profile, "misc/groceries", "Buy milk and bread. Maybe a heron figurine.")
    make(
        client,
        profile,
        "birds/heron",
        "The grey heron hunts fish. A heron stands still in shallow water.",
        title="Heron habits",
    )
    make(client, profile, "birds/sparrow", "Sparrows eat seeds.", tags=["garden"])
    hits = search(client, profile, "heron")
    assert [h["entry"]["path"] for h in hits] == ["birds/heron", "misc/groceries"]
    assert hits[0]["score"] > hits[1]["score"] > 0
    assert "**heron**" in hits[0]["snippet"].lower()
    assert [h["entry"]["path"] for h in search(client, profile, "hunting")] == ["birds/heron"]
    assert [h["entry"]["path"] for h in search(client, profile, "heron -milk")] == ["birds/heron"]
    assert [h["entry"]["path"] for h in search(client, profile, '"shallow water"')] == [
        "birds/heron"
    ]
    assert {h["entry"]["path"] for h in search(client, profile, "sparrows or milk")} == {
        "birds/sparrow",
        "misc/groceries",
    }
    assert [h["entry"]["path"] for h in search(client, profile, "heron", prefix="birds")] == [
        "birds/heron"
    ]
    assert [h["entry"]["path"] for h in search(client, profile, "seeds", tags=["garden"])] == [
        "birds/sparrow"
    ]
    for hostile in ['"', "*", "AND", "heron AND", "NOT", "(", "a:b", "&|!", "\x00", "💥"]:
        response = client.post("/v1/memory/search", json={"profile": profile, "query": hostile})
        assert response.status_code == 200, (hostile, response.text)


def test_paging_is_in_byte_order(client: httpx.Client, profile: str) -> None:
    paths = ["p/01", "p/00", "p-x", "p.y", "P/upper", "q", "p_z"]
    for path in paths:
        make(client, profile, path, path)
    seen: list[str] = []
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"profile": profile, "limit": 2}
        if cursor:
            params["cursor"] = cursor
        page = client.get("/v1/memory", params=params).json()
        seen += [e["path"] for e in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == sorted(paths)


def test_racing_creates_at_one_path_make_one_entry(
    client: httpx.Client, profile: str, pg_daemon: Daemon
) -> None:
    def attempt(i: int) -> int:
        with pg_daemon.client() as c:
            body = {"profile": profile, "path": "race", "body": f"writer {i}"}
            return c.post("/v1/memory", json=body).status_code

    with ThreadPoolExecutor(8) as pool:
        statuses = sorted(pool.map(attempt, range(8)))
    assert statuses == [201] + [409] * 7
    assert code(
        client.post("/v1/memory", json={"profile": profile, "path": "race", "body": "x"})
    ) == (
        409,
        "memory_path_exists",
    )


def test_the_gin_index_serves_the_search(client: httpx.Client, cluster: pg.Cluster) -> None:
    # heron_shared: the database of the plugin's pg_daemon, which this module uses.
    with cluster.connect("heron_shared") as conn:
        conn.execute("SET enable_seqscan = off")
        plan = conn.execute(
            "EXPLAIN SELECT entry_id FROM heron_memory_entries WHERE search_vector"
            " @@ websearch_to_tsquery('english'::regconfig, 'heron')"
        ).fetchall()
    assert "ix_heron_memory_search" in "\n".join(line for (line,) in plan)


def test_list_and_search_answer_summaries(client: httpx.Client, profile: str) -> None:
    check_summaries_without_bodies(client, profile)
