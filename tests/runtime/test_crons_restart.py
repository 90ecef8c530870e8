"""Crons across daemon restarts: a tick fires once, a crash between claim and create is
repaired, ticks missed while down coalesce into one firing."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from .conftest import Daemon, wait_settled, write_script
from .test_crons import cron_nodes, make, stamp, wait_fired


@pytest.fixture(scope="module")
def home_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """A daemon of this module's own: its tests stop and restart it."""
    home = tmp_path_factory.mktemp("heron-crons-home")
    model = write_script(home, "default", ["Done on schedule."])
    process = Daemon(home, {"HERON_PROVIDER": model}).start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def api(home_daemon: Daemon) -> Iterator[httpx.Client]:
    with home_daemon.client() as client:
        yield client


def db(daemon: Daemon) -> sqlite3.Connection:
    return sqlite3.connect(daemon.home / "heron.db")


def restart(daemon: Daemon, *, kill: bool) -> None:
    daemon.kill() if kill else daemon.stop()
    daemon.start()


@pytest.mark.slow
class TestRestart:
    def test_a_fired_tick_does_not_fire_again_after_a_restart(
        self, home_daemon: Daemon, api: httpx.Client
    ) -> None:
        # A tick two to three seconds from now, then not again for a minute.
        second = (int(time.time()) + 3) % 60
        cron = make(api, schedule=f"{second} * * * * *", template={"prompt": "Once."})
        cron_id = cron["cron_id"]
        fired = wait_fired(api, cron_id, 1)
        tick = fired["recent_firings"][0]["tick"]
        restart(home_daemon, kill=True)
        with home_daemon.client() as client:
            assert client.post("/v1/crons/poke").json()["fired"] == 0
            after = client.get(f"/v1/crons/{cron_id}").json()
            assert after["fire_count"] == 1
            assert [f["tick"] for f in after["recent_firings"]] == [tick]
            assert after["next_fire_at"] == fired["next_fire_at"]
            assert stamp(after["next_fire_at"]) - stamp(tick) == 60
            nodes = cron_nodes(client, cron_id)
            assert [n["node_id"] for n in nodes] == [fired["last_node_id"]]
            client.delete(f"/v1/crons/{cron_id}")

    def test_claims_a_crash_left_without_their_node_are_repaired_at_the_next_start(
        self, home_daemon: Daemon, api: httpx.Client
    ) -> None:
        lost = make(api, schedule="@yearly", name="repair", template={"prompt": "Repaired."})
        made = make(api, schedule="@yearly", template={"prompt": "x"}, paused=True)
        made_node = api.post(f"/v1/crons/{made['cron_id']}/run").json()["node_id"]
        gone = make(api, schedule="@yearly", template={"prompt": "x"})
        api.delete(f"/v1/crons/{gone['cron_id']}").raise_for_status()
        home_daemon.kill()
        lost_node = f"{lost['cron_id']}.20260101T000000"
        gone_node = f"{gone['cron_id']}.20260101T000000"
        tick = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
        insert = (
            "INSERT INTO heron_cron_firings (cron_id, tick, node_id, manual, fired_at, status)"
            " VALUES (?, ?, ?, 0, ?, 'claimed')"
        )
        with db(home_daemon) as conn:
            # A SIGKILL right after the claim: the firing, and no node.
            conn.execute(insert, (lost["cron_id"], tick, lost_node, time.time()))
            # A SIGKILL after the create, before the firing was marked done.
            conn.execute(
                "UPDATE heron_cron_firings SET status = 'claimed' WHERE node_id = ?", (made_node,)
            )
            # The cron was deleted between its claim and the create.
            conn.execute(insert, (gone["cron_id"], tick, gone_node, time.time()))
        home_daemon.start()
        with home_daemon.client() as client:
            node = client.get(f"/v1/nodes/{lost_node}")
            assert node.status_code == 200, node.text
            assert node.json()["cron_id"] == lost["cron_id"] and node.json()["name"] == "repair"
            assert wait_settled(client, lost_node)["outcome"]["output_text"] == "Done on schedule."
            firing = client.get(f"/v1/crons/{lost['cron_id']}").json()["recent_firings"][0]
            assert firing["status"] == "created" and firing["node_id"] == lost_node
            firing = client.get(f"/v1/crons/{made['cron_id']}").json()["recent_firings"][0]
            assert firing["status"] == "created" and firing["error"] is None
            assert [n["node_id"] for n in cron_nodes(client, made["cron_id"])] == [made_node]
            assert client.get(f"/v1/nodes/{gone_node}").status_code == 404
            for cron in (lost, made):
                client.delete(f"/v1/crons/{cron['cron_id']}")
        with db(home_daemon) as conn:
            status: Any = conn.execute(
                "SELECT status FROM heron_cron_firings WHERE cron_id = ?", (gone["cron_id"],)
            ).fetchone()
        assert status == ("failed",)

    def test_ticks_missed_while_down_fire_once_for_the_latest(
        self, home_daemon: Daemon, api: httpx.Client
    ) -> None:
        cron = make(api, schedule="0 * * * *", template={"prompt": "Hourly."})
        cron_id = cron["cron_id"]
        home_daemon.stop()
        now = time.time()
        # Down for five hours: five hourly ticks were missed.
        with db(home_daemon) as conn:
            conn.execute(
                "UPDATE heron_crons SET next_fire_at = ? WHERE cron_id = ?",
                ((now // 3600 - 4) * 3600, cron_id),
            )
        home_daemon.start()
        with home_daemon.client() as client:
            fired = wait_fired(client, cron_id, 1)
            assert fired["fire_count"] == 1
            (firing,) = fired["recent_firings"]
            assert stamp(firing["tick"]) == (now // 3600) * 3600  # the latest missed tick
            assert stamp(fired["next_fire_at"]) == (now // 3600 + 1) * 3600
            assert len(cron_nodes(client, cron_id)) == 1
            client.delete(f"/v1/crons/{cron_id}")
