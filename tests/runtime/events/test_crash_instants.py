"""Events, settlement and usage across crashes at the worst moments.

Each test puts a real daemon's database in the state a SIGKILL at one instant
leaves (DBOS's own records edited while the daemon is down, as a kill between
two writes would have left them), or kills it for real at that instant (the
daemon's ``HERON_TEST_SETTLE_CRASH`` hook), restarts it, and reads the durable log.
"""

from __future__ import annotations

import json
import signal
import sqlite3
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.daemon import Daemon, create, wait_settled, write_script
from tests.support.polling import eventually
from tests.support.sse import events

from heron.runtime.nodes._engine import SETTLE_CRASH_ENV

TOOL_TURN = {"text": "Checking.", "tool_calls": [{"name": "get-current-time", "arguments": {}}]}


def db(daemon: Daemon) -> sqlite3.Connection:
    return sqlite3.connect(daemon.home / "heron.db")


def logged(daemon: Daemon, node_id: str) -> list[tuple[int, str, dict[str, Any]]]:
    """The node's logged events: number, type, data."""
    with db(daemon) as conn:
        rows = conn.execute(
            "SELECT sequence_number, type, data FROM heron_events WHERE node_id = ?"
            " ORDER BY sequence_number",
            (node_id,),
        ).fetchall()
    return [(n, t, json.loads(d) if isinstance(d, str) else d) for n, t, d in rows]


def statuses(events: list[tuple[int, str, dict[str, Any]]]) -> list[str]:
    """The node's status changes and settlements, in order."""
    out = []
    for _, kind, data in events:
        if kind == "node.status.changed":
            out.append(data["status"])
        elif kind == "node.settled":
            out.append("SETTLED")
    return out


def steps(daemon: Daemon, node_id: str, run: int = 1) -> list[tuple[int, str]]:
    """DBOS's recorded steps of the node's run: function id and name."""
    with db(daemon) as conn:
        rows = conn.execute(
            "SELECT function_id, function_name FROM operation_outputs WHERE workflow_uuid = ?"
            " ORDER BY function_id",
            (f"heron:{node_id}:{run}",),
        ).fetchall()
    return [(int(i), str(n)) for i, n in rows]


def unfinish(daemon: Daemon, node_id: str, *, forget: tuple[str, ...] = ()) -> None:
    """Make the node's first run a workflow DBOS has not marked done (and forget the
    recorded steps named ``forget``): what a kill right after them leaves."""
    workflow = f"heron:{node_id}:1"
    with db(daemon) as conn:
        conn.execute(
            "UPDATE workflow_status SET status = 'PENDING', output = NULL WHERE workflow_uuid = ?",
            (workflow,),
        )
        for name in forget:
            conn.execute(
                "DELETE FROM operation_outputs WHERE workflow_uuid = ? AND function_name = ?",
                (workflow, name),
            )


def counted(node: dict[str, Any]) -> tuple[int, int, int]:
    """A node's turns and tokens."""
    return node["turns"], node["input_tokens"], node["output_tokens"]


def recovered(daemon: Daemon, node_id: str) -> None:
    """Wait until DBOS has finished the node's recovered first run."""

    def status() -> str:
        with db(daemon) as conn:
            (found,) = conn.execute(
                "SELECT status FROM workflow_status WHERE workflow_uuid = ?",
                (f"heron:{node_id}:1",),
            ).fetchone()
        return str(found)

    eventually(status, lambda found: found == "SUCCESS", timeout=60, what=f"{node_id}'s run 1")


@pytest.mark.slow
def test_a_completed_steps_events_are_written_before_its_result(tmp_path: Path) -> None:
    """At the instant DBOS records a step's result, the step's events are in the log
    (a trigger in the database takes the count inside DBOS's own insert)."""
    default = write_script(tmp_path, "default", ["Default."])
    daemon = Daemon(tmp_path / "home", {"HERON_PROVIDER": default}).start()
    daemon.stop()  # the tables exist now: watch DBOS's step records
    with db(daemon) as conn:
        conn.executescript(
            """
            CREATE TABLE probe (function_name TEXT, turns_done INTEGER, calls_done INTEGER);
            CREATE TRIGGER probe_steps AFTER INSERT ON operation_outputs
            WHEN NEW.function_name IN ('model-turn', 'tool-call')
            BEGIN
                INSERT INTO probe SELECT NEW.function_name,
                    (SELECT count(*) FROM heron_events WHERE type = 'node.turn.completed'),
                    (SELECT count(*) FROM heron_events WHERE type = 'node.tool_call.completed');
            END;
            """
        )
    daemon.start()
    try:
        model = write_script(tmp_path, "tools", [TOOL_TURN] * 4 + ["Done."])
        with daemon.client() as client:
            node = create(client, prompt="Go.", model=model)["node_id"]
            wait_settled(client, node)
    finally:
        daemon.stop()
    with db(daemon) as conn:
        seen = conn.execute("SELECT * FROM probe ORDER BY rowid").fetchall()
    turns = calls = 0
    expected = []
    for name, _, _ in seen:
        turns += name == "model-turn"
        calls += name == "tool-call"
        expected.append((name, turns, calls))
    assert len(seen) == 9 and seen == expected


@pytest.mark.slow
@pytest.mark.parametrize("forget", [(), ("end",)], ids=["workflow-not-done", "end-unrecorded"])
def test_a_run_whose_end_was_saved_settles_once_after_a_restart(
    tmp_path: Path, forget: tuple[str, ...]
) -> None:
    """A kill after the run's end was saved, before DBOS marked its workflow done (or
    recorded the end step): the recovered run announces nothing again."""
    default = write_script(tmp_path, "default", ["Default."])
    daemon = Daemon(tmp_path / "home", {"HERON_PROVIDER": default}).start()
    try:
        model = write_script(tmp_path, "done", [TOOL_TURN, "All done."])
        with daemon.client() as client:
            node = create(client, prompt="Go.", model=model)["node_id"]
            outcome = wait_settled(client, node)["outcome"]
        daemon.stop()
        before = logged(daemon, node)
        assert statuses(before) == ["running", "completed", "SETTLED"]
        unfinish(daemon, node, forget=forget)
        daemon.start()
        recovered(daemon, node)
        with daemon.client() as client:
            assert client.get(f"/v1/nodes/{node}/outcome").json()["outcome"] == outcome
            assert client.get(f"/v1/nodes/{node}").json()["status"] == "completed"
        daemon.stop()
        assert [name for _, name in steps(daemon, node)].count("end") == 1  # (ran again)
        assert logged(daemon, node) == before
    finally:
        daemon.stop()


@pytest.mark.slow
def test_an_end_whose_events_were_lost_is_announced_once(tmp_path: Path) -> None:
    """A kill after the end was saved but before its events were written: the end step,
    run again, announces it (once)."""
    default = write_script(tmp_path, "default", ["Default."])
    daemon = Daemon(tmp_path / "home", {"HERON_PROVIDER": default}).start()
    try:
        model = write_script(tmp_path, "done", ["All done."])
        with daemon.client() as client:
            node = create(client, prompt="Go.", model=model)["node_id"]
            outcome = wait_settled(client, node)["outcome"]
        daemon.stop()
        before = logged(daemon, node)
        unfinish(daemon, node, forget=("end",))
        ending = [n for n, kind, data in before if kind == "node.settled"]
        ending.append(ending[0] - 1)  # (its status change comes right before)
        turn = next(i for i, name in steps(daemon, node) if name == "model-turn")
        with db(daemon) as conn:
            conn.executemany(
                "DELETE FROM heron_events WHERE node_id = ? AND sequence_number = ?",
                [(node, n) for n in ending],
            )
            conn.execute(
                "UPDATE heron_nodes SET step_mark = ? WHERE node_id = ?", (f"1:{turn}", node)
            )
        daemon.start()
        recovered(daemon, node)
        daemon.stop()
        after = logged(daemon, node)
        assert statuses(after) == ["running", "completed", "SETTLED"]
        assert after[-1][2] == {"outcome": outcome}
    finally:
        daemon.stop()


@pytest.mark.slow
def test_a_model_turn_run_again_counts_once_and_says_so_once(tmp_path: Path) -> None:
    """A kill after a model turn ended (its events and usage written) but before DBOS
    recorded it: DBOS runs it again, quietly: its events and usage are there once."""
    default = write_script(tmp_path, "default", ["Default."])
    daemon = Daemon(tmp_path / "home", {"HERON_PROVIDER": default}).start()
    try:
        model = write_script(tmp_path, "turns", [TOOL_TURN, "All done."])
        with daemon.client() as client:
            node = create(client, prompt="Go.", model=model)["node_id"]
            wait_settled(client, node)
            usage = counted(client.get(f"/v1/nodes/{node}").json())
        daemon.stop()
        before = logged(daemon, node)
        recorded = steps(daemon, node)
        last_turn = max(i for i, name in recorded if name == "model-turn")
        unfinish(daemon, node)
        with db(daemon) as conn:  # the run's end and its last turn were never recorded
            conn.execute(
                "DELETE FROM operation_outputs WHERE workflow_uuid = ? AND function_id >= ?",
                (f"heron:{node}:1", last_turn),
            )
            # Its last turn had ended: the run's end (its events and mark) had not begun.
            ending = next(n for n, kind, _ in before if kind == "node.settled")
            conn.executemany(
                "DELETE FROM heron_events WHERE node_id = ? AND sequence_number = ?",
                [(node, ending), (node, ending - 1)],
            )
            conn.execute(
                "UPDATE heron_nodes SET step_mark = ?, status = 'running', settled_at = NULL"
                " WHERE node_id = ?",
                (f"1:{last_turn}", node),
            )
            conn.execute("DELETE FROM heron_outcomes WHERE node_id = ?", (node,))
            conn.execute(
                "UPDATE heron_nodes SET extra = json_remove(extra, '$.ended') WHERE node_id = ?",
                (node,),
            )
        daemon.start()
        with daemon.client() as client:
            wait_settled(client, node)
            again = counted(client.get(f"/v1/nodes/{node}").json())
        daemon.stop()
        assert again == usage
        after = logged(daemon, node)
        kinds = [kind for _, kind, _ in after]
        assert kinds == [kind for _, kind, _ in before] and kinds.count("node.turn.started") == 2
        # The recovered run goes on running (said once); its end comes once.
        assert statuses(after) == ["running", "completed", "SETTLED"]
    finally:
        daemon.stop()


@pytest.mark.slow
def test_a_close_answered_is_in_the_log_at_once(tmp_path: Path) -> None:
    """Closing an idle node answers once its settlement's events are written: a SIGKILL
    right after the answer loses none of them."""
    default = write_script(tmp_path, "default", ["Default."])
    daemon = Daemon(tmp_path / "home", {"HERON_PROVIDER": default}).start()
    try:
        with daemon.client() as client:
            node = create(client, prompt="Go.", model=default, no_kickoff=True)["node_id"]
            assert client.post(f"/v1/nodes/{node}/close").status_code == 200
        daemon.kill()
        assert statuses(logged(daemon, node)) == ["dormant", "cancelled", "SETTLED"]
    finally:
        daemon.stop()


@pytest.mark.slow
@pytest.mark.parametrize("how", ["close", "deadline"])
def test_an_idle_node_settled_at_a_kill_has_its_settlement_in_the_log(
    tmp_path: Path, how: str
) -> None:
    """A real SIGKILL (the daemon's own test hook) the instant an idle node's settlement
    is in the database, by a close or by its deadline: after a restart its log holds
    the settlement's status and ``node.settled`` once each, numbered one after the other,
    and a replay from 0 shows them with no ``stream_gap``."""
    marker = tmp_path / "crash-now"
    default = write_script(tmp_path, "default", ["Default."])
    env = {"HERON_PROVIDER": default, SETTLE_CRASH_ENV: str(marker)}
    daemon = Daemon(tmp_path / "home", env).start()
    try:
        with daemon.client() as client:
            body: dict[str, Any] = {"prompt": "Go.", "model": default, "no_kickoff": True}
            if how == "deadline":
                body["deadline"] = "2s"
            marker.touch()
            node = create(client, **body)["node_id"]
            if how == "close":
                with pytest.raises(httpx.TransportError):
                    client.post(f"/v1/nodes/{node}/close")
        assert daemon.process is not None
        assert daemon.process.wait(timeout=30) == -signal.SIGKILL
        assert not marker.exists()  # the hook fired (once: the restart runs on)
        daemon.start()
        with daemon.client() as client:
            settled = wait_settled(client, node)
            assert client.get(f"/v1/nodes/{node}").json()["status"] == "cancelled"
            with client.stream("GET", f"/v1/nodes/{node}/events", params={"after": 0}) as sse:
                replay = events(sse)
        daemon.stop()
        log = logged(daemon, node)
        assert statuses(log) == ["dormant", "cancelled", "SETTLED"]
        numbers = [n for n, _, _ in log]
        assert numbers == list(range(1, len(log) + 1))
        (status,) = [n for n, kind, data in log if data.get("status") == "cancelled"]
        (announced,) = [n for n, kind, _ in log if kind == "node.settled"]
        assert announced == status + 1 == numbers[-1]
        assert log[-1][2] == {"outcome": settled["outcome"]}
        reason = "deadline_exceeded" if how == "deadline" else "cancelled"
        assert settled["outcome"]["reason"] == reason
        assert [(r.seq, r.event) for r in replay] == [(n, kind) for n, kind, _ in log]
    finally:
        daemon.stop()
