"""Restarts lose nothing: SIGKILL mid-run, restart, and every node carries on."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.daemon import (
    Daemon,
    scripted_daemon,
    wait_logged,
    wait_settled,
    wait_status,
    write_script,
)

pytestmark = pytest.mark.slow

TIME = {"name": "get-current-time", "arguments": {}}


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[Daemon]:
    with scripted_daemon(tmp_path) as daemon:
        yield daemon


def events(daemon: Daemon, node_id: str, type: str) -> list[str]:
    with sqlite3.connect(daemon.home / "heron.db") as db:
        rows = db.execute(
            "SELECT data FROM heron_events WHERE node_id = ? AND type = ? ORDER BY sequence_number",
            (node_id, type),
        ).fetchall()
    return [r[0] for r in rows]


def test_sigkill_mid_run_resumes_from_the_last_completed_step(
    fresh: Daemon, tmp_path: Path
) -> None:
    script = [{"tool_calls": [TIME]}, {"tool_calls": [TIME], "delay": 3}, "done"]
    model = write_script(tmp_path, "three", script)
    with fresh.client() as client:
        settled = client.post("/v1/nodes", json={"prompt": "quick", "model": model}).json()
        before = wait_settled(client, settled["node_id"])["outcome"]
        node_id = client.post("/v1/nodes", json={"prompt": "go", "model": model}).json()["node_id"]
        dormant = client.post("/v1/nodes", json={"no_kickoff": True, "model": model}).json()
        wait_logged(fresh, node_id, "node.turn.started", 2)  # the slow second turn began
    fresh.kill()
    fresh.start()
    with fresh.client() as client:
        after = wait_settled(client, node_id)
        assert after["outcome"]["output_text"] == "done"
        node = client.get(f"/v1/nodes/{node_id}").json()
        assert node["turns"] == 3 and node["runs"] == 1
        # The first turn and its tool call finished before the kill: neither was
        # repeated. The second turn was cut off, so it was asked again.
        assert len(events(fresh, node_id, "node.tool_call.started")) == 2
        assert len(events(fresh, node_id, "node.turn.started")) == 4
        assert len(events(fresh, node_id, "node.turn.completed")) == 3
        # Settled outcomes are unchanged, and a dormant node is still dormant.
        assert client.get(f"/v1/nodes/{settled['node_id']}/outcome").json()["outcome"] == before
        assert client.get(f"/v1/nodes/{dormant['node_id']}").json()["status"] == "dormant"
        # Event numbering carries on after the restart, with no number used twice.
        with sqlite3.connect(fresh.home / "heron.db") as db:
            numbers = [
                r[0]
                for r in db.execute(
                    "SELECT sequence_number FROM heron_events WHERE node_id = ? ORDER BY 1",
                    (node_id,),
                )
            ]
        assert numbers == sorted(set(numbers))


def test_a_graceful_stop_mid_run_also_resumes(fresh: Daemon, tmp_path: Path) -> None:
    model = write_script(tmp_path, "slow", [{"text": "finally", "delay": 2}])
    with fresh.client() as client:
        node_id = client.post("/v1/nodes", json={"prompt": "go", "model": model}).json()["node_id"]
        wait_logged(fresh, node_id, "node.turn.started", 1)
    fresh.stop()
    fresh.start()
    with fresh.client() as client:
        assert wait_settled(client, node_id)["outcome"]["output_text"] == "finally"
        assert client.get(f"/v1/nodes/{node_id}").json()["runs"] == 1
    # The turn was cut off by the stop and asked again after the start: same run.
    wait_logged(fresh, node_id, "node.turn.started", 2)


def test_deadlines_survive_a_restart(fresh: Daemon, tmp_path: Path) -> None:
    model = write_script(tmp_path, "never", [{"text": "too late", "delay": 60}])
    with fresh.client() as client:
        node = client.post("/v1/nodes", json={"prompt": "x", "deadline": "3s", "model": model})
        node_id = node.json()["node_id"]
    fresh.kill()
    fresh.start()
    with fresh.client() as client:
        outcome = wait_settled(client, node_id)["outcome"]
        assert outcome["reason"] == "deadline_exceeded"
        wait_status(client, node_id, "cancelled")


def test_a_deadline_that_passed_while_down_settles_a_resumed_run(
    fresh: Daemon, tmp_path: Path
) -> None:
    # The resumed run replays its recorded first turn; the deadline, already past,
    # must wait for the replay instead of cutting into it (DBOS would refuse the
    # steps out of line, and the node would hang in "running").
    model = write_script(tmp_path, "slow2", [{"tool_calls": [TIME]}, {"text": "x", "delay": 60}])
    with fresh.client() as client:
        body = {"prompt": "x", "deadline": "3s", "model": model}
        node = client.post("/v1/nodes", json=body).json()
        wait_logged(fresh, node["node_id"], "node.turn.started", 2)
    fresh.kill()
    time.sleep(4)  # let the deadline pass while the daemon is down

    fresh.start()
    with fresh.client() as client:
        poll = wait_settled(client, node["node_id"])
        assert poll["outcome"]["reason"] == "deadline_exceeded"
        assert poll["node_status"] == "cancelled"
        assert client.get(f"/v1/nodes/{node['node_id']}").json()["turns"] == 1
    assert "DBOSUnexpectedStepError" not in fresh.log.read_text()


def test_a_run_that_cannot_start_settles_as_crashed(fresh: Daemon, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    model = write_script(tmp_path, "w", ["never"])
    with fresh.client() as client:
        body = {"no_kickoff": True, "cwd": str(work), "model": model}
        node_id = client.post("/v1/nodes", json=body).json()["node_id"]
        work.rmdir()  # the node's tools can no longer be made
        client.post(f"/v1/nodes/{node_id}/messages", json={"body": "go"})
        poll = wait_settled(client, node_id)
        assert poll["outcome"]["reason"] == "crashed"
        assert "could not start" in poll["outcome"]["detail"]["message"]
        assert poll["node_status"] == "failed"


def test_a_message_to_a_dormant_node_after_restart_wakes_it(fresh: Daemon, tmp_path: Path) -> None:
    model = write_script(tmp_path, "resident", ["one", "two"])
    with fresh.client() as client:
        body: dict[str, Any] = {"prompt": "hi", "root_lifecycle": "resident", "model": model}
        node_id = client.post("/v1/nodes", json=body).json()["node_id"]
        wait_status(client, node_id, "dormant")
    fresh.kill()
    fresh.start()
    with fresh.client() as client:
        assert (
            client.post(f"/v1/nodes/{node_id}/messages", json={"body": "again"}).json()["delivery"]
            == "woke"
        )
        node = wait_status(client, node_id, "dormant")
        assert node["runs"] == 2 and node["turns"] == 2
    fresh.stop()  # writes every pending event
    statuses = [json.loads(d)["status"] for d in events(fresh, node_id, "node.status.changed")]
    assert statuses == ["running", "dormant", "running", "dormant"]
    assert "could not write node events" not in fresh.log.read_text()


def test_a_run_recorded_by_another_heron_fails_clearly_and_a_revive_runs_it(
    fresh: Daemon, tmp_path: Path
) -> None:
    model = write_script(tmp_path, "slow", [{"text": "finally", "delay": 3}])
    with fresh.client() as client:
        node_id = client.post("/v1/nodes", json={"prompt": "go", "model": model}).json()["node_id"]
        wait_logged(fresh, node_id, "node.turn.started")
    fresh.kill()
    # As if a Heron whose runs take other steps had recorded the run: DBOS would never
    # resume it here, and the node would stay running for ever.
    with sqlite3.connect(fresh.home / "heron.db") as db:
        changed = db.execute(
            "UPDATE workflow_status SET application_version = '0.0.1' WHERE workflow_uuid = ?",
            (f"heron:{node_id}:1",),
        ).rowcount
    assert changed == 1
    fresh.start()
    with fresh.client() as client:
        outcome = wait_settled(client, node_id)["outcome"]
        assert outcome["kind"] == "failure" and outcome["reason"] == "crashed"
        assert "another version of Heron (0.0.1)" in outcome["detail"]["message"]
        response = client.post(f"/v1/nodes/{node_id}/revive")
        assert response.status_code in (200, 202), response.text
        wait_status(client, node_id, "completed")
        poll = client.get(f"/v1/nodes/{node_id}/outcome").json()
        assert poll["outcome"]["output_text"] == "finally"


def test_a_first_turn_that_ended_unrecorded_is_asked_again_quietly(
    fresh: Daemon, tmp_path: Path
) -> None:
    wait = {"name": "bash-run", "arguments": {"command": "sleep 4"}}
    model = write_script(
        tmp_path, "first", [{"text": "let me wait", "tool_calls": [wait]}, "waited"]
    )
    with fresh.client() as client:
        node_id = client.post("/v1/nodes", json={"prompt": "go", "model": model}).json()["node_id"]
        wait_logged(fresh, node_id, "node.tool_call.started")  # the first turn has ended
    fresh.kill()
    # As if the kill had come after the turn's events and mark were written but before
    # DBOS recorded its result: only the begin step is recorded.
    with sqlite3.connect(fresh.home / "heron.db") as db:
        removed = db.execute(
            "DELETE FROM operation_outputs WHERE workflow_uuid = ? AND function_name = ?",
            (f"heron:{node_id}:1", "model-turn"),
        ).rowcount
        (mark,) = db.execute(
            "SELECT step_mark FROM heron_nodes WHERE node_id = ?", (node_id,)
        ).fetchone()
    assert removed == 1 and mark is not None
    fresh.start()
    with fresh.client() as client:
        assert wait_settled(client, node_id, timeout=90)["outcome"]["output_text"] == "waited"
        assert client.get(f"/v1/nodes/{node_id}").json()["turns"] == 2  # counted once
    # The first turn ran again, quietly: its events are there once.
    assert len(events(fresh, node_id, "node.turn.started")) == 2
    assert len(events(fresh, node_id, "node.output_text.done")) == 2
