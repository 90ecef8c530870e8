"""Crons across a daemon crash: a tick fires once, a crash between claim and create is
repaired, ticks missed while down coalesce into one firing.

Every scenario is set up on one daemon, which is then SIGKILLed, its database edited
as each scenario needs, and started again: one restart (the slow part) serves all the
tests, which each check their own scenario afterwards.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from tests.support.crons import cron_nodes, make, stamp, wait_fired
from tests.support.daemon import Daemon, wait_settled, write_script

pytestmark = pytest.mark.slow

INSERT = (
    "INSERT INTO heron_cron_firings (cron_id, tick, node_id, manual, fired_at, status)"
    " VALUES (?, ?, ?, 0, ?, 'claimed')"
)


@dataclass
class Restarted:
    """The daemon after the crash and restart, and what each scenario left before it."""

    daemon: Daemon
    fired: dict[str, Any]
    """A cron that fired one tick just before the crash (as it was then)."""
    lost: dict[str, Any]
    """A cron whose claimed tick got no node: the crash came right after the claim."""
    made: dict[str, Any]
    made_node: str
    """A cron whose run made its node, the firing not yet marked done at the crash."""
    gone: dict[str, Any]
    """A cron deleted between its claim and the create."""
    hourly: dict[str, Any]
    down_at: float
    """A cron whose five latest hourly ticks came while the daemon was down."""


def db(daemon: Daemon) -> sqlite3.Connection:
    return sqlite3.connect(daemon.home / "heron.db")


@pytest.fixture(scope="module")
def restarted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Restarted]:
    home = tmp_path_factory.mktemp("heron-crons-home")
    model = write_script(home, "default", ["Done on schedule."])
    daemon = Daemon(home, {"HERON_PROVIDER": model}).start()
    try:
        with daemon.client() as api:
            # A tick two to three seconds from now, then not again for a minute.
            second = (int(time.time()) + 3) % 60
            cron = make(api, schedule=f"{second} * * * * *", template={"prompt": "Once."})
            lost = make(api, schedule="@yearly", name="repair", template={"prompt": "Repaired."})
            made = make(api, schedule="@yearly", template={"prompt": "x"}, paused=True)
            made_node = api.post(f"/v1/crons/{made['cron_id']}/run").json()["node_id"]
            gone = make(api, schedule="@yearly", template={"prompt": "x"})
            api.delete(f"/v1/crons/{gone['cron_id']}").raise_for_status()
            hourly = make(api, schedule="0 * * * *", template={"prompt": "Hourly."})
            fired = wait_fired(api, cron["cron_id"], 1)
        daemon.kill()
        tick = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
        down_at = time.time()
        with db(daemon) as conn:
            # A SIGKILL right after the claim: the firing, and no node.
            conn.execute(
                INSERT, (lost["cron_id"], tick, f"{lost['cron_id']}.20260101T000000", down_at)
            )
            # A SIGKILL after the create, before the firing was marked done.
            conn.execute(
                "UPDATE heron_cron_firings SET status = 'claimed' WHERE node_id = ?", (made_node,)
            )
            # The cron was deleted between its claim and the create.
            conn.execute(
                INSERT, (gone["cron_id"], tick, f"{gone['cron_id']}.20260101T000000", down_at)
            )
            # Down for five hours: five hourly ticks were missed.
            conn.execute(
                "UPDATE heron_crons SET next_fire_at = ? WHERE cron_id = ?",
                ((down_at // 3600 - 4) * 3600, hourly["cron_id"]),
            )
        daemon.start()
        yield Restarted(daemon, fired, lost, made, made_node, gone, hourly, down_at)
    finally:
        daemon.stop()


@pytest.fixture
def client(restarted: Restarted) -> Iterator[httpx.Client]:
    with restarted.daemon.client() as client:
        yield client


def test_a_fired_tick_does_not_fire_again_after_a_restart(
    restarted: Restarted, client: httpx.Client
) -> None:
    fired = restarted.fired
    cron_id, tick = fired["cron_id"], fired["recent_firings"][0]["tick"]
    poked = client.post("/v1/crons/poke").json()
    assert cron_id not in [f["cron_id"] for f in poked["firings"]]
    after = client.get(f"/v1/crons/{cron_id}").json()
    assert after["fire_count"] == 1
    assert [f["tick"] for f in after["recent_firings"]] == [tick]
    assert after["next_fire_at"] == fired["next_fire_at"]
    assert stamp(after["next_fire_at"]) - stamp(tick) == 60
    nodes = cron_nodes(client, cron_id)
    assert [n["node_id"] for n in nodes] == [fired["last_node_id"]]


def test_claims_a_crash_left_without_their_node_are_repaired_at_the_next_start(
    restarted: Restarted, client: httpx.Client
) -> None:
    lost, made, gone = restarted.lost, restarted.made, restarted.gone
    lost_node = f"{lost['cron_id']}.20260101T000000"
    node = client.get(f"/v1/nodes/{lost_node}")
    assert node.status_code == 200, node.text
    assert node.json()["cron_id"] == lost["cron_id"] and node.json()["name"] == "repair"
    assert wait_settled(client, lost_node)["outcome"]["output_text"] == "Done on schedule."
    firing = client.get(f"/v1/crons/{lost['cron_id']}").json()["recent_firings"][0]
    assert firing["status"] == "created" and firing["node_id"] == lost_node
    firing = client.get(f"/v1/crons/{made['cron_id']}").json()["recent_firings"][0]
    assert firing["status"] == "created" and firing["error"] is None
    assert [n["node_id"] for n in cron_nodes(client, made["cron_id"])] == [restarted.made_node]
    assert client.get(f"/v1/nodes/{gone['cron_id']}.20260101T000000").status_code == 404
    with db(restarted.daemon) as conn:
        status: Any = conn.execute(
            "SELECT status FROM heron_cron_firings WHERE cron_id = ?", (gone["cron_id"],)
        ).fetchone()
    assert status == ("failed",)


def test_ticks_missed_while_down_fire_once_for_the_latest(
    restarted: Restarted, client: httpx.Client
) -> None:
    cron_id = restarted.hourly["cron_id"]
    fired = wait_fired(client, cron_id, 1)
    assert fired["fire_count"] == 1
    (firing,) = fired["recent_firings"]
    hour = stamp(firing["fired_at"]) // 3600 * 3600
    assert stamp(firing["tick"]) == hour  # the latest missed tick (four before it: none)
    assert stamp(fired["next_fire_at"]) == hour + 3600
    assert len(cron_nodes(client, cron_id)) == 1
