"""Crons: how late a tick fires, and what computing the next tick costs.

Starts a real ``heron daemon`` on a temporary ``HERON_HOME`` (scripted default
model), creates ``--crons`` crons firing every second (``* * * * * *``), lets
them fire for ``--seconds`` seconds, pauses them and prints beside each goal:

- firing lag p50 / p99: the firing's ``fired_at`` (the claim) minus its tick;
- node lag p50 / p99: the created node's ``created_at`` minus its tick;
- firings per tick: how many of the expected ticks fired (coalescing or a slow
  loop shows as fewer), and that no tick fired twice;
- the cost of :meth:`Schedule.next_after` for a few expressions (µs per call),
  which the scheduler runs once per firing and on every resume and poke.

Run it from the repository root (after ``pip install -e .``)::

    python bench/cron_firing.py                     # 5 crons for 10 s
    python bench/cron_firing.py --crons 20 --seconds 20
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from heron.runtime.crons._schedule import parse_schedule, parse_timezone

GOAL_LAG_MS = 50.0
"""The tick-to-claim lag aimed at (p99), on an idle machine."""


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def stamp(value: str) -> float:
    return datetime.fromisoformat(value).timestamp()


def start_daemon(home: Path) -> subprocess.Popen[bytes]:
    script = home / "default.json"
    script.write_text(json.dumps(["Ticked."]))
    env = {**os.environ, "HERON_HOME": str(home), "HERON_PROVIDER": f"scripted:{script}"}
    env.pop("HERON_SOCKET", None)
    with open(home / "daemon.log", "ab") as log:  # the daemon keeps its own copy
        process = subprocess.Popen(
            [sys.executable, "-m", "heron", "daemon"], env=env, stdout=log, stderr=log
        )
    deadline = time.monotonic() + 60
    while not (home / "heron.sock").exists():
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the daemon did not start:\n{(home / 'daemon.log').read_text()}")
        time.sleep(0.05)
    return process


def run_daemon(crons: int, seconds: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        process = start_daemon(home)
        transport = httpx.HTTPTransport(uds=str(home / "heron.sock"), retries=20)
        try:
            with httpx.Client(transport=transport, base_url="http://heron", timeout=60) as client:
                body = {"schedule": "* * * * * *", "template": {"prompt": "Tick."}}
                ids = [client.post("/v1/crons", json=body).json()["cron_id"] for _ in range(crons)]
                began = time.time()
                while time.time() < began + seconds:
                    time.sleep(0.1)
                for cron_id in ids:
                    client.post(f"/v1/crons/{cron_id}/pause")
                firing_lag: list[float] = []
                node_lag: list[float] = []
                fired = 0
                twice = 0
                nodes = {n["node_id"]: n for n in client.get("/v1/nodes").json()}
                for cron_id in ids:
                    cron = client.get(f"/v1/crons/{cron_id}").json()
                    fired += cron["fire_count"]
                    # The latest 10 firings are shown; enough for the lag figures.
                    firings = cron["recent_firings"]
                    twice += sum(n - 1 for n in Counter(f["tick"] for f in firings).values())
                    for firing in firings:
                        tick = stamp(firing["tick"])
                        firing_lag.append((stamp(firing["fired_at"]) - tick) * 1000)
                        node = nodes.get(firing["node_id"])
                        if node is not None:
                            node_lag.append((stamp(node["created_at"]) - tick) * 1000)
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)
    return {
        "firing_lag": firing_lag,
        "node_lag": node_lag,
        "fired": fired,
        "expected": int(seconds) * crons,
        "twice": twice,
    }


def schedule_costs() -> list[tuple[str, float]]:
    zone = parse_timezone("Europe/Berlin")
    now = time.time()
    costs = []
    for expression in ("* * * * * *", "*/15 * * * *", "0 9 * * mon-fri", "30 2 * * *", "0 0 L * *"):
        schedule = parse_schedule(expression)
        calls = 2000
        seconds = timeit.timeit(lambda s=schedule: s.next_after(now, zone), number=calls)
        costs.append((expression, seconds / calls * 1e6))
    return costs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--crons", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    result = run_daemon(args.crons, args.seconds)
    lag, nodes = result["firing_lag"], result["node_lag"]
    print(f"{args.crons} crons firing every second for {args.seconds:g} s")
    print(f"{'figure':<32}{'measured':>14}{'goal':>14}")
    print(f"{'firing lag p50 (ms)':<32}{statistics.median(lag):>14.1f}{'':>14}")
    print(f"{'firing lag p99 (ms)':<32}{percentile(lag, 0.99):>14.1f}{GOAL_LAG_MS:>14.1f}")
    print(f"{'node lag p50 (ms)':<32}{statistics.median(nodes):>14.1f}{'':>14}")
    print(f"{'node lag p99 (ms)':<32}{percentile(nodes, 0.99):>14.1f}{'':>14}")
    print(
        f"{'ticks fired / expected':<32}{result['fired']:>7} / {result['expected']:<5}{'all':>14}"
    )
    print(f"{'ticks fired twice':<32}{result['twice']:>14}{0:>14}")
    for expression, micros in schedule_costs():
        print(f"{'next_after ' + expression + ' (µs)':<32}{micros:>14.1f}")


if __name__ == "__main__":
    main()
