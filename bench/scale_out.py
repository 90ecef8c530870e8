"""Scale-out on one host: nodes settled per second by ``heron daemon --workers N`` on
PostgreSQL, for N = 1, 2, 3 (and the one-process daemon, ``--workers 0``, for reference).

Starts a throwaway PostgreSQL server (``tests/support/pg.py``); for each N, a fresh
database and home, ``heron daemon --workers N``, and once its workers are alive,
``--nodes`` scripted nodes of ``--turns`` tool-call turns and an answer, created over
``--connections`` concurrent connections to the front's socket. Times every create and
the whole load from the first create to the last node completed. Prints, per N: nodes
settled/s, its ratio to one worker (the issue's goal on 2 cores: 2 workers >= 1.6x one),
and the create p50/p99 under that load.

Run it from the repository root (after ``pip install -e .``)::

    python bench/scale_out.py
    python bench/scale_out.py --nodes 1000 --workers 1 2 3
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.support import pg
from tests.support.daemon import Daemon, write_script

GOAL_TWO_WORKERS = 1.6
"""The issue's goal: two workers settle at least this many times what one does."""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def load(
    daemon: Daemon, cluster: pg.Cluster, database: str, model: str, nodes: int, connections: int
) -> tuple[float, list[float]]:
    """Create the nodes; seconds until all completed, and each create's latency."""
    transport = httpx.AsyncHTTPTransport(uds=str(daemon.socket))
    latencies: list[float] = []
    todo = iter(range(nodes))
    async with httpx.AsyncClient(
        transport=transport, base_url="http://heron", timeout=120
    ) as client:

        async def creator() -> None:
            for _ in todo:
                began = time.perf_counter()
                answer = await client.post("/v1/nodes", json={"prompt": "Go.", "model": model})
                latencies.append(time.perf_counter() - began)
                answer.raise_for_status()

        started = time.perf_counter()
        await asyncio.gather(*(creator() for _ in range(connections)))
        while True:
            with cluster.connect(database) as conn:
                row = conn.execute(
                    "SELECT count(*) FROM heron_nodes WHERE status IN "
                    "('completed', 'failed', 'cancelled')"
                ).fetchone()
            assert row is not None
            if int(row[0]) >= nodes:
                return time.perf_counter() - started, latencies
            await asyncio.sleep(0.05)


def workers_alive(daemon: Daemon, count: int, timeout: float = 120) -> list[int]:
    """The pids of the daemon's workers, once ``count`` of them are alive."""
    deadline = time.monotonic() + timeout
    with daemon.client() as client:
        while time.monotonic() < deadline:
            found = client.get("/v1/status").json()["daemons"]
            pids = [d["pid"] for d in found if d["role"] == "worker" and d["alive"]]
            if len(pids) == count:
                return pids
            time.sleep(0.2)
    raise RuntimeError(f"{count} workers did not come up")


def cpu_seconds(pid: int) -> float:
    """CPU (user and system) a live process has used so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy() -> tuple[float, float]:
    """CPU seconds the whole machine was busy and in all, so far (every process's)."""
    with open("/proc/stat") as f:
        ticks = [int(v) for v in f.readline().split()[1:]]
    idle = ticks[3] + ticks[4]
    hz = os.sysconf("SC_CLK_TCK")
    return (sum(ticks) - idle) / hz, sum(ticks) / hz


def run(cluster: pg.Cluster, work: Path, workers: int, args: argparse.Namespace) -> dict[str, Any]:
    database = f"heron_scale_{workers}"
    url = cluster.create_database(database)
    home = work / f"home-{workers}"
    call = {"name": "get-current-time", "arguments": {"timezone": "UTC"}}
    steps: list[Any] = [{"tool_calls": [call]} for _ in range(args.turns - 1)] + ["Done."]
    model = write_script(work, f"load-{workers}", steps)
    env = {"HERON_DATABASE_URL": url, "HERON_PROVIDER": model, "HERON_WARM_POOL": "0"}
    daemon = Daemon(home, env)
    daemon.start("--workers", str(workers))
    try:
        pids = workers_alive(daemon, workers)
        assert daemon.process is not None
        front = daemon.process.pid
        before = {pid: cpu_seconds(pid) for pid in [front, *pids]}
        busy, total = machine_busy()
        seconds, latencies = asyncio.run(
            load(daemon, cluster, database, model, args.nodes, args.connections)
        )
        used = {pid: cpu_seconds(pid) - was for pid, was in before.items()}
        busy_after, total_after = machine_busy()
    finally:
        daemon.stop()
    return {
        "workers": workers,
        "front_cpu": used[front] / seconds,
        "worker_cpu": [used[pid] / seconds for pid in pids],
        "machine_busy": (busy_after - busy) / (total_after - total),
        "settled_per_s": args.nodes / seconds,
        "create_p50_ms": statistics.median(latencies) * 1000,
        "create_p99_ms": percentile(latencies, 0.99) * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=300)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 1, 2, 3])
    args = parser.parse_args()
    if pg.bin_dir() is None:
        sys.exit("PostgreSQL is not installed (apt-get install postgresql)")
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="heron-scale-") as tmp, pg.cluster() as cluster:
        for workers in args.workers:
            results.append(run(cluster, Path(tmp), workers, args))
            r = results[-1]
            each = ", ".join(f"{c:.0%}" for c in r["worker_cpu"]) or "-"
            print(
                f"--workers {workers}: {r['settled_per_s']:.1f} nodes settled/s, "
                f"create p50 {r['create_p50_ms']:.0f} ms, p99 {r['create_p99_ms']:.0f} ms; "
                f"CPU: front {r['front_cpu']:.0%}, workers {each}, "
                f"machine {r['machine_busy']:.0%} busy ({os.cpu_count()} cores)",
                flush=True,
            )
    one = next((r["settled_per_s"] for r in results if r["workers"] == 1), None)
    print(f"\n{args.nodes} nodes x {args.turns} turns, {args.connections} connections")
    print(f"{'workers':>8} {'settled/s':>10} {'vs 1':>6} {'create p50':>11} {'p99':>8}")
    for r in results:
        ratio = f"{r['settled_per_s'] / one:.2f}x" if one else "-"
        print(
            f"{r['workers']:>8} {r['settled_per_s']:>10.1f} {ratio:>6} "
            f"{r['create_p50_ms']:>9.0f}ms {r['create_p99_ms']:>6.0f}ms"
        )
    two = next((r["settled_per_s"] for r in results if r["workers"] == 2), None)
    if one and two:
        met = "met" if two / one >= GOAL_TWO_WORKERS else "NOT met"
        print(f"goal 2 workers >= {GOAL_TWO_WORKERS}x one: {two / one:.2f}x ({met})")


if __name__ == "__main__":
    main()
