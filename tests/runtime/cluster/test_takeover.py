"""Daemons sharing one PostgreSQL database: they list each other, and when one is killed
the other takes over its runs within the bound, changing no settled outcome and asking no
finished model turn again."""

from __future__ import annotations

import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from tests.support import pg
from tests.support.crons import cron_nodes, make, wait_fired
from tests.support.daemon import Daemon, wait_settled, wait_status, write_script
from tests.support.polling import eventually

from heron._core.version import __version__
from heron.runtime.daemon import SCHEMAS
from heron.runtime.db import daemons
from heron.runtime.db._database import create_engine, migrate
from heron.runtime.nodes._cluster import DEAD_AFTER, _gone, claim_recovery

TIME = {"name": "get-current-time", "arguments": {}}
HEARTBEAT = 1.0
"""The daemons' heartbeat in these tests (seconds): the bound is three of them."""


def executor_of(cluster: pg.Cluster, database: str, workflow_id: str) -> str:
    with cluster.connect(database) as conn:
        row = conn.execute(
            "SELECT executor_id FROM dbos.workflow_status WHERE workflow_uuid = %s",
            (workflow_id,),
        ).fetchone()
    assert row is not None
    return str(row[0])


def status(daemon: Daemon) -> dict[str, Any]:
    with daemon.client() as client:
        body: dict[str, Any] = client.get("/v1/status").json()
    return body


def outcomes(daemon: Daemon) -> dict[str, Any]:
    """Every settled node's outcome, by node id."""
    with daemon.client() as client:
        found = client.get("/v1/nodes", params={"status": "completed"}).json()
        return {n["node_id"]: client.get(f"/v1/nodes/{n['node_id']}/outcome").json() for n in found}


@pytest.mark.slow
def test_a_killed_daemons_runs_are_finished_by_the_others(
    cluster: pg.Cluster, tmp_path: Path
) -> None:
    database = "heron_takeover"
    url = cluster.create_database(database)
    default = write_script(tmp_path, "default", ["Ticked."])
    env = {"HERON_DATABASE_URL": url, "HERON_PROVIDER": default, "HERON_HEARTBEAT": "1"}
    a, b, c = (Daemon(tmp_path / name, env) for name in ("a", "b", "c"))
    everyone = (a, b, c)
    slow = [{"tool_calls": [TIME]}, {"text": "done", "delay": 60}]
    model = write_script(tmp_path, "slow", slow)
    quick = write_script(tmp_path, "quick", ["Quick."])
    try:
        a.start()
        with a.client() as client:
            settled = client.post("/v1/nodes", json={"prompt": "x", "model": quick}).json()
            wait_settled(client, settled["node_id"])
            # Created before the others start, so their runs are a's: each is in its slow
            # second turn when a is killed.
            running = [
                client.post("/v1/nodes", json={"prompt": "x", "model": model}).json()["node_id"]
                for _ in range(4)
            ]
            # A resident root that answered, dormant: its deadline is set before the kill.
            body = {"prompt": "x", "root_lifecycle": "resident", "model": quick}
            resident = client.post("/v1/nodes", json=body).json()["node_id"]
            wait_status(client, resident, "dormant")
        for node_id in running:
            eventually(
                lambda n=node_id: pg.logged_count(cluster, database, n, "node.turn.started") >= 2
            )
        b.start()
        c.start()

        # Each lists all three, knows which one it is, and sees all alive.
        ids: dict[Daemon, str] = {}
        for daemon in everyone:
            found = status(daemon)["daemons"]
            assert len(found) == 3 and all(d["alive"] for d in found)
            assert daemon.process is not None
            (me,) = [d for d in found if d["this"]]
            assert me["pid"] == daemon.process.pid and me["home"] == str(daemon.home)
            ids[daemon] = me["executor_id"]
        assert len(set(ids.values())) == 3
        assert [d["executor_id"] for d in status(b)["daemons"]] == [ids[d] for d in everyone]
        eventually(
            lambda: next(d for d in status(b)["daemons"] if d["executor_id"] == ids[a]),
            lambda d: d["running"] == 4,
            what="a's heartbeat counting its four runs",
        )
        # Crons fire once across the daemons, before and after the kill.
        with b.client() as client:
            cron = make(client, schedule="* * * * * *", template={"prompt": "Tick."})
        for daemon in everyone:
            with daemon.client() as client:
                client.post("/v1/crons/poke").raise_for_status()
        with a.client() as client:
            wait_fired(client, cron["cron_id"], 2)
            # A deadline only a keeps, passing after the kill.
            node = client.patch(f"/v1/nodes/{resident}/config", json={"deadline": "8s"}).json()
        before = outcomes(a)
        assert settled["node_id"] in before
        a.kill()
        killed_at = time.time()
        assert datetime.fromisoformat(node["deadline_at"]).timestamp() > killed_at
        write_script(tmp_path, "slow", [{"tool_calls": [TIME]}, {"text": "done", "delay": 0}])
        gone = eventually(
            lambda: next(d for d in status(b)["daemons"] if d["executor_id"] == ids[a]),
            lambda d: not d["alive"] and d["recovered_by"] is not None,
            timeout=30,
            what="b or c taking over a's runs",
        )
        assert gone["recovered_by"] in (ids[b], ids[c])
        with b.client() as client:
            for node_id in running:
                poll = wait_settled(client, node_id, timeout=60)
                assert poll["outcome"]["output_text"] == "done"
            # The deadline a had armed fires in the daemon that took a over.
            assert wait_status(client, resident, "cancelled", timeout=40)["status"] == "cancelled"
            client.post(f"/v1/crons/{cron['cron_id']}/pause").raise_for_status()
            fired = wait_fired(client, cron["cron_id"], 3)
            ticks = Counter(f["tick"] for f in fired["recent_firings"])
            assert max(ticks.values()) == 1
            nodes = cron_nodes(client, cron["cron_id"])
            assert len({n["node_id"] for n in nodes}) == len(nodes) == fired["fire_count"]
        after = outcomes(c)
        assert {n: after[n] for n in before} == before  # no settled outcome changed

        # Taken over within the bound: silent DEAD_AFTER heartbeats, noticed at the next
        # look (one heartbeat later), with a second's slack for a busy machine.
        with cluster.connect(database) as conn:
            row = conn.execute(
                "SELECT heartbeat_at, recovered_at FROM heron_daemons WHERE executor_id = %s",
                (ids[a],),
            ).fetchone()
        assert row is not None
        assert row[1] - row[0] <= (DEAD_AFTER + 1) * HEARTBEAT + 1.0
        for node_id in running:
            # The first turn and its tool call were not asked again: only the cut-off turn.
            assert pg.logged_count(cluster, database, node_id, "node.turn.completed") == 2
            assert pg.logged_count(cluster, database, node_id, "node.tool_call.started") == 1
            assert pg.logged_count(cluster, database, node_id, "node.turn.started") == 3
            assert pg.logged_count(cluster, database, node_id, "node.settled") == 1
            assert executor_of(cluster, database, f"heron:{node_id}:1") in (ids[b], ids[c])

        # a comes back under its own executor id, alive again.
        a.start()
        again = next(d for d in status(c)["daemons"] if d["executor_id"] == ids[a])
        assert again["alive"] and again["recovered_by"] is None
        assert next(d for d in status(a)["daemons"] if d["this"])["executor_id"] == ids[a]
    finally:
        for daemon in everyone:
            daemon.stop()


@pytest.mark.slow
def test_a_cleanly_stopped_daemons_runs_are_taken_at_once(
    cluster: pg.Cluster, tmp_path: Path
) -> None:
    database = "heron_handover"
    url = cluster.create_database(database)
    default = write_script(tmp_path, "default", ["default"])
    beat = 3.0
    env = {"HERON_DATABASE_URL": url, "HERON_PROVIDER": default, "HERON_HEARTBEAT": str(beat)}
    a, b = (Daemon(tmp_path / name, env) for name in ("a", "b"))
    model = write_script(tmp_path, "slow", [{"text": "done", "delay": 60}])
    try:
        a.start()
        with a.client() as client:
            node_id = client.post("/v1/nodes", json={"prompt": "x", "model": model}).json()
            node_id = node_id["node_id"]
        eventually(lambda: pg.logged_count(cluster, database, node_id, "node.turn.started"))
        b.start()
        a.stop()
        write_script(tmp_path, "slow", [{"text": "done", "delay": 0}])
        with b.client() as client:
            poll = wait_settled(client, node_id, timeout=60)
        assert poll["outcome"]["output_text"] == "done"
        (other,) = [d for d in status(b)["daemons"] if not d["this"]]
        assert other["stopped_at"] is not None and not other["alive"]
        assert other["recovered_by"] is not None
        # Taken at b's next look, well before the bound a silent daemon is given.
        with cluster.connect(database) as conn:
            row = conn.execute(
                "SELECT stopped_at, recovered_at FROM heron_daemons WHERE stopped_at IS NOT NULL"
            ).fetchone()
        assert row is not None and row[1] - row[0] <= beat + 1.0 < DEAD_AFTER * beat
    finally:
        for daemon in (a, b):
            daemon.stop()


def test_of_daemons_claiming_one_dead_daemon_at_once_exactly_one_wins(
    cluster: pg.Cluster,
) -> None:
    engine = create_engine(cluster.create_database("heron_claims"))
    try:
        migrate(engine, SCHEMAS)
        with engine.begin() as conn:
            conn.execute(
                daemons.insert().values(
                    executor_id="dead",
                    host="h",
                    pid=1,
                    home="/h",
                    socket="/h/s",
                    version=__version__,
                    started_at=0.0,
                    heartbeat_at=1.0,
                    running=2,
                )
            )
        claimers = [f"live-{i}" for i in range(8)]
        barrier = threading.Barrier(len(claimers))

        def claim(me: str) -> bool:
            barrier.wait()
            with engine.begin() as conn:
                return claim_recovery(conn, "dead", me, 3.0) is not None

        with ThreadPoolExecutor(len(claimers)) as pool:
            won = list(pool.map(claim, claimers))
        assert won.count(True) == 1
        with engine.begin() as conn:
            row = dict(conn.execute(sa.select(daemons)).one()._mapping)
        assert row["recovered_by"] == claimers[won.index(True)]
        winner = claimers[won.index(True)]
        with engine.begin() as conn:
            # A claim its claimer did not finish (it died meanwhile) passes to whoever takes
            # the claimer over.
            alone = dict(row, executor_id=winner, heartbeat_at=2.0, recovered_by=None)
            conn.execute(daemons.insert().values(alone))
            assert claim_recovery(conn, winner, "last", 3.0) is not None
            assert conn.execute(sa.select(daemons.c.recovered_by)).scalars().all() == ["last"] * 2
            assert sorted(_gone(conn, "last", 3.0)) == sorted(["dead", winner])
            # A daemon that beat a moment ago is not claimed, whatever the claimer thinks.
            now = datetime.now().timestamp()
            conn.execute(daemons.update().values(recovered_by=None, heartbeat_at=now))
            assert claim_recovery(conn, "dead", "live-0", 3.0) is None
            assert _gone(conn, "live-0", 3.0) == []
    finally:
        engine.dispose()


@pytest.mark.slow
def test_a_daemon_that_finds_itself_taken_over_stops(cluster: pg.Cluster, tmp_path: Path) -> None:
    url = cluster.create_database("heron_fenced")
    default = write_script(tmp_path, "default", ["default"])
    env = {"HERON_DATABASE_URL": url, "HERON_PROVIDER": default, "HERON_HEARTBEAT": "0.5"}
    daemon = Daemon(tmp_path / "home", env).start()
    try:
        # As if it had missed its heartbeats and another daemon had claimed its runs.
        with cluster.connect("heron_fenced") as conn:
            conn.execute("UPDATE heron_daemons SET recovered_by = 'someone-else'")
        assert daemon.process is not None
        process = daemon.process
        assert eventually(lambda: process.poll() is not None, what="the daemon stopping")
        assert process.returncode == 0  # a clean stop
        assert "another daemon took over its runs: stopping" in daemon.log.read_text()
    finally:
        daemon.stop()
