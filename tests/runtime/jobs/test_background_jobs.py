"""A node's background jobs: listed, cancelled, kept across its runs, killed when it settles."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.daemon import Daemon, create, wait_settled, wait_status, write_script
from tests.support.jobs import alive, gone, jobs, start, wait_jobs
from tests.support.polling import eventually


def test_a_started_job_is_listed_running_then_cancelled_and_gone(
    client: httpx.Client, scripts: Any
) -> None:
    model = scripts("sleeper", [start("echo ready; sleep 600"), "started"])
    node = create(client, prompt="start it", model=model, root_lifecycle="resident", name="sleeper")
    node_id = node["node_id"]
    wait_status(client, node_id, "dormant")
    (job,) = wait_jobs(client, node_id, ["running"])
    assert job["job_id"] == "bash-1" and job["node_id"] == node_id
    assert job["command"] == "echo ready; sleep 600"
    assert job["exit_code"] is None and job["ended_at"] is None and job["signal"] is None
    assert alive(job["pid"])
    assert "output" not in job and "stdout" not in job  # sizes only, never the output
    eventually(lambda: jobs(client, node_id)[0], lambda job: job["output_lines"] >= 1, timeout=10)

    (counted,) = jobs(client, node_id)
    assert (counted["output_lines"], counted["output_chars"]) == (1, len("ready"))

    cancelled = client.post(f"/v1/nodes/{node_id}/jobs/bash-1/cancel")
    assert cancelled.status_code == 200, cancelled.text
    body = cancelled.json()
    assert body["status"] == "killed" and body["ended_at"] is not None
    assert body["signal"] == "SIGTERM"
    assert gone(job["pid"])
    assert [j["status"] for j in jobs(client, node_id)] == ["killed"]

    again = client.post(f"/v1/nodes/{node_id}/jobs/bash-1/cancel")
    assert again.status_code == 409 and again.json()["error"]["code"] == "job_finished"
    client.post(f"/v1/nodes/{node_id}/close")


def test_a_job_that_exits_is_listed_with_its_exit_code(client: httpx.Client, scripts: Any) -> None:
    model = scripts("quick", [start("printf 'a\\nbb\\n' >&2; exit 3"), "started"])
    node = create(client, prompt="go", model=model, root_lifecycle="resident")
    (job,) = wait_jobs(client, node["node_id"], ["exited"])
    assert job["exit_code"] == 3 and job["signal"] is None
    assert (job["output_lines"], job["output_chars"]) == (2, 3)
    refused = client.post(f"/v1/nodes/{node['node_id']}/jobs/bash-1/cancel")
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "job_finished"
    client.post(f"/v1/nodes/{node['node_id']}/close")


def test_a_job_outlives_the_run_that_started_it(client: httpx.Client, scripts: Any) -> None:
    # Run 1 starts the job and ends (the node goes dormant); run 2 reaches the same
    # job by its id and kills it: the shell is the node's, not the run's.
    kill = {"tool_calls": [{"name": "bash-kill", "arguments": {"id": "bash-1"}}]}
    model = scripts("two-runs", [start("sleep 600"), "started", kill, "killed it"])
    node = create(client, prompt="start", model=model, root_lifecycle="resident")
    node_id = node["node_id"]
    wait_status(client, node_id, "dormant")
    (job,) = wait_jobs(client, node_id, ["running"])
    assert alive(job["pid"])
    woke = client.post(f"/v1/nodes/{node_id}/messages", json={"body": "now stop it"})
    assert woke.status_code == 202 and woke.json()["delivery"] == "woke"
    (killed,) = wait_jobs(client, node_id, ["killed"])
    assert killed["pid"] == job["pid"] and gone(job["pid"])
    wait_status(client, node_id, "dormant")
    assert client.get(f"/v1/nodes/{node_id}").json()["runs"] == 2
    client.post(f"/v1/nodes/{node_id}/close")


def test_jobs_are_killed_when_the_node_is_closed(client: httpx.Client, scripts: Any) -> None:
    slow = {"text": "still thinking", "delay": 30}
    model = scripts("settling", [start("sleep 600"), start("sleep 601"), slow])
    node = create(client, prompt="start two", model=model)
    node_id = node["node_id"]
    running = wait_jobs(client, node_id, ["running", "running"])
    assert [j["job_id"] for j in running] == ["bash-1", "bash-2"]
    assert client.get(f"/v1/nodes/{node_id}").json()["status"] == "running"
    assert client.post(f"/v1/nodes/{node_id}/close").status_code == 200
    assert wait_settled(client, node_id)["node_status"] == "cancelled"
    listed = wait_jobs(client, node_id, ["killed", "killed"])
    assert all(gone(j["pid"]) for j in listed)
    assert all(j["ended_at"] is not None for j in listed)


def test_a_terminal_node_that_finishes_takes_its_jobs_with_it(
    client: httpx.Client, scripts: Any
) -> None:
    model = scripts("finisher", [start("sleep 600"), "done"])
    node = create(client, prompt="start and finish", model=model)
    assert wait_settled(client, node["node_id"])["node_status"] == "completed"
    (job,) = wait_jobs(client, node["node_id"], ["killed"])
    assert gone(job["pid"])


def test_bad_ids_and_unknown_jobs(client: httpx.Client, scripts: Any) -> None:
    node = create(client, no_kickoff=True, model=scripts("idle", ["ok"]))
    node_id = node["node_id"]
    assert jobs(client, node_id) == []
    missing = client.post(f"/v1/nodes/{node_id}/jobs/bash-9/cancel")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "job_not_found"
    bad = client.post(f"/v1/nodes/{node_id}/jobs/-bad/cancel")
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_job_id"
    no_node = client.get("/v1/nodes/no-such-node/jobs")
    assert no_node.status_code == 404 and no_node.json()["error"]["code"] == "node_not_found"
    bad_node = client.post("/v1/nodes/-x/jobs/bash-1/cancel")
    assert bad_node.status_code == 400 and bad_node.json()["error"]["code"] == "invalid_node_id"


@pytest.mark.slow
@pytest.mark.parametrize("stop", ["sigkill", "sigterm"])
def test_after_a_restart_the_old_jobs_are_stopped_and_not_listed(tmp_path: Path, stop: str) -> None:
    # A job runs in a process group of its own, so it outlives a SIGKILLed daemon:
    # the next daemon stops it. A daemon stopped gracefully stops its jobs itself.
    default = write_script(tmp_path, "default", ["default"])
    daemon = Daemon(tmp_path / "home", {"HERON_PROVIDER": default}).start()
    try:
        model = write_script(tmp_path, "server", [start("sleep 600 & sleep 601"), "started"])
        with daemon.client() as client:
            node = create(client, prompt="go", model=model, root_lifecycle="resident")
            wait_status(client, node["node_id"], "dormant")
            (job,) = wait_jobs(client, node["node_id"], ["running"])
        if stop == "sigkill":
            daemon.kill()
            assert alive(job["pid"])  # orphaned, in its own group, still running
        else:
            daemon.stop()
            assert gone(job["pid"])
        daemon.start()
        assert gone(job["pid"])
        with daemon.client() as client:
            assert jobs(client, node["node_id"]) == []
            assert client.get(f"/v1/nodes/{node['node_id']}").json()["status"] == "dormant"
    finally:
        daemon.stop()
