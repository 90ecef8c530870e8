"""The run queue: a top-level node's first run waits its turn (``HERON_MAX_RUNS`` at once
per daemon), so a create answers at once however busy the daemon is; children and
wake-ups never wait in it. Each daemon here drives one top-level run at a time."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.daemon import (
    Daemon,
    create,
    logged,
    query,
    scripted_daemon,
    wait_logged,
    wait_settled,
    write_script,
)
from tests.support.orchestration import call, spawn

pytestmark = pytest.mark.slow

TIME = {"name": "get-current-time", "arguments": {}}


@pytest.fixture
def one_at_a_time(tmp_path: Path) -> Iterator[Daemon]:
    with scripted_daemon(tmp_path, HERON_MAX_RUNS="1") as daemon:
        yield daemon


def turns_started(daemon: Daemon, node_id: str) -> int:
    return logged(daemon, node_id, "node.turn.started")


def workflow_status(daemon: Daemon, node_id: str, run: int = 1) -> str:
    ((status,),) = query(
        daemon,
        "SELECT status FROM workflow_status WHERE workflow_uuid = ?",
        f"heron:{node_id}:{run}",
    )
    return str(status)


def test_a_create_past_the_limit_waits_in_the_queue_and_runs_after(
    one_at_a_time: Daemon, tmp_path: Path
) -> None:
    slow = write_script(tmp_path, "slow", [{"tool_calls": [TIME]}, {"text": "slow", "delay": 2}])
    quick = write_script(tmp_path, "quick", [{"tool_calls": [TIME]}, "quick"])
    with one_at_a_time.client() as client:
        first = create(client, prompt="go", model=slow)["node_id"]
        wait_logged(one_at_a_time, first, "node.tool_call.completed")
        second = create(client, prompt="go", model=quick)
        # Answered as running (its run is the node's), but the run waits: nothing of it
        # has happened while the first holds the daemon's one place.
        assert second["status"] == "running"
        second_id = second["node_id"]
        assert workflow_status(one_at_a_time, second_id) == "ENQUEUED"
        assert turns_started(one_at_a_time, second_id) == 0
        # Reads answer meanwhile.
        assert client.get("/v1/status").status_code == 200
        assert client.get(f"/v1/nodes/{second_id}").json()["status"] == "running"
        assert wait_settled(client, first)["outcome"]["output_text"] == "slow"
        assert wait_settled(client, second_id)["outcome"]["output_text"] == "quick"
        node = client.get(f"/v1/nodes/{second_id}").json()
        assert node["turns"] == 2 and node["runs"] == 1
        # The first had settled before the second's run began.
        settled = query(
            one_at_a_time,
            "SELECT settled_at FROM heron_nodes WHERE node_id = ?",
            first,
        )[0][0]
        began = query(
            one_at_a_time,
            "SELECT min(created_at) FROM heron_events WHERE node_id = ? "
            "AND type = 'node.turn.started'",
            second_id,
        )[0][0]
        assert began >= settled


def test_interrupting_or_closing_a_queued_node_means_its_run_never_begins(
    one_at_a_time: Daemon, tmp_path: Path
) -> None:
    slow = write_script(tmp_path, "slow", [{"text": "slow", "delay": 2}])
    quick = write_script(tmp_path, "quick", ["quick", "again"])
    with one_at_a_time.client() as client:
        first = create(client, prompt="go", model=slow)["node_id"]
        wait_logged(one_at_a_time, first, "node.turn.started")
        interrupted = create(client, prompt="go", model=quick)["node_id"]
        closed = create(client, prompt="go", model=quick)["node_id"]
        response = client.post(f"/v1/nodes/{interrupted}/interrupt")
        assert response.status_code == 200, response.text
        assert response.json()["status"] == "interrupted"
        response = client.post(f"/v1/nodes/{closed}/close", json={"reason": "not needed"})
        assert response.status_code == 200, response.text
        assert response.json()["status"] == "cancelled"
        wait_settled(client, first)
        # Their queued runs came up and ended at once: no turn was ever asked.
        for node_id in (interrupted, closed):
            wait_logged(one_at_a_time, node_id, "node.status.changed", 2)
        assert wait_settled(client, closed)["outcome"]["kind"] == "failure"
        assert turns_started(one_at_a_time, closed) == 0
        assert client.get(f"/v1/nodes/{interrupted}").json()["status"] == "interrupted"
        assert turns_started(one_at_a_time, interrupted) == 0
        # An interrupted node takes a message: its brief and the message, in a run of
        # its own (a wake-up does not queue).
        response = client.post(f"/v1/nodes/{interrupted}/messages", json={"body": "now go"})
        assert response.status_code in (200, 202), response.text
        outcome = wait_settled(client, interrupted)["outcome"]
        assert outcome["output_text"] == "quick"
        assert client.get(f"/v1/nodes/{interrupted}").json()["runs"] == 2


def test_queued_runs_survive_a_sigkill(one_at_a_time: Daemon, tmp_path: Path) -> None:
    slow = write_script(tmp_path, "slow", [{"tool_calls": [TIME]}, {"text": "slow", "delay": 3}])
    quick = write_script(tmp_path, "quick", [{"tool_calls": [TIME]}, "quick"])
    with one_at_a_time.client() as client:
        first = create(client, prompt="go", model=slow)["node_id"]
        wait_logged(one_at_a_time, first, "node.turn.started", 2)
        waiting = [create(client, prompt="go", model=quick)["node_id"] for _ in range(3)]
    one_at_a_time.kill()
    assert all(workflow_status(one_at_a_time, n) == "ENQUEUED" for n in waiting)
    one_at_a_time.start()
    with one_at_a_time.client() as client:
        assert wait_settled(client, first)["outcome"]["output_text"] == "slow"
        for node_id in waiting:
            assert wait_settled(client, node_id)["outcome"]["output_text"] == "quick"
            node = client.get(f"/v1/nodes/{node_id}").json()
            assert node["turns"] == 2 and node["runs"] == 1
            # Each was asked once per turn: its run began only after the restart.
            assert turns_started(one_at_a_time, node_id) == 2
        # The first's finished tool call was not made again.
        assert logged(one_at_a_time, first, "node.tool_call.started") == 1


def test_children_do_not_queue_behind_their_waiting_parent(
    one_at_a_time: Daemon, tmp_path: Path
) -> None:
    child = write_script(tmp_path, "child", ["child's part done"])
    parent = write_script(
        tmp_path,
        "parent",
        [
            {"tool_calls": [spawn("a", child), spawn("b", child)]},
            {"tool_calls": [call("wait-children")]},
            "all parts done",
        ],
    )
    with one_at_a_time.client() as client:
        # The parent holds the daemon's one place while it waits for its children.
        node_id = create(client, prompt="fan out", model=parent, mode="orchestrator")["node_id"]
        outcome = wait_settled(client, node_id, timeout=60)["outcome"]
        assert outcome["output_text"] == "all parts done"
        kids = [n for n in client.get("/v1/nodes").json() if n["parent"] == node_id]
        assert sorted(k["status"] for k in kids) == ["completed", "completed"]


def test_a_wake_up_does_not_wait_behind_queued_creates(
    one_at_a_time: Daemon, tmp_path: Path
) -> None:
    answer = write_script(tmp_path, "answer", ["first answer", "second answer"])
    slow = write_script(tmp_path, "slow", [{"text": "slow", "delay": 30}])
    with one_at_a_time.client() as client:
        dormant = create(client, no_kickoff=True, model=answer)["node_id"]
        busy = create(client, prompt="go", model=slow)["node_id"]
        wait_logged(one_at_a_time, busy, "node.turn.started")
        queued = create(client, prompt="go", model=slow)["node_id"]
        # The dormant node's wake-up runs now, beside the busy one, ahead of the queue.
        response = client.post(f"/v1/nodes/{dormant}/messages", json={"body": "hello"})
        assert response.status_code in (200, 202), response.text
        assert wait_settled(client, dormant)["outcome"]["output_text"] == "first answer"
        assert client.get(f"/v1/nodes/{busy}").json()["status"] == "running"
        assert turns_started(one_at_a_time, queued) == 0
        for node_id in (busy, queued):
            assert client.post(f"/v1/nodes/{node_id}/close", json={}).status_code == 200


def test_the_queue_limit_is_read_from_the_environment(tmp_path: Path) -> None:
    daemon = Daemon(tmp_path / "home", {"HERON_MAX_RUNS": "none"})
    with pytest.raises(RuntimeError, match="HERON_MAX_RUNS must be a number"):
        daemon.start()
    daemon = Daemon(tmp_path / "home2", {"HERON_MAX_RUNS": "0"})
    with pytest.raises(RuntimeError, match="HERON_MAX_RUNS must be above 0"):
        daemon.start()


def test_a_root_relaunched_while_its_run_waits_in_the_queue_runs_once(
    one_at_a_time: Daemon, tmp_path: Path
) -> None:
    slow = write_script(tmp_path, "slow", [{"text": "slow", "delay": 3}])
    quick = write_script(tmp_path, "quick", ["quick", "again"])
    with one_at_a_time.client() as client:
        busy = create(client, prompt="go", model=slow)["node_id"]
        wait_logged(one_at_a_time, busy, "node.turn.started")
        root = create(client, prompt="go", model=quick)["node_id"]
        # The relaunch stops the queued run (withdrawn: the node is interrupted at once,
        # not left running for the relaunch to wait on), then starts the root over.
        response = client.post(f"/v1/nodes/{root}/relaunch-root")
        assert response.status_code == 200, response.text
        assert wait_settled(client, root)["outcome"]["output_text"] == "quick"
        assert workflow_status(one_at_a_time, root, 1) == "CANCELLED"
        assert turns_started(one_at_a_time, root) == 1
