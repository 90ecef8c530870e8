"""Reports: the ``push-report`` tool, ``GET …/reports`` and the final report on disk."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import httpx
from tests.support.daemon import (
    Daemon,
    create,
    forget_tool_call_step,
    wait_settled,
    wait_tool_call_recorded,
    write_script,
)
from tests.support.polling import eventually
from tests.support.sse import collect

from heron import api


def report(tier: str, body: str, title: str | None = None) -> dict[str, Any]:
    arguments = {"tier": tier, "body": body} | ({"title": title} if title else {})
    return {"name": "push-report", "arguments": arguments}


def logged(daemon: Daemon, node_id: str, type: str) -> list[dict[str, Any]]:
    with sqlite3.connect(daemon.home / "heron.db") as db:
        rows = db.execute(
            "SELECT data FROM heron_events WHERE node_id = ? AND type = ? ORDER BY sequence_number",
            (node_id, type),
        ).fetchall()
    return [json.loads(data) for (data,) in rows]


class TestReports:
    def test_pushed_reports_are_listed_newest_first_by_limit_and_tier(
        self, client: httpx.Client, scripts: Any, daemon: Daemon
    ) -> None:
        model = scripts(
            "reports",
            [
                {"tool_calls": [report("progress", "Read the code.")]},
                {"tool_calls": [report("milestone", "Tests pass.", "Green")]},
                {"tool_calls": [report("progress", "Tidying up.")]},
                "All done.",
            ],
        )
        node_id = create(client, prompt="work", model=model)["node_id"]
        wait_settled(client, node_id)
        listed = client.get(f"/v1/nodes/{node_id}/reports").json()
        assert [r["body"] for r in listed] == ["Tidying up.", "Tests pass.", "Read the code."]
        assert [r["tier"] for r in listed] == ["progress", "milestone", "progress"]
        assert listed[1]["title"] == "Green" and listed[0]["title"] is None
        assert all(r["node_id"] == node_id and r["path"] is None for r in listed)
        ids = [r["report_id"] for r in listed]
        assert ids == sorted(ids, reverse=True)
        two = client.get(f"/v1/nodes/{node_id}/reports", params={"limit": 2}).json()
        assert [r["report_id"] for r in two] == ids[:2]
        progress = client.get(f"/v1/nodes/{node_id}/reports", params={"tier": "progress"}).json()
        assert [r["body"] for r in progress] == ["Tidying up.", "Read the code."]
        # Each push is an event carrying the report as the list shows it.
        pushed = logged(daemon, node_id, "node.report.pushed")
        assert [e["report"] for e in pushed] == list(reversed(listed))
        outcome = client.get(f"/v1/nodes/{node_id}/outcome").json()["outcome"]
        assert outcome["final_report_path"] is None

    def test_a_final_report_is_written_to_disk_and_named_by_the_outcome(
        self, client: httpx.Client, scripts: Any, daemon: Daemon
    ) -> None:
        model = scripts(
            "final",
            [
                {"tool_calls": [report("final", "First draft.", "Draft")]},
                {"tool_calls": [report("final", "## Result\n\nThe bug was in the parser.", "Fix")]},
                "Reported.",
            ],
        )
        node_id = create(client, prompt="fix it", model=model, scopes=[])["node_id"]
        outcome = wait_settled(client, node_id)["outcome"]
        path = Path(outcome["final_report_path"])
        assert path.is_file() and path.is_relative_to(daemon.home / "reports" / node_id)
        assert path.read_text() == "# Fix\n\n## Result\n\nThe bug was in the parser.\n"
        finals = client.get(f"/v1/nodes/{node_id}/reports", params={"tier": "final"}).json()
        assert len(finals) == 2 and finals[0]["path"] == str(path)
        earlier = Path(finals[1]["path"])
        assert earlier != path and earlier.read_text() == "# Draft\n\nFirst draft.\n"
        # Nothing half-written is left beside them.
        assert sorted(p.name for p in path.parent.iterdir()) == ["final-1.md", "final-2.md"]

    def test_the_event_stream_carries_each_report_as_listed(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        model = scripts(
            "streamed",
            [{"tool_calls": [report("milestone", "Half way.", "Half")]}, "done"],
        )
        node_id = create(client, prompt="go", model=model)["node_id"]
        wait_settled(client, node_id)
        pushed = [e for e in collect(client, node_id) if e.event == "node.report.pushed"]
        assert len(pushed) == 1
        event = api.parse_event(pushed[0].event, pushed[0].data)
        assert isinstance(event, api.ReportPushed)
        (listed,) = client.get(f"/v1/nodes/{node_id}/reports").json()
        assert event.report == api.Report.model_validate(listed)
        assert (event.report.tier, event.report.title) == ("milestone", "Half")

    def test_final_report_path_names_only_the_current_settlements_reports(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        model = scripts(
            "revived-report",
            [
                {"tool_calls": [report("final", "Before the failure.")]},
                {"error": "x", "status": 503},
            ],
        )
        node_id = create(client, prompt="go", model=model)["node_id"]
        assert wait_settled(client, node_id)["node_status"] == "failed"
        Path(model.removeprefix("scripted:")).write_text(json.dumps(["unused", "Done now."]))
        assert client.post(f"/v1/nodes/{node_id}/revive").status_code == 200
        outcome = wait_settled(client, node_id)["outcome"]
        assert outcome["output_text"] == "Done now."
        # The final report of the failed settlement is not this one's.
        assert outcome["final_report_path"] is None


def test_a_push_run_again_after_a_crash_keeps_one_report(tmp_path: Path) -> None:
    default = write_script(tmp_path, "default", ["default"])
    daemon = Daemon(tmp_path / "home", {"HERON_PROVIDER": default}).start()
    try:
        steps = [{"tool_calls": [report("final", "Once.")]}, {"text": "hold", "delay": 60}]
        model = write_script(tmp_path, "pusher", steps)
        with daemon.client() as client:
            node_id = create(client, prompt="go", model=model)["node_id"]
            eventually(lambda: client.get(f"/v1/nodes/{node_id}/reports").json())

            wait_tool_call_recorded(daemon, node_id)
        daemon.kill()
        # The crash came before the push's step was recorded: it runs again.
        forget_tool_call_step(daemon, node_id)
        write_script(tmp_path, "pusher", [steps[0], "Pushed."])
        daemon.start()
        with daemon.client() as client:
            outcome = wait_settled(client, node_id)["outcome"]
            (only,) = client.get(f"/v1/nodes/{node_id}/reports").json()
            assert outcome["final_report_path"] == only["path"]
            assert Path(only["path"]).name == "final-1.md"
            assert sorted(p.name for p in Path(only["path"]).parent.iterdir()) == ["final-1.md"]
    finally:
        daemon.stop()


class TestBadInput:
    def test_a_bad_tier_or_empty_body_is_a_tool_error_the_model_can_fix(
        self, client: httpx.Client, scripts: Any, daemon: Daemon
    ) -> None:
        model = scripts(
            "bad-tier",
            [
                {"tool_calls": [report("urgent", "x")]},
                {"tool_calls": [report("progress", "   ")]},
                {"tool_calls": [report("progress", "x", "two\nlines")]},
                {"tool_calls": [report("progress", "fixed")]},
                "ok",
            ],
        )
        node_id = create(client, prompt="x", model=model)["node_id"]
        wait_settled(client, node_id)
        statuses = [e["status"] for e in logged(daemon, node_id, "node.tool_call.completed")]
        assert statuses == ["error", "error", "error", "ok"]
        listed = client.get(f"/v1/nodes/{node_id}/reports").json()
        assert [r["body"] for r in listed] == ["fixed"]

    def test_bad_query_values_and_unknown_nodes(self, client: httpx.Client) -> None:
        node_id = create(client, no_kickoff=True)["node_id"]
        assert client.get(f"/v1/nodes/{node_id}/reports").json() == []
        for params in ({"limit": 0}, {"limit": 1001}, {"limit": "many"}, {"tier": "urgent"}):
            answer = client.get(f"/v1/nodes/{node_id}/reports", params=params)
            assert answer.status_code == 422, params
            assert answer.json()["error"]["code"] == "invalid_request"
        missing = client.get("/v1/nodes/n-nothere/reports")
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "node_not_found"
        bad = client.get("/v1/nodes/bad id!/reports")
        assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_node_id"
