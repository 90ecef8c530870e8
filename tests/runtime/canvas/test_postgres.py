"""The canvas on PostgreSQL: prune deletes every row (DBOS's in the ``dbos`` schema too),
and the snapshot and history read the same as on SQLite."""

from __future__ import annotations

from typing import Any

import pytest
from tests.support import pg
from tests.support.daemon import Daemon, create, wait_settled, write_script

pytestmark = pytest.mark.slow

TIME = {"name": "get-current-time", "arguments": {}}


def test_canvas_on_postgresql(
    cluster: pg.Cluster, tmp_path_factory: pytest.TempPathFactory
) -> None:
    home = tmp_path_factory.mktemp("canvas-pg")
    url = cluster.create_database("heron_canvas")
    model = write_script(home, "tools", [{"tool_calls": [TIME]}, "The kingfisher dives."])
    daemon = Daemon(home, {"HERON_DATABASE_URL": url, "HERON_PROVIDER": model}).start()

    def count(sql: str, *params: Any) -> int:
        with cluster.connect("heron_canvas") as conn:
            row = conn.execute(sql, params).fetchone()
            assert row is not None
            return int(row[0])

    try:
        with daemon.client() as client:
            node_id = create(client, prompt="What dives?", model=model)["node_id"]
            wait_settled(client, node_id)
            snap = client.get("/v1/canvas/snapshot").json()
            assert [c["node_id"] for c in snap["nodes"]] == [node_id]
            assert snap["event_sequences"][node_id] > 0
            found = client.post("/v1/canvas/history/search", json={"query": "kingfisher"}).json()
            assert [(h["node_id"], h["index"]) for h in found["hits"]] == [(node_id, 3)]
            grep = client.post("/v1/canvas/history/grep", json={"pattern": "dives\\.$"}).json()
            assert len(grep["matches"]) == 1
            stats = client.post("/v1/canvas/history/stats", json={}).json()
            assert stats["tool_calls_by_tool"] == {"get-current-time": 1}

            like = f"heron:{node_id}:%"
            workflows = "SELECT count(*) FROM dbos.workflow_status WHERE workflow_uuid LIKE %s"
            assert count(workflows, like) == 1
            pruned = client.post("/v1/canvas/prune", json={"node_ids": [node_id]}).json()
            assert pruned["pruned"] == [node_id]
            for table in ("heron_nodes", "heron_events", "heron_messages", "heron_outcomes"):
                assert count(f"SELECT count(*) FROM {table} WHERE node_id = %s", node_id) == 0
            assert count(workflows, like) == 0
            steps = "SELECT count(*) FROM dbos.operation_outputs WHERE workflow_uuid LIKE %s"
            assert count(steps, like) == 0
            assert client.get("/v1/canvas/snapshot").json()["nodes"] == []
    finally:
        daemon.stop()
