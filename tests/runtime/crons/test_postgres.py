"""Crons on PostgreSQL: two daemons sharing one database race for every tick, and each
tick still makes exactly one node."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from tests.support import pg
from tests.support.crons import cron_nodes, make, wait_fired
from tests.support.daemon import Daemon, write_script


@pytest.mark.slow
def test_two_daemons_on_one_database_fire_each_tick_once(
    cluster: pg.Cluster, tmp_path: Path
) -> None:
    url = cluster.create_database("heron_crons")
    daemons: list[Daemon] = []
    try:
        for name in ("a", "b"):
            home = tmp_path / name
            home.mkdir()
            model = write_script(home, "default", ["Ticked."])
            daemon = Daemon(home, {"HERON_DATABASE_URL": url, "HERON_PROVIDER": model})
            daemons.append(daemon.start())
        with daemons[0].client() as first, daemons[1].client() as second:
            cron = make(first, schedule="* * * * * *", template={"prompt": "Tick."})
            cron_id = cron["cron_id"]
            # The second daemon learns of the cron within its longest sleep; poke it now.
            second.post("/v1/crons/poke").raise_for_status()
            wait_fired(second, cron_id, 4)
            first.post(f"/v1/crons/{cron_id}/pause").raise_for_status()
            cron = wait_fired(first, cron_id, 4)  # and no firing still being made
            ticks = Counter(f["tick"] for f in cron["recent_firings"])
            assert ticks and max(ticks.values()) == 1
            nodes = cron_nodes(second, cron_id)
            assert len(nodes) == cron["fire_count"] >= 4
            assert len({n["node_id"] for n in nodes}) == len(nodes)
            assert all(f["status"] == "created" for f in cron["recent_firings"])
    finally:
        for daemon in daemons:
            daemon.stop()
