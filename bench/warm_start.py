"""Time to first event, cold create vs ``prefer_warm``, on a real daemon.

Starts a real ``heron daemon`` on a temporary ``HERON_HOME`` (SQLite, the
scripted provider answering in one turn, ``HERON_WARM_POOL`` pre-started nodes
per launch tuple), then alternates ``--samples`` cold creates
(``prefer_warm: false``) with as many warm ones (``prefer_warm: true``, after
one create that seeded the pool for their tuple). Before every measured create,
cold and warm alike, it waits until the pool is quiet (full, every pre-started
node past its ``begin`` step, none being made), so neither kind of create shares
the cores with a refill.

For each create it measures the time from just before ``POST /v1/nodes`` is
sent to the node's first ``node.turn.started`` event, as the daemon stamped it
when publishing (read from the ``heron_events`` table, so the event log's
write-behind does not count), and prints cold and warm side by side: median,
mean, best and worst, and the ratio of the medians. Every create is checked:
warm ones must say ``warm: true``, cold ones ``warm: false``, and every node
must complete.

Run it from the repository root (after ``pip install -e .``)::

    python bench/warm_start.py
    python bench/warm_start.py --samples 50 --pool 4
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from daemon_load import Daemon as Process

WAIT_TIMEOUT = 30.0


class Daemon:
    """A ``heron daemon`` process on its own home, a client on its socket, and its database."""

    def __init__(self, home: Path, provider: str, pool: int) -> None:
        self.process = Process(home, provider, {"HERON_WARM_POOL": str(pool)})
        try:
            asyncio.run(self.process.wait_ready())
        except BaseException:
            self.process.stop()
            raise
        transport = httpx.HTTPTransport(uds=str(self.process.socket))
        self.http = httpx.Client(transport=transport, base_url="http://heron", timeout=60)
        self.db = sqlite3.connect(home / "heron.db", timeout=10)

    def stop(self) -> None:
        """Close the client and the database, and stop the daemon."""
        self.http.close()
        self.db.close()
        self.process.stop()

    def create(self, prefer_warm: bool) -> tuple[float, dict[str, Any]]:
        """Create a node; returns the wall time just before sending, and the node."""
        body = {"prompt": "Say hello.", "prefer_warm": prefer_warm}
        sent = time.time()
        answer = self.http.post("/v1/nodes", json=body)
        if answer.status_code != 201:
            raise SystemExit(f"create failed: {answer.status_code} {answer.text}")
        return sent, answer.json()

    def first_turn_at(self, node_id: str) -> float:
        """When the daemon published the node's first ``node.turn.started``."""
        query = (
            "SELECT created_at FROM heron_events WHERE node_id = ? AND type = 'node.turn.started'"
            " ORDER BY sequence_number LIMIT 1"
        )
        deadline = time.monotonic() + WAIT_TIMEOUT
        while time.monotonic() < deadline:
            row = self.db.execute(query, (node_id,)).fetchone()
            if row is not None:
                return float(row[0])
            time.sleep(0.002)
        raise SystemExit(f"node {node_id} published no node.turn.started")

    def wait_pool(self, size: int) -> None:
        """Wait until the pool is quiet: exactly ``size`` warm nodes, each past its ``begin``
        step, and none being made (a create measured meanwhile would share the cores with
        the refill)."""
        query = (
            "SELECT count(*), count(o.function_name) FROM heron_nodes n"
            " LEFT JOIN operation_outputs o ON o.workflow_uuid = 'heron:' || n.node_id || ':1'"
            " AND o.function_name = 'begin' WHERE n.warm IS NOT NULL"
        )
        deadline = time.monotonic() + WAIT_TIMEOUT
        while time.monotonic() < deadline:
            if self.db.execute(query).fetchone() == (size, size):
                return
            time.sleep(0.005)
        raise SystemExit(f"the warm pool did not settle at {size}")

    def provider(self) -> str:
        """The daemon's default provider, as ``GET /v1/status`` names it."""
        return str(self.http.get("/v1/status").json()["provider"])

    def wait_settled(self, node_id: str) -> str:
        """Long-poll the node's outcome; returns its final status."""
        deadline = time.monotonic() + WAIT_TIMEOUT
        while time.monotonic() < deadline:
            poll = self.http.get(f"/v1/nodes/{node_id}/outcome?wait=5").json()
            if poll["state"] == "settled":
                return str(poll["node_status"])
        raise SystemExit(f"node {node_id} did not settle")


def measure(daemon: Daemon, prefer_warm: bool, pool: int) -> float:
    """One create's milliseconds to its first event (checked to be served as expected)."""
    daemon.wait_pool(pool)  # before cold creates too: both measured on a quiet daemon
    sent, node = daemon.create(prefer_warm)
    if node["warm"] is not prefer_warm:
        raise SystemExit(f"node {node['node_id']}: warm={node['warm']}, wanted {prefer_warm}")
    first = daemon.first_turn_at(node["node_id"])
    status = daemon.wait_settled(node["node_id"])
    if status != "completed":
        raise SystemExit(f"node {node['node_id']} ended {status}")
    return (first - sent) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=30, help="creates of each kind")
    parser.add_argument("--pool", type=int, default=2, help="HERON_WARM_POOL")
    args = parser.parse_args()
    if args.samples < 1 or args.pool < 1:
        raise SystemExit("--samples and --pool must be at least 1")
    with tempfile.TemporaryDirectory(prefix="heron-warm-") as tmp:
        home = Path(tmp)
        script = home / "hello.json"
        script.write_text(json.dumps(["Hello."]))
        daemon = Daemon(home, f"scripted:{script}", args.pool)
        try:
            seed = daemon.create(prefer_warm=True)[1]  # a miss: the pool fills for this tuple
            daemon.wait_settled(seed["node_id"])
            for _ in range(2):  # warm-up: the daemon's first workflows and imports
                measure(daemon, prefer_warm=False, pool=args.pool)
            provider = daemon.provider()
            cold: list[float] = []
            warm: list[float] = []
            for _ in range(args.samples):
                cold.append(measure(daemon, prefer_warm=False, pool=args.pool))
                warm.append(measure(daemon, prefer_warm=True, pool=args.pool))
        finally:
            daemon.stop()
    report(cold, warm, args.pool, provider)


def report(cold: list[float], warm: list[float], pool: int, provider: str) -> None:
    """Print cold and warm figures side by side."""
    print(f"POST /v1/nodes -> first node.turn.started, {len(cold)} creates each")
    print(f"warm pool size {pool} per launch tuple; provider {provider}")
    print(f"{'ms':>10} {'cold':>9} {'warm':>9}")
    rows = [
        ("median", statistics.median),
        ("mean", statistics.fmean),
        ("best", min),
        ("worst", max),
    ]
    for name, figure in rows:
        print(f"{name:>10} {figure(cold):9.2f} {figure(warm):9.2f}")
    ratio = statistics.median(cold) / statistics.median(warm)
    print(f"warm is {ratio:.1f}x faster to first event (median cold / median warm)")


if __name__ == "__main__":
    main()
