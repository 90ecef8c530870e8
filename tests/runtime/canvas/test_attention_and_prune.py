"""The canvas on a real daemon: attention, snapshot, roster, prune and bad input."""

from __future__ import annotations

import sqlite3
import time
from typing import Any

import httpx
import pytest
from tests.support.daemon import (
    Daemon,
    create,
    wait_logged,
    wait_settled,
    wait_status,
    write_script,
)

from heron import api

SLOW = {"text": "still thinking", "delay": 30}
FAIL = {"error": "the model is down", "status": 503}
TIME = {"name": "get-current-time", "arguments": {}}


def query(daemon: Daemon, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with sqlite3.connect(daemon.home / "heron.db") as db:
        return db.execute(sql, args).fetchall()


def attention(client: httpx.Client, *node_ids: str, **params: Any) -> list[dict[str, Any]]:
    response = client.get("/v1/canvas/attention", params={"node_id": list(node_ids), **params})
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()
    return items


def error_code(response: httpx.Response) -> str:
    code: str = response.json()["error"]["code"]
    return code


@pytest.fixture(scope="module")
def states(daemon: Daemon, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """One node in each state the canvas tells apart, by name."""
    home = tmp_path_factory.mktemp("canvas-scripts")
    with daemon.client() as client:

        def node(name: str, steps: list[Any], **body: Any) -> str:
            model = write_script(home, name, steps)
            return str(
                create(client, prompt=f"task {name}", model=model, name=name, **body)["node_id"]
            )

        made = {
            "failed": node("failed", [FAIL]),
            "deadline": node("deadline", [SLOW], deadline="1s"),
            "interrupted": node("interrupted", [SLOW]),
            "waiting": node("waiting", ["Here is my answer."], root_lifecycle="resident"),
            "completed": node("completed", [{"tool_calls": [TIME]}, "done"]),
            "running": node("running", [SLOW]),
        }
        wait_logged(daemon, made["interrupted"], "node.turn.started")
        assert client.post(f"/v1/nodes/{made['interrupted']}/interrupt").status_code == 200
        for name in ("failed", "deadline", "completed"):
            wait_settled(client, made[name])
        wait_status(client, made["waiting"], "dormant")
        wait_settled(client, made["waiting"])  # a resident root keeps its answer, dormant
        wait_logged(daemon, made["running"], "node.turn.started")
    return made


class TestAttention:
    def test_each_state_shows_with_its_reason_most_urgent_first(
        self, client: httpx.Client, states: dict[str, str]
    ) -> None:
        items = attention(client, *states.values())
        reasons = {item["node_id"]: item["reason"] for item in items}
        assert reasons == {
            states["interrupted"]: "interrupted",
            states["failed"]: "failed",
            states["deadline"]: "deadline_exceeded",
            states["waiting"]: "waiting",
        }
        assert [i["reason"] for i in items] == [
            "interrupted",
            "failed",
            "deadline_exceeded",
            "waiting",
        ]
        by_reason = {i["reason"]: i for i in items}
        assert "provider_error" in by_reason["failed"]["summary"]
        assert "deadline" in by_reason["deadline_exceeded"]["summary"]
        assert by_reason["waiting"]["summary"] == "Here is my answer."
        assert by_reason["interrupted"]["summary"] == "interrupted on request"
        assert all(i["profile"] == "default" and i["request_id"] is None for i in items)
        assert by_reason["failed"]["name"] == "failed"
        for item in items:
            api.AttentionItem.model_validate(item)

    def test_filters_and_counts(self, client: httpx.Client, states: dict[str, str]) -> None:
        assert attention(client, states["completed"], states["running"]) == []
        assert attention(client, *states.values(), profile="nobody") == []
        assert len(attention(client, *states.values(), profile="default")) == 4
        counts = client.post(
            "/v1/canvas/attention-counts", json={"node_ids": list(states.values())}
        ).json()
        assert counts["total"] == 4
        assert counts["by_reason"] == {
            "asking": 0,
            "interrupted": 1,
            "failed": 1,
            "deadline_exceeded": 1,
            "waiting": 1,
        }
        assert counts["by_node"] == {
            states["interrupted"]: {"interrupted": 1},
            states["failed"]: {"failed": 1},
            states["deadline"]: {"deadline_exceeded": 1},
            states["waiting"]: {"waiting": 1},
        }
        # With no filter, every node of the daemon is counted: at least these.
        everything = client.post("/v1/canvas/attention-counts").json()
        assert everything["total"] >= 4 and everything["by_reason"]["failed"] >= 1


class TestSnapshotAndRoster:
    def test_snapshot_holds_every_card_edge_count_and_mark(
        self, client: httpx.Client, states: dict[str, str], daemon: Daemon, scripts: Any
    ) -> None:
        parent = create(
            client, prompt="lead", model=scripts("lead", ["ok"]), root_lifecycle="resident"
        )["node_id"]
        wait_status(client, parent, "dormant")
        child = create(client, prompt="help", model=scripts("child", ["ok"]), parent=parent)
        wait_settled(client, child["node_id"])
        snap = client.get("/v1/canvas/snapshot").json()
        api.CanvasSnapshot.model_validate(snap)
        cards = {card["node_id"]: card for card in snap["nodes"]}
        listed = client.get("/v1/nodes").json()
        assert set(cards) == {n["node_id"] for n in listed}
        assert snap["counts"] == client.get("/v1/status").json()["nodes"]
        failed = cards[states["failed"]]
        assert failed["status"] == "failed" and failed["name"] == "failed"
        assert (failed["outcome_kind"], failed["outcome_reason"]) == ("failure", "provider_error")
        done = cards[states["completed"]]
        assert done["outcome_kind"] == "result" and done["turns"] == 2
        assert done["profile"] == "default" and done["mode"] == "base"
        assert cards[states["running"]]["outcome_kind"] is None
        assert {"source": parent, "target": child["node_id"], "kind": "parent"} in snap["edges"]
        assert {i["node_id"] for i in snap["attention"]} >= {states["failed"], states["waiting"]}
        # The marks are the last events logged: a stream read after one has nothing
        # older, and a settled node has nothing newer.
        for node_id in (states["completed"], child["node_id"]):
            ((last,),) = query(
                daemon, "SELECT max(sequence_number) FROM heron_events WHERE node_id = ?", node_id
            )
            assert snap["event_sequences"][node_id] == last
        running = states["running"]
        mark = snap["event_sequences"][running]
        ((logged,),) = query(
            daemon, "SELECT max(sequence_number) FROM heron_events WHERE node_id = ?", running
        )
        assert mark >= (logged or 0) and mark > 0

    def test_roster_lists_the_live_nodes_and_what_they_do(
        self, client: httpx.Client, states: dict[str, str]
    ) -> None:
        roster = client.get("/v1/canvas/roster").json()
        entries = {e["node_id"]: e for e in roster}
        for entry in roster:
            api.RosterEntry.model_validate(entry)
        assert {states["failed"], states["completed"], states["deadline"]}.isdisjoint(entries)
        running = entries[states["running"]]
        assert running["status"] == "running" and running["run_active"] is True
        assert running["run"] == 1 and running["last_event_type"] is not None
        assert running["open_jobs"] == 0 and running["live_children"] == 0
        waiting = entries[states["waiting"]]
        assert waiting["status"] == "dormant" and waiting["run_active"] is False
        assert waiting["last_event_type"] == "node.settled"
        assert entries[states["interrupted"]]["status"] == "interrupted"
        assert all(e["status"] in ("running", "dormant", "interrupted") for e in roster)


def counted(daemon: Daemon, node_ids: list[str]) -> dict[str, int]:
    marks = ",".join("?" * len(node_ids))
    tables = ("heron_nodes", "heron_events", "heron_messages", "heron_outcomes", "heron_reports")
    return {
        table: query(daemon, f"SELECT count(*) FROM {table} WHERE node_id IN ({marks})", *node_ids)[
            0
        ][0]
        for table in tables
    }


class TestPrune:
    def test_a_dry_run_deletes_nothing_then_the_prune_deletes_every_row_and_file(
        self, client: httpx.Client, daemon: Daemon, scripts: Any
    ) -> None:
        report = {"name": "push-report", "arguments": {"tier": "final", "body": "Done."}}
        model = scripts("prunable", [{"tool_calls": [report]}, {"tool_calls": [TIME]}, "ok"])
        parent = create(client, prompt="p", model=model, root_lifecycle="resident")["node_id"]
        wait_status(client, parent, "dormant")
        child = create(client, prompt="c", model=model, parent=parent)["node_id"]
        wait_settled(client, child)
        lone = create(client, prompt="x", model=model)["node_id"]
        wait_settled(client, lone)
        reports = daemon.home / "reports" / lone
        workspace = daemon.home / "nodes" / lone
        assert reports.is_dir() and workspace.is_dir()
        before = counted(daemon, [lone])
        assert all(before[t] >= 1 for t in before)

        # The parent is live (a dormant resident root): its settled child stays.
        body = {"node_ids": [lone, child, parent, "n-missing"], "dry_run": True}
        dry = client.post("/v1/canvas/prune", json=body).json()
        assert dry["dry_run"] is True and dry["pruned"] == [lone]
        assert {(s["node_id"], s["reason"]) for s in dry["skipped"]} == {
            (child, "live_parent"),
            (parent, "live"),
            ("n-missing", "not_found"),
        }
        assert counted(daemon, [lone]) == before and reports.is_dir()

        done = client.post("/v1/canvas/prune", json={**body, "dry_run": False}).json()
        assert done["pruned"] == [lone] and done["skipped"] == dry["skipped"]
        assert set(counted(daemon, [lone]).values()) == {0}
        assert not reports.exists() and not workspace.exists()
        assert not query(
            daemon, "SELECT 1 FROM workflow_status WHERE workflow_uuid LIKE ?", f"heron:{lone}:%"
        )
        assert client.get(f"/v1/nodes/{lone}").status_code == 404
        assert client.get("/v1/canvas/history/read", params={"node_id": lone}).status_code == 404

        # Closed, the resident root is settled: named, it goes with its child.
        client.post(f"/v1/nodes/{parent}/close")
        gone = client.post("/v1/canvas/prune", json={"node_ids": [parent]}).json()
        assert sorted(gone["pruned"]) == sorted([parent, child]) and gone["skipped"] == []
        assert set(counted(daemon, [parent, child]).values()) == {0}

    def test_unnamed_nodes_go_by_age_and_status_and_resident_roots_only_by_name(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        lead = create(client, prompt="p", model=scripts("lead2", ["ok"]))["node_id"]
        wait_settled(client, lead)
        resident = create(
            client, prompt="r", model=scripts("res", ["ok"]), root_lifecycle="resident"
        )["node_id"]
        wait_status(client, resident, "dormant")
        client.post(f"/v1/nodes/{resident}/close")
        failed = create(client, prompt="f", model=scripts("f", [FAIL]))["node_id"]
        wait_settled(client, failed)

        # Unnamed, the default age is 7d: nothing this young goes.
        default = client.post("/v1/canvas/prune", json={"dry_run": True}).json()
        assert {lead, failed, resident}.isdisjoint(default["pruned"])
        settled = time.monotonic()
        while time.monotonic() - settled < 1.1:  # the age filter reads the wall clock
            time.sleep(0.05)
        aged = client.post("/v1/canvas/prune", json={"older_than": "1s", "dry_run": True}).json()
        assert {lead, failed} <= set(aged["pruned"]) and resident not in aged["pruned"]
        assert {"node_id": resident, "reason": "resident_root"} in aged["skipped"]
        only_failed = client.post(
            "/v1/canvas/prune", json={"older_than": "1s", "statuses": ["failed"], "dry_run": True}
        ).json()
        assert failed in only_failed["pruned"] and lead not in only_failed["pruned"]
        named = client.post(
            "/v1/canvas/prune",
            json={"node_ids": [lead, failed], "older_than": "1h", "dry_run": True},
        ).json()
        assert named["pruned"] == []
        assert {(s["node_id"], s["reason"]) for s in named["skipped"]} == {
            (lead, "not_matching"),
            (failed, "not_matching"),
        }
        assert client.get(f"/v1/nodes/{lead}").status_code == 200  # all dry runs

    def test_a_settled_node_with_a_live_descendant_stays(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        # A child whose outcome is not delivered to its parent does not keep the parent
        # from completing: the parent settles with its child still running.
        lead = create(client, prompt="p", model=scripts("lead3", [{"text": "ok", "delay": 1}]))
        child = create(client, prompt="c", model=scripts("kid", [SLOW]), parent=lead["node_id"])
        wait_settled(client, lead["node_id"])
        assert client.get(f"/v1/nodes/{child['node_id']}").json()["status"] == "running"
        kept = client.post("/v1/canvas/prune", json={"node_ids": [lead["node_id"]]}).json()
        assert kept == {
            "pruned": [],
            "skipped": [{"node_id": lead["node_id"], "reason": "live_descendant"}],
            "dry_run": False,
        }
        kept = client.post("/v1/canvas/prune", json={"node_ids": [child["node_id"]]}).json()
        assert kept["skipped"] == [{"node_id": child["node_id"], "reason": "live"}]
        client.post(f"/v1/nodes/{child['node_id']}/close")
        gone = client.post("/v1/canvas/prune", json={"node_ids": [lead["node_id"]]}).json()
        assert sorted(gone["pruned"]) == sorted([lead["node_id"], child["node_id"]])


class TestBadInput:
    @pytest.mark.parametrize(
        ("method", "path", "kwargs", "status", "code"),
        [
            (
                "GET",
                "/v1/canvas/attention",
                {"params": {"node_id": "bad id!"}},
                400,
                "invalid_node_id",
            ),
            (
                "POST",
                "/v1/canvas/attention-counts",
                {"json": {"node_ids": ["x y"]}},
                422,
                "invalid_request",
            ),
            (
                "POST",
                "/v1/canvas/prune",
                {"json": {"statuses": ["running"]}},
                422,
                "invalid_request",
            ),
            ("POST", "/v1/canvas/prune", {"json": {"older_than": "soon"}}, 422, "invalid_request"),
            ("POST", "/v1/canvas/prune", {"json": {"older_than": "400d"}}, 422, "invalid_duration"),
            ("POST", "/v1/canvas/prune", {"json": {"dry_run": 1}}, 422, "invalid_request"),
            ("POST", "/v1/canvas/prune", {"json": {"everything": True}}, 422, "invalid_request"),
            (
                "POST",
                "/v1/canvas/history/grep",
                {"json": {"pattern": "(unclosed"}},
                422,
                "invalid_pattern",
            ),
            ("POST", "/v1/canvas/history/search", {"json": {"query": "?!"}}, 422, "invalid_query"),
            ("POST", "/v1/canvas/history/search", {"json": {"query": ""}}, 422, "invalid_request"),
            (
                "POST",
                "/v1/canvas/history/search",
                {"json": {"query": "a", "limit": 0}},
                422,
                "invalid_request",
            ),
            (
                "GET",
                "/v1/canvas/history/read",
                {"params": {"node_id": "bad id!"}},
                400,
                "invalid_node_id",
            ),
            (
                "GET",
                "/v1/canvas/history/read",
                {"params": {"node_id": "n-nobody"}},
                404,
                "node_not_found",
            ),
            ("GET", "/v1/canvas/history/read", {}, 422, "invalid_request"),
            (
                "GET",
                "/v1/canvas/history/read",
                {"params": {"node_id": "a", "offset": -1}},
                422,
                "invalid_request",
            ),
            (
                "POST",
                "/v1/canvas/history/stats",
                {"json": {"since": "yesterday"}},
                422,
                "invalid_request",
            ),
            (
                "POST",
                "/v1/canvas/history/stats",
                {"json": {"since": -1000171}},
                422,
                "invalid_request",
            ),
        ],
    )
    def test_bad_input_gets_a_stable_code(
        self,
        client: httpx.Client,
        method: str,
        path: str,
        kwargs: dict[str, Any],
        status: int,
        code: str,
    ) -> None:
        response = client.request(method, path, **kwargs)
        assert response.status_code == status, response.text
        assert error_code(response) == code
