"""Messages a running node reads between turns: not a step of their own, yet a run
recovered after a SIGKILL reads exactly what its recorded turns read, no more, no less."""

from __future__ import annotations

import json
import sqlite3
import time
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
from tests.support.orchestration import conversation

pytestmark = pytest.mark.slow

TIME = {"name": "get-current-time", "arguments": {}}


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    with scripted_daemon(tmp_path) as daemon:
        yield daemon


def claims(daemon: Daemon, node_id: str) -> list[tuple[str, int | None, int | None]]:
    rows = query(
        daemon,
        "SELECT body, claimed_run, claimed_step FROM heron_messages WHERE node_id = ? "
        "ORDER BY message_id",
        node_id,
    )
    return [(str(body), run, step) for body, run, step in rows]


def steps(daemon: Daemon, node_id: str) -> list[str]:
    rows = query(
        daemon,
        "SELECT function_name FROM operation_outputs WHERE workflow_uuid = ? ORDER BY function_id",
        f"heron:{node_id}:1",
    )
    return [str(name) for (name,) in rows]


def test_a_message_read_between_turns_is_read_again_after_a_sigkill(
    daemon: Daemon, tmp_path: Path
) -> None:
    model = write_script(
        tmp_path,
        "three",
        [{"tool_calls": [TIME], "delay": 2}, {"text": "answered", "delay": 3}],
    )
    with daemon.client() as client:
        node_id = create(client, prompt="go", model=model)["node_id"]
        wait_logged(daemon, node_id, "node.turn.started")
        response = client.post(f"/v1/nodes/{node_id}/messages", json={"body": "also this"})
        assert response.status_code in (200, 202) and response.json()["delivery"] == "queued"
        wait_logged(daemon, node_id, "node.turn.started", 2)  # read after the tool call
    daemon.kill()
    # Taken by the run's first read between turns; no step recorded the read.
    assert claims(daemon, node_id) == [("go", 1, 1), ("also this", 1, -1)]
    assert steps(daemon, node_id) == ["begin", "model-turn", "tool-call"]
    daemon.start()
    with daemon.client() as client:
        assert wait_settled(client, node_id)["outcome"]["output_text"] == "answered"
    # The recovered run read the same message at the same place, once.
    assert claims(daemon, node_id) == [("go", 1, 1), ("also this", 1, -1)]
    said = conversation(daemon, node_id)
    assert said.count("also this") == 1
    assert said.index("get-current-time") < said.index("also this")
    assert steps(daemon, node_id) == ["begin", "model-turn", "tool-call", "model-turn", "end"]
    assert logged(daemon, node_id, "node.turn.started") == 3  # the cut-off turn again


def test_a_recovered_run_does_not_read_a_message_its_recorded_turns_never_saw(
    daemon: Daemon, tmp_path: Path
) -> None:
    model = write_script(
        tmp_path,
        "three",
        [{"tool_calls": [TIME]}, {"tool_calls": [TIME]}, {"text": "answered", "delay": 3}],
    )
    with daemon.client() as client:
        node_id = create(client, prompt="go", model=model)["node_id"]
        wait_logged(daemon, node_id, "node.turn.started", 3)
    daemon.kill()
    assert steps(daemon, node_id) == [
        "begin",
        "model-turn",
        "tool-call",
        "model-turn",
        "tool-call",
    ]
    # A message arrives while the daemon is down (as another daemon would queue it).
    with sqlite3.connect(daemon.home / "heron.db") as db:
        db.execute(
            "INSERT INTO heron_messages (node_id, body, created_at) VALUES (?, ?, ?)",
            (node_id, "late news", time.time()),
        )
    daemon.start()
    with daemon.client() as client:
        assert wait_settled(client, node_id)["outcome"]["output_text"] == "answered"
    # The first read had found nothing: replayed, it still takes nothing. The second was
    # never made before the kill: live again, it takes the message for the last turn.
    assert claims(daemon, node_id) == [("go", 1, 1), ("late news", 1, -2)]
    state = json.loads(
        query(daemon, "SELECT state FROM heron_nodes WHERE node_id = ?", node_id)[0][0]
    )
    users = [m for m in state["messages_full"] if m["role"] == "user"]
    assert [u["content"] for u in users] == ["go", "late news"]
