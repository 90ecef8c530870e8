"""``heron daemon --workers N`` on PostgreSQL: the front serves the API and runs no node;
its workers, on the same home and database, run them all, a killed one is started again
and its runs finish, and everything the API does reaches a run on a worker. On SQLite the
option is refused."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support import pg
from tests.support.daemon import SLOW, Daemon, create, wait_settled, wait_status, write_script
from tests.support.orchestration import call, children, spawn
from tests.support.polling import eventually
from tests.support.sse import Sse, records

pytestmark = pytest.mark.slow

DATABASE = "heron_workers"
TIME = {"name": "get-current-time", "arguments": {"timezone": "UTC"}}


def env(url: str, home: Path, **more: str) -> dict[str, str]:
    default = write_script(home.parent, f"{home.name}-default", ["Hello from a worker."])
    return {
        "HERON_DATABASE_URL": url,
        "HERON_PROVIDER": default,
        "HERON_HEARTBEAT": "1",
        "HERON_SSE_KEEPALIVE": "0.5",
        **more,
    }


def daemons(front: Daemon) -> list[dict[str, Any]]:
    with front.client() as client:
        found: list[dict[str, Any]] = client.get("/v1/status").json()["daemons"]
    return found


def workers_up(front: Daemon, count: int = 2) -> list[dict[str, Any]]:
    """The front's workers, once ``count`` of them are alive."""
    found: list[dict[str, Any]] = eventually(
        lambda: [d for d in daemons(front) if d["role"] == "worker" and d["alive"]],
        lambda found: len(found) == count,
        timeout=60,
        what=f"{count} workers alive",
    )
    return found


def executors(cluster: pg.Cluster, database: str, node_ids: list[str]) -> dict[str, str]:
    """The DBOS executor id of each node's first run."""
    with cluster.connect(database) as conn:
        rows = conn.execute(
            "SELECT workflow_uuid, executor_id FROM dbos.workflow_status "
            "WHERE workflow_uuid = ANY(%s)",
            ([f"heron:{n}:1" for n in node_ids],),
        ).fetchall()
    return {str(w).split(":")[1]: str(e) for w, e in rows}


@pytest.fixture(scope="module")
def front(cluster: pg.Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """A daemon with two workers on its own database, both workers alive."""
    url = cluster.create_database(DATABASE)
    home = tmp_path_factory.mktemp("heron-workers") / "home"
    # Room for 8 runs per worker: a load of 40 has to spread over both.
    daemon = Daemon(home, env(url, home, HERON_MAX_RUNS="8")).start("--workers", "2")
    try:
        workers_up(daemon)
        yield daemon
    finally:
        daemon.stop()


@pytest.fixture
def client(front: Daemon) -> Iterator[httpx.Client]:
    with front.client() as c:
        yield c


def test_status_lists_the_workers_of_the_front(front: Daemon) -> None:
    found = daemons(front)
    (me,) = [d for d in found if d["this"]]
    assert me["role"] == "front" and me["front"] is None and me["running"] == 0
    assert front.process is not None and me["pid"] == front.process.pid
    workers = sorted((d for d in found if d["role"] == "worker"), key=lambda d: d["executor_id"])
    assert [w["executor_id"] for w in workers] == [
        f"{me['executor_id']}-w1",
        f"{me['executor_id']}-w2",
    ]
    for worker in workers:
        assert worker["front"] == me["executor_id"] and worker["alive"]
        assert worker["home"] == me["home"] and worker["pid"] != me["pid"]
    assert (front.home / "executor-id").read_text().strip() == me["executor_id"]


def test_a_load_settles_on_both_workers_and_none_in_the_front(
    front: Daemon, client: httpx.Client, cluster: pg.Cluster, tmp_path: Path
) -> None:
    model = write_script(tmp_path, "load", [{"tool_calls": [TIME]}, "Done."])
    node_ids = [create(client, prompt="Go.", model=model)["node_id"] for _ in range(40)]
    for node_id in node_ids:
        poll = wait_settled(client, node_id, timeout=120)
        assert poll["outcome"]["output_text"] == "Done."
    for node_id in node_ids:
        node = client.get(f"/v1/nodes/{node_id}").json()
        assert node["status"] == "completed" and node["turns"] == 2, node
    ran = executors(cluster, DATABASE, node_ids)
    assert set(ran) == set(node_ids)
    front_id = next(d["executor_id"] for d in daemons(front) if d["this"])
    assert set(ran.values()) == {f"{front_id}-w1", f"{front_id}-w2"}


def test_an_orchestrators_children_run_on_the_workers(
    front: Daemon, client: httpx.Client, cluster: pg.Cluster, tmp_path: Path
) -> None:
    alpha = write_script(tmp_path, "alpha", ["alpha found 41 bugs"])
    beta = write_script(tmp_path, "beta", [{"text": "beta fixed 42 tests", "delay": 0.5}])
    model = write_script(
        tmp_path,
        "fan-out",
        [
            {"tool_calls": [spawn("alpha", alpha), spawn("beta", beta)]},
            {"tool_calls": [call("wait-children")]},
            "Both children are done.",
        ],
    )
    parent = create(client, prompt="fan out", model=model, mode="orchestrator")["node_id"]
    outcome = wait_settled(client, parent, timeout=60)["outcome"]
    assert outcome["output_text"] == "Both children are done."
    kids = [n["node_id"] for n in client.get("/v1/nodes").json() if n["parent"] == parent]
    assert len(kids) == 2
    front_id = next(d["executor_id"] for d in daemons(front) if d["this"])
    ran = executors(cluster, DATABASE, [parent, *kids])
    assert len(ran) == 3 and all(e.startswith(f"{front_id}-w") for e in ran.values()), ran


class Reader(threading.Thread):
    """Reads a node's stream on a thread until ``node.settled``."""

    def __init__(self, daemon: Daemon, node_id: str) -> None:
        super().__init__(daemon=True)
        self.got: list[Sse] = []
        self.open = threading.Event()
        self._daemon, self._node_id = daemon, node_id

    def run(self) -> None:
        with (
            self._daemon.client(timeout=60) as client,
            client.stream("GET", f"/v1/nodes/{self._node_id}/events?after=0") as response,
        ):
            assert response.status_code == 200, response.read()
            self.open.set()
            for record in records(response):
                if record.event == ":":
                    continue
                self.got.append(record)
                if record.event == "node.settled":
                    return


def logged(events: list[Sse]) -> list[tuple[int, str]]:
    return [(e.seq, e.event) for e in events if e.event != "node.output_text.delta"]


def test_a_stream_on_the_front_follows_a_node_on_a_worker(
    front: Daemon, client: httpx.Client, cluster: pg.Cluster, tmp_path: Path
) -> None:
    steps = [
        {"text": "Let me check the time.", "tool_calls": [TIME], "delay": 1.0},
        {"text": "And once more.", "tool_calls": [TIME], "delay": 0.3},
        {"text": "It is noon, twice.", "delay": 0.3},
    ]
    model = write_script(tmp_path, "three-turns", steps)
    node_id = create(client, prompt="Go.", model=model)["node_id"]
    reader = Reader(front, node_id)
    reader.start()
    reader.join(60)
    assert not reader.is_alive()
    seen = logged(reader.got)
    with cluster.connect(DATABASE) as conn:
        rows = conn.execute(
            "SELECT sequence_number, type FROM heron_events WHERE node_id = %s "
            "ORDER BY sequence_number",
            (node_id,),
        ).fetchall()
    # Every logged event once, in order (the reader opened at once: it had them all).
    assert seen == [(int(s), str(t)) for s, t in rows]
    assert [t for _, t in seen].count("node.tool_call.completed") == 2
    assert seen[-1][1] == "node.settled"
    assert executors(cluster, DATABASE, [node_id])[node_id].rsplit("-", 1)[1] in ("w1", "w2")


def test_interrupt_and_close_through_the_front_reach_a_run_on_a_worker(
    client: httpx.Client, cluster: pg.Cluster, tmp_path: Path
) -> None:
    model = write_script(tmp_path, "slow", [SLOW, "Back again."])
    node_id = create(client, prompt="Go.", model=model)["node_id"]
    eventually(lambda: pg.logged_count(cluster, DATABASE, node_id, "node.turn.started"), timeout=30)
    answer = client.post(f"/v1/nodes/{node_id}/interrupt")
    assert answer.status_code == 200 and answer.json()["status"] == "interrupted", answer.text
    other = create(client, prompt="Go.", model=write_script(tmp_path, "slower", [SLOW]))
    eventually(
        lambda: pg.logged_count(cluster, DATABASE, other["node_id"], "node.turn.started"),
        timeout=30,
    )
    closed = client.post(f"/v1/nodes/{other['node_id']}/close", json={"reason": "enough"})
    assert closed.status_code == 200 and closed.json()["status"] == "cancelled", closed.text
    # A message through the front wakes the interrupted node on a worker; it finishes.
    woke = client.post(f"/v1/nodes/{node_id}/messages", json={"body": "Go on."})
    assert woke.status_code == 202, woke.text
    closed = client.post(f"/v1/nodes/{node_id}/close")
    assert closed.status_code == 200 and closed.json()["status"] == "cancelled", closed.text


def test_a_killed_worker_is_started_again_and_its_runs_finish(
    cluster: pg.Cluster, tmp_path: Path
) -> None:
    database = "heron_worker_kill"
    url = cluster.create_database(database)
    home = tmp_path / "home"
    # Two runs per worker: the four nodes are two on each.
    front = Daemon(home, env(url, home, HERON_MAX_RUNS="2")).start("--workers", "2")
    slow = [{"tool_calls": [TIME]}, {"text": "done", "delay": 60}]
    model = write_script(tmp_path, "slow", slow)
    try:
        workers = {w["executor_id"]: w for w in workers_up(front)}
        kid_model = write_script(tmp_path, "kid", [{"text": "kid done", "delay": 60}])
        steps = [{"tool_calls": [spawn("kid", kid_model)]}, "spawned", "heard back"]
        parent_model = write_script(tmp_path, "parent", steps)
        with front.client() as client:
            # First, a child started by its parent's run in the parent's worker: the victim.
            parent = create(client, prompt="x", model=parent_model, mode="orchestrator")
            parent = parent["node_id"]
            kid = children(client, parent, 1)["kid"]["node_id"]
            eventually(
                lambda: pg.logged_count(cluster, database, kid, "node.turn.started"), timeout=30
            )
            victim = executors(cluster, database, [parent])[parent]
            assert executors(cluster, database, [kid])[kid] == victim
            wait_status(client, parent, "dormant")  # its run ended: its place is free
            running = [create(client, prompt="x", model=model)["node_id"] for _ in range(4)]
            for node_id in running:
                eventually(
                    lambda n=node_id: (
                        pg.logged_count(cluster, database, n, "node.turn.started") >= 2
                    ),
                    timeout=60,
                )
            ran = executors(cluster, database, running)
            os.kill(workers[victim]["pid"], signal.SIGKILL)
            write_script(tmp_path, "slow", [{"tool_calls": [TIME]}, {"text": "done", "delay": 0}])
            write_script(tmp_path, "kid", ["kid done"])
            again = eventually(
                lambda: next(d for d in daemons(front) if d["executor_id"] == victim),
                lambda d: d["alive"] and d["pid"] != workers[victim]["pid"],
                timeout=60,
                what="the killed worker started again",
            )
            assert again["role"] == "worker"
            for node_id in running:
                poll = wait_settled(client, node_id, timeout=90)
                assert poll["outcome"]["output_text"] == "done"
            assert wait_settled(client, kid, timeout=90)["outcome"]["output_text"] == "kid done"
            assert wait_status(client, parent, "completed", timeout=60)
        with cluster.connect(database) as conn:
            row = conn.execute(
                "SELECT queue_name FROM dbos.workflow_status WHERE workflow_uuid = %s",
                (f"heron:{kid}:1",),
            ).fetchone()
        assert row is not None and row[0] == "heron.now"  # not DBOS's own queue (the front's)
        assert (
            pg.logged_count(cluster, database, kid, "node.turn.started") == 2
        )  # the cut-off turn again
        killed = [n for n in running if ran[n] == victim]
        assert killed
        for node_id in running:
            # The first turn and its tool call were not asked again: only the cut-off turn.
            cut = node_id in killed
            assert pg.logged_count(cluster, database, node_id, "node.turn.completed") == 2
            assert pg.logged_count(cluster, database, node_id, "node.tool_call.started") == 1
            assert pg.logged_count(cluster, database, node_id, "node.turn.started") == (
                3 if cut else 2
            )
            assert pg.logged_count(cluster, database, node_id, "node.settled") == 1
        front_id = (home / "executor-id").read_text().strip()
        finished = executors(cluster, database, [*running, kid])
        assert all(e.startswith(f"{front_id}-w") for e in finished.values())
    finally:
        front.stop()
    # The front's stop stopped its workers too.
    assert all(not d["alive"] for d in _rows(cluster, database))


def test_workers_stop_when_their_front_is_killed(cluster: pg.Cluster, tmp_path: Path) -> None:
    url = cluster.create_database("heron_front_kill")
    home = tmp_path / "home"
    front = Daemon(home, env(url, home))
    front.start("--workers", "2")
    try:
        pids = [w["pid"] for w in workers_up(front)]
        front.kill()  # nobody left to stop them: they stop by themselves
        for pid in pids:
            eventually(lambda p=pid: not _alive(p), timeout=30, what=f"worker pid {pid} exiting")
        # Started again, the daemon's workers come back under the same executor ids.
        front.start()
        again = sorted(w["executor_id"] for w in workers_up(front))
        front_id = (home / "executor-id").read_text().strip()
        assert again == [f"{front_id}-w1", f"{front_id}-w2"]
    finally:
        front.stop()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _rows(cluster: pg.Cluster, database: str) -> list[dict[str, Any]]:
    with cluster.connect(database) as conn:
        rows = conn.execute("SELECT executor_id, stopped_at FROM heron_daemons").fetchall()
    return [{"executor_id": e, "alive": s is None} for e, s in rows]


def test_workers_on_sqlite_are_refused(tmp_path: Path) -> None:
    environment = {**os.environ, "HERON_HOME": str(tmp_path / "home")}
    environment.pop("HERON_DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "-m", "heron", "daemon", "--workers", "2"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "--workers needs PostgreSQL" in done.stderr
    assert not (tmp_path / "home" / "heron.sock").exists()
