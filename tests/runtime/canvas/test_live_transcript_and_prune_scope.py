"""The canvas on a real daemon: a running node's live transcript, and prunes that touch
nothing of another node."""

from __future__ import annotations

import sqlite3
from typing import Any

import httpx
from tests.support.daemon import Daemon, create, wait_settled
from tests.support.polling import eventually
from tests.support.sse import collect, events, stream

TIME = {"name": "get-current-time", "arguments": {}}
SLOW = {"text": "still thinking", "delay": 30}


def query(daemon: Daemon, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with sqlite3.connect(daemon.home / "heron.db") as db:
        return db.execute(sql, args).fetchall()


def read(client: httpx.Client, node_id: str) -> dict[str, Any]:
    response = client.get("/v1/canvas/history/read", params={"node_id": node_id})
    assert response.status_code == 200, response.text
    page: dict[str, Any] = response.json()
    return page


def test_a_running_nodes_transcript_is_read_live(client: httpx.Client, scripts: Any) -> None:
    # It called a tool, then thinks for long: nothing of its run is saved yet.
    model = scripts("live", [{"text": "Checking the osprey clock.", "tool_calls": [TIME]}, SLOW])
    node_id = create(client, prompt="When do ospreys fly?", model=model)["node_id"]
    try:
        page = eventually(
            lambda: read(client, node_id),
            lambda page: page["total"] >= 3,
            timeout=20,
            interval=0.02,
            what="the live transcript growing",
        )

        assert [m["role"] for m in page["messages"]] == ["user", "assistant", "tool"]
        assert page["messages"][1]["tool_calls"][0]["name"] == "get-current-time"
        ids = [node_id]
        found = client.post(
            "/v1/canvas/history/search", json={"query": "osprey clock", "node_ids": ids}
        ).json()
        assert [(h["index"], h["role"]) for h in found["hits"]] == [(1, "assistant")]
        grep = client.post(
            "/v1/canvas/history/grep", json={"pattern": "osprey clock", "node_ids": ids}
        ).json()
        assert {m["index"] for m in grep["matches"]} == {1}
        stats = client.post("/v1/canvas/history/stats", json={"node_ids": ids}).json()
        assert stats["tool_calls_by_tool"] == {"get-current-time": 1}
        assert stats["messages_by_role"] == {"assistant": 1, "tool": 1, "user": 1}
    finally:
        client.post(f"/v1/nodes/{node_id}/close")
    wait_settled(client, node_id)
    # Settled, its saved conversation is what is read: the same messages.
    assert [m["role"] for m in read(client, node_id)["messages"]][:3] == [
        "user",
        "assistant",
        "tool",
    ]


def test_a_transcript_read_says_which_events_it_covers(client: httpx.Client, scripts: Any) -> None:
    # An answer half written: its first word streamed, the rest 30 s away.
    model = scripts("marks", [{"text": "Ospreys fly at dawn.", "chunk_delay": 30}])
    node_id = create(client, prompt="When do ospreys fly?", model=model)["node_id"]
    try:
        with stream(client, node_id) as response:
            first = events(response, until=lambda e: e.event == "node.output_text.delta")[-1]
        page = read(client, node_id)
        # The answer is not in the messages yet, and the mark is right before its text:
        # streaming after it shows the answer from its first word, nothing else twice.
        assert [m["role"] for m in page["messages"]] == ["user"]
        assert page["event_sequence"] == first.seq - 1
        with stream(client, node_id, after=page["event_sequence"]) as response:
            resumed = events(response, until=lambda e: e.event == "node.output_text.delta")
        assert [(e.seq, e.data["delta"]) for e in resumed] == [(first.seq, first.data["delta"])]
    finally:
        client.post(f"/v1/nodes/{node_id}/close")
    wait_settled(client, node_id)
    # Settled, the mark is its last event: nothing after it.
    page = read(client, node_id)
    assert page["event_sequence"] == collect(client, node_id)[-1].seq
    later = collect(client, node_id, after=page["event_sequence"])
    assert [e.seq for e in later if e.seq > page["event_sequence"]] == []


def test_pruning_a_node_leaves_the_run_records_of_a_node_whose_id_is_alike(
    client: httpx.Client, daemon: Daemon, scripts: Any
) -> None:
    # "_" is a LIKE wildcard: "rv_1" must not reach "rvz1"'s records.
    model = scripts("alike", ["ok"])
    for node_id in ("rv_1", "rvz1"):
        create(client, prompt="p", model=model, node_id=node_id)
        wait_settled(client, node_id)
    sql = "SELECT count(*) FROM workflow_status WHERE workflow_uuid LIKE 'heron:rvz1:%'"
    ((before,),) = query(daemon, sql)
    assert before >= 1
    pruned = client.post("/v1/canvas/prune", json={"node_ids": ["rv_1"]}).json()
    assert pruned["pruned"] == ["rv_1"]
    assert query(daemon, sql) == [(before,)]
    assert not query(
        daemon,
        "SELECT 1 FROM workflow_status WHERE workflow_uuid LIKE 'heron:rv\\_1:%' ESCAPE '\\'",
    )
