"""Jobs at a node's edges: resident roots closed, relaunch, leftover children, the ledger."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.daemon import create, wait_settled, wait_status
from tests.support.jobs import alive, gone, start, wait_jobs

from heron.runtime.shell._ledger import JobLedger, start_ticks


def test_closing_a_resident_root_that_answered_kills_its_jobs(
    client: httpx.Client, scripts: Any
) -> None:
    # It answered (an outcome) and waits dormant: closing it settles no new outcome,
    # yet its status becomes cancelled, and that is what stops its jobs.
    model = scripts("resident-answer", [start("sleep 600"), "answered"])
    node = create(client, prompt="go", model=model, root_lifecycle="resident")
    node_id = node["node_id"]
    wait_status(client, node_id, "dormant")
    (job,) = wait_jobs(client, node_id, ["running"])
    assert client.get(f"/v1/nodes/{node_id}/outcome").json()["state"] == "settled"
    assert client.post(f"/v1/nodes/{node_id}/close").status_code == 200
    assert client.get(f"/v1/nodes/{node_id}").json()["status"] == "cancelled"
    wait_jobs(client, node_id, ["killed"])
    assert gone(job["pid"])


def test_relaunch_kills_the_old_attempts_jobs_and_ids_carry_on(
    client: httpx.Client, scripts: Any
) -> None:
    model = scripts("relaunched", [start("sleep 600"), "started"])
    node = create(client, prompt="go", model=model, root_lifecycle="resident")
    node_id = node["node_id"]
    wait_status(client, node_id, "dormant")
    (first,) = wait_jobs(client, node_id, ["running"])
    relaunched = client.post(f"/v1/nodes/{node_id}/relaunch-root")
    assert relaunched.status_code == 200, relaunched.text
    wait_status(client, node_id, "dormant")
    old, new = wait_jobs(client, node_id, ["killed", "running"])
    assert gone(first["pid"]) and alive(new["pid"])
    # The fresh conversation starts bash-start again: one id sequence per node.
    assert (old["job_id"], new["job_id"]) == ("bash-1", "bash-2")
    client.post(f"/v1/nodes/{node_id}/close")
    assert gone(new["pid"])


def test_a_shell_that_exited_leaving_children_can_still_be_cancelled(
    client: httpx.Client, scripts: Any
) -> None:
    # The shell exits at once (code 5); the sleep it started lives on in its group.
    model = scripts("leftovers", [start("sleep 600 >/dev/null 2>&1 & exit 5"), "started"])
    node = create(client, prompt="go", model=model, root_lifecycle="resident")
    node_id = node["node_id"]
    (job,) = wait_jobs(client, node_id, ["exited"])
    assert job["exit_code"] == 5 and job["children_running"] is True
    assert alive(job["pid"])
    cancelled = client.post(f"/v1/nodes/{node_id}/jobs/{job['job_id']}/cancel")
    assert cancelled.status_code == 200, cancelled.text
    body = cancelled.json()
    # The shell had exited on its own before the cancel: it was not killed.
    assert body["status"] == "exited" and body["exit_code"] == 5
    assert body["children_running"] is False
    assert gone(job["pid"])
    again = client.post(f"/v1/nodes/{node_id}/jobs/{job['job_id']}/cancel")
    assert again.status_code == 409 and again.json()["error"]["code"] == "job_finished"
    assert "bash-start" not in again.json()["error"]["message"]
    client.post(f"/v1/nodes/{node_id}/close")
    wait_settled(client, node_id)


# -- the ledger, on real processes --------------------------------------------


def _identity() -> dict[str, str]:
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    return {"boot_id": boot, "pid_namespace": str(os.stat("/proc/self/ns/pid").st_ino)}


def _write(path: Path, groups: dict[int, int], **identity: str) -> None:
    data = {**_identity(), **identity, "groups": {str(k): v for k, v in groups.items()}}
    path.write_text(json.dumps(data))


@pytest.fixture
def leader() -> Any:
    """A ``sleep`` leading a process group of its own; killed afterwards."""
    process = subprocess.Popen(["sleep", "600"], start_new_session=True)
    yield process
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _ticks(pid: int) -> int:
    found = start_ticks(pid)
    assert found is not None
    return found


def test_the_ledger_stops_a_recorded_group(tmp_path: Path, leader: Any) -> None:
    path = tmp_path / "jobs.json"
    _write(path, {leader.pid: _ticks(leader.pid)})
    assert JobLedger(path).reap() == 1
    assert leader.wait(timeout=10) == -signal.SIGKILL
    assert json.loads(path.read_text())["groups"] == {}


def test_the_ledger_spares_a_live_pid_that_started_at_another_time(
    tmp_path: Path, leader: Any
) -> None:
    # Same pid, another start time: the pid was reused by an unrelated process.
    path = tmp_path / "jobs.json"
    _write(path, {leader.pid: _ticks(leader.pid) - 1})
    assert JobLedger(path).reap() == 0
    assert leader.poll() is None


def test_the_ledger_spares_groups_of_another_boot(tmp_path: Path, leader: Any) -> None:
    path = tmp_path / "jobs.json"
    _write(path, {leader.pid: _ticks(leader.pid)}, boot_id="another-boot")
    assert JobLedger(path).reap() == 0
    assert leader.poll() is None


def test_the_ledger_stops_a_group_whose_leader_exited(tmp_path: Path) -> None:
    shell = subprocess.Popen(
        ["bash", "-c", "sleep 600 >/dev/null 2>&1 & read -r _ || true"],
        start_new_session=True,
        stdin=subprocess.PIPE,
    )
    try:
        started = _ticks(shell.pid)
        assert shell.stdin is not None
        shell.stdin.close()  # the shell exits; its sleep lives on, leaderless
        assert shell.wait(timeout=10) == 0
        assert alive(shell.pid)
        path = tmp_path / "jobs.json"
        _write(path, {shell.pid: started})
        assert JobLedger(path).reap() == 1
        assert gone(shell.pid)
    finally:
        if alive(shell.pid):
            os.killpg(shell.pid, signal.SIGKILL)


@pytest.mark.parametrize(
    "text",
    ["[1, 2]", '{"groups": {"12": "x"}}', '{"groups": [1]}', '{"1234": 5}', "not json"],
)
def test_a_malformed_ledger_is_ignored_with_a_warning(
    tmp_path: Path, text: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "jobs.json"
    path.write_text(text)
    with caplog.at_level("WARNING", logger="heron.runtime"):
        assert JobLedger(path).reap() == 0
    assert "unreadable job ledger" in caplog.text
    assert json.loads(path.read_text())["groups"] == {}  # written afresh


def test_the_ledger_records_and_forgets_groups(tmp_path: Path, leader: Any) -> None:
    path = tmp_path / "jobs.json"
    ledger = JobLedger(path)
    ledger.add(leader.pid)
    saved = json.loads(path.read_text())
    assert saved == {**_identity(), "groups": {str(leader.pid): _ticks(leader.pid)}}
    ledger.remove([leader.pid])
    assert json.loads(path.read_text())["groups"] == {}
