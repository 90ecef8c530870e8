"""A daemon's row among the daemons sharing its database, on SQLite (one daemon): its
executor id, kept across restarts, its heartbeat, its clean stop, and the runs of a
daemon from before executor ids resumed after an upgrade in place."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from tests.support.daemon import Daemon, query, wait_logged, wait_settled, write_script
from tests.support.polling import eventually

from heron.api import DaemonInfo
from heron.cli._daemon import daemon_line
from heron.runtime.nodes._cluster import EXECUTOR_FILE, LEGACY_EXECUTOR

TIME = {"name": "get-current-time", "arguments": {}}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def daemon(home: Path, tmp_path: Path) -> Iterator[Daemon]:
    default = write_script(tmp_path, "default", ["default"])
    process = Daemon(home, {"HERON_PROVIDER": default, "HERON_HEARTBEAT": "0.2"})
    try:
        yield process.start()
    finally:
        process.stop()


def listed(daemon: Daemon) -> list[dict[str, Any]]:
    with daemon.client() as client:
        found: list[dict[str, Any]] = client.get("/v1/status").json()["daemons"]
    return found


def test_a_daemon_lists_itself_beats_and_keeps_its_executor_id(
    daemon: Daemon, home: Path, tmp_path: Path
) -> None:
    executor = (home / EXECUTOR_FILE).read_text().strip()
    assert executor and executor != LEGACY_EXECUTOR
    (me,) = listed(daemon)
    assert daemon.process is not None
    assert me["executor_id"] == executor
    assert (me["this"], me["alive"], me["pid"]) == (True, True, daemon.process.pid)
    assert (me["home"], me["socket"]) == (str(home), str(daemon.socket))
    assert me["stopped_at"] is None and me["recovered_by"] is None
    first = datetime.fromisoformat(me["heartbeat_at"])
    eventually(
        lambda: datetime.fromisoformat(listed(daemon)[0]["heartbeat_at"]) > first, what="a beat"
    )

    # DBOS records the node's run under the daemon's own executor id.
    model = write_script(tmp_path, "one", ["One."])
    with daemon.client() as client:
        node_id = client.post("/v1/nodes", json={"prompt": "x", "model": model}).json()["node_id"]
        wait_settled(client, node_id)
    sql = "SELECT executor_id FROM workflow_status WHERE workflow_uuid = ?"
    assert query(daemon, sql, f"heron:{node_id}:1") == [(executor,)]

    daemon.stop()
    ((stopped_at, running),) = query(
        daemon, "SELECT stopped_at, running FROM heron_daemons WHERE executor_id = ?", executor
    )
    assert stopped_at is not None and running == 0

    daemon.start()
    (again,) = listed(daemon)
    assert again["executor_id"] == executor and again["alive"]
    assert again["stopped_at"] is None
    assert datetime.fromisoformat(again["started_at"]) > datetime.fromisoformat(me["started_at"])


@pytest.mark.slow
def test_runs_recorded_before_executor_ids_resume_after_an_upgrade(
    daemon: Daemon, home: Path, tmp_path: Path
) -> None:
    model = write_script(tmp_path, "slow", [{"tool_calls": [TIME]}, {"text": "done", "delay": 60}])
    with daemon.client() as client:
        node_id = client.post("/v1/nodes", json={"prompt": "x", "model": model}).json()["node_id"]
    wait_logged(daemon, node_id, "node.turn.started", 2)  # the first turn and its call are done
    daemon.kill()
    # The database as a Heron from before executor ids left it: every workflow under DBOS's
    # default id, no registry table, the kernel's schema one version older, no id file.
    with sqlite3.connect(home / "heron.db") as db:
        db.execute("UPDATE workflow_status SET executor_id = ?", (LEGACY_EXECUTOR,))
        db.execute("DROP TABLE heron_daemons")
        db.execute("UPDATE heron_schema SET version = version - 1 WHERE name = 'nodes'")
    (home / EXECUTOR_FILE).unlink()
    write_script(tmp_path, "slow", [{"tool_calls": [TIME]}, {"text": "done", "delay": 0}])

    daemon.start()
    with daemon.client() as client:
        poll = wait_settled(client, node_id)
    assert poll["outcome"]["output_text"] == "done"
    counts = {
        kind: query(
            daemon,
            "SELECT count(*) FROM heron_events WHERE node_id = ? AND type = ?",
            node_id,
            kind,
        )[0][0]
        for kind in ("node.turn.started", "node.turn.completed", "node.tool_call.started")
    }
    # Only the turn the kill cut short was asked again.
    assert counts == {"node.turn.started": 3, "node.turn.completed": 2, "node.tool_call.started": 1}
    executor = (home / EXECUTOR_FILE).read_text().strip()
    sql = "SELECT executor_id FROM workflow_status WHERE workflow_uuid = ?"
    assert query(daemon, sql, f"heron:{node_id}:1") == [(executor,)]


def test_a_daemon_line_says_who_is_alive_and_who_took_over_the_dead() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    common: dict[str, Any] = {
        "host": "box",
        "home": "/h",
        "socket": "/h/heron.sock",
        "version": "1.0",
        "started_at": now - timedelta(hours=1),
    }
    alive = DaemonInfo(
        executor_id="box-1",
        pid=10,
        heartbeat_at=now - timedelta(seconds=2),
        running=3,
        this=True,
        alive=True,
        **common,
    )
    dead = DaemonInfo(
        executor_id="box-2",
        pid=11,
        heartbeat_at=now - timedelta(seconds=75),
        running=1,
        this=False,
        alive=False,
        recovered_by="box-1",
        **common,
    )
    assert daemon_line(alive, now) == "box-1 (this one) on box, pid 10: 3 running, beat 2s ago"
    assert daemon_line(dead, now) == (
        "box-2 on box, pid 11: DEAD (silent for 1m 15s), runs taken over by box-1"
    )
