"""Load on the runtime daemon: many nodes created at once over the Unix socket.

Starts a real ``heron daemon`` on a temporary ``HERON_HOME`` whose default
provider is a script of three model turns per node (a tool call, another tool
call, an answer), creates ``--nodes`` nodes concurrently with an
``httpx.AsyncClient`` on the socket (at most ``--connections`` requests in
flight), waits until every node has settled, checks each one completed after
exactly three turns, and prints beside each goal:

- create latency p50 / p99 (``POST /v1/nodes``, measured by the client);
- nodes settled per second, from the first create sent to the last node's
  ``settled_at`` as the daemon recorded it;
- the daemon's resident memory per node: RSS after all settled minus RSS
  before the first create (``/proc/PID/status``), divided by the node count;
- the daemon's CPU time per node (``/proc/PID/stat``), which a busy machine
  disturbs far less than the rate;
- how fast reads answer meanwhile: ``GET /v1/status`` p50 / p99, polled every
  0.1 s from the first create until every node has settled.

Beside the daemon it runs the ceiling: bare DBOS on the same kind of SQLite
database (Heron's engine settings), the same number of async workflows started
at once, each running :data:`DAEMON_STEPS` trivial steps (what one node costs
the daemon: begin, three model turns, two tool calls, end)
and :data:`MINIMUM_STEPS` (only the turns and tool calls, which must be
steps), each in a fresh process. ``--no-ceiling`` skips it.

``--py-spy FILE`` also records the daemon with py-spy for the whole run
(``-f raw``: collapsed stacks per thread, idle frames included, one line
each) for finding hotspots; sampling slows the daemon, so figures from such a
run are not comparable with plain ones.

Run it from the repository root (after ``pip install -e .``)::

    python bench/daemon_load.py                 # 1,000 nodes
    python bench/daemon_load.py --nodes 200 --connections 32
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

GOAL_P99_CREATE_MS = 50.0
GOAL_CPU_RATIO = 1.5
"""The daemon's CPU per node at most this many times bare DBOS's per workflow (same steps)."""
GOAL_RATE_RATIO = 0.6
"""Nodes settled per second at least this share of bare DBOS's workflows (same steps)."""
STARTUP_TIMEOUT = 60.0
TURNS = 3
DAEMON_STEPS = 7
"""DBOS steps one node's run takes: begin, 3 model turns, 2 tool calls, end."""
MINIMUM_STEPS = 5
"""Steps no durable design can drop: each model turn and each tool call."""

SCRIPT = [
    {"tool_calls": [{"name": "get-current-time", "arguments": {}}]},
    {"tool_calls": [{"name": "get-current-time", "arguments": {}}]},
    "Done: checked the time twice.",
]


def rss_kib(pid: int, field: str = "VmRSS") -> int:
    """A memory figure of a process from ``/proc/PID/status``, in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/{pid}/status")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: Sequence[float], fraction: float) -> float:
    """The ``fraction`` quantile (nearest rank) of ``values``."""
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))
    return ordered[index]


class Daemon:
    """A ``heron daemon`` subprocess on ``home``, with an async client on its socket."""

    def __init__(self, home: Path, provider: str, env: dict[str, str] | None = None) -> None:
        self.home = home
        self.socket = home / "heron.sock"
        env = {**os.environ, "HERON_HOME": str(home), "HERON_PROVIDER": provider, **(env or {})}
        env.pop("HERON_SOCKET", None)
        env.pop("HERON_DATABASE_URL", None)
        self.log = open(home / "daemon.log", "wb")  # closed in stop()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "heron", "daemon"],
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )

    def client(self, connections: int) -> httpx.AsyncClient:
        """An async HTTP client on the socket with at most ``connections`` connections."""
        limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
        transport = httpx.AsyncHTTPTransport(uds=str(self.socket), limits=limits)
        return httpx.AsyncClient(transport=transport, base_url="http://heron", timeout=120)

    async def wait_ready(self) -> None:
        """Poll ``/healthz`` until it answers (or the process dies, or time runs out)."""
        deadline = time.monotonic() + STARTUP_TIMEOUT
        async with self.client(1) as client:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise RuntimeError(f"the daemon exited: see {self.home / 'daemon.log'}")
                try:
                    if (await client.get("/healthz")).status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.05)
        raise RuntimeError(f"the daemon did not come up: see {self.home / 'daemon.log'}")

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it lingers."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


async def create_all(
    client: httpx.AsyncClient, count: int, connections: int
) -> tuple[list[float], list[str]]:
    """Create ``count`` nodes at once; returns each create's latency (s) and the node ids."""
    gate = asyncio.Semaphore(connections)
    latencies: list[float] = []
    ids: list[str] = []

    async def create(index: int) -> None:
        async with gate:
            started = time.perf_counter()
            response = await client.post("/v1/nodes", json={"prompt": f"Task {index}"})
            latencies.append(time.perf_counter() - started)
        if response.status_code not in (200, 201):
            raise RuntimeError(f"create failed: {response.status_code} {response.text}")
        ids.append(response.json()["node_id"])

    await asyncio.gather(*(create(i) for i in range(count)))
    return latencies, ids


async def wait_all_settled(
    client: httpx.AsyncClient, count: int, within: float, reads: list[float] | None = None
) -> None:
    """Poll ``/v1/status`` until ``count`` nodes are settled (or fail after ``within`` s);
    each poll's latency (s) is appended to ``reads``."""
    deadline = time.monotonic() + within
    while True:
        started = time.perf_counter()
        answer = await client.get("/v1/status")
        if reads is not None:
            reads.append(time.perf_counter() - started)
        counts: dict[str, int] = answer.json()["nodes"]
        settled = sum(counts.get(s, 0) for s in ("completed", "failed", "cancelled"))
        if settled >= count:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {settled} of {count} nodes settled in {within:.0f} s")
        await asyncio.sleep(0.1)


def check_nodes(nodes: list[dict[str, Any]], ids: list[str]) -> None:
    """Every node created completed, after exactly :data:`TURNS` model turns."""
    by_id = {n["node_id"]: n for n in nodes}
    wrong = [
        (i, by_id.get(i, {}).get("status"), by_id.get(i, {}).get("turns"))
        for i in ids
        if by_id.get(i, {}).get("status") != "completed" or by_id[i]["turns"] != TURNS
    ]
    if wrong:
        raise RuntimeError(f"{len(wrong)} nodes did not complete in {TURNS} turns: {wrong[:5]}")


def settled_at(node: dict[str, Any]) -> float:
    """The node's ``settled_at`` as Unix time."""
    from datetime import datetime

    return datetime.fromisoformat(node["settled_at"]).timestamp()


async def run(args: argparse.Namespace, home: Path) -> dict[str, float]:
    script = home / "three-turns.json"
    script.write_text(json.dumps(SCRIPT))
    daemon = Daemon(home, f"scripted:{script}")
    spy: asyncio.subprocess.Process | None = None
    try:
        await daemon.wait_ready()
        pid = daemon.process.pid
        async with daemon.client(args.connections + 1) as client:  # one for the reads
            # One node first, so imports and caches made on first use are not counted
            # as per-node memory or as a slow create.
            _, warm = await create_all(client, 1, 1)
            await wait_all_settled(client, 1, 60)
            before = rss_kib(pid)
            if args.py_spy:
                spy = await asyncio.create_subprocess_exec(
                    *("py-spy", "record", "--nonblocking", "--idle", "--threads"),
                    *("-f", "raw", "-o", args.py_spy, "--pid", str(pid)),
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                await asyncio.sleep(1.0)  # py-spy attaches before the load starts
            cpu_before = cpu_seconds(pid)
            first_create = time.time()
            started = time.perf_counter()
            reads: list[float] = []
            polling = asyncio.ensure_future(
                wait_all_settled(client, args.nodes + 1, args.timeout, reads)
            )
            latencies, ids = await create_all(client, args.nodes, args.connections)
            created = time.perf_counter() - started
            await polling
            after = rss_kib(pid)
            cpu = cpu_seconds(pid) - cpu_before
            peak = rss_kib(pid, "VmHWM")
            nodes: list[dict[str, Any]] = (await client.get("/v1/nodes")).json()
        check_nodes(nodes, ids + warm)
        last_settled = max(settled_at(n) for n in nodes if n["node_id"] in set(ids))
        return {
            "p50_ms": statistics.median(latencies) * 1000,
            "p99_ms": percentile(latencies, 0.99) * 1000,
            "max_ms": max(latencies) * 1000,
            "read_p50_ms": statistics.median(reads) * 1000,
            "read_p99_ms": percentile(reads, 0.99) * 1000,
            "create_s": created,
            "settle_s": last_settled - first_create,
            "per_second": args.nodes / (last_settled - first_create),
            "rss_before_mib": before / 1024,
            "rss_after_mib": after / 1024,
            "peak_mib": peak / 1024,
            "kib_per_node": (after - before) / args.nodes,
            "cpu_ms_per_node": cpu / args.nodes * 1000,
        }
    finally:
        if spy is not None:
            spy.send_signal(signal.SIGINT)  # py-spy writes its file when interrupted
            await asyncio.wait_for(spy.wait(), 60)
        daemon.stop()


def bare_dbos(steps: int, count: int) -> dict[str, float]:
    """Run ``count`` bare DBOS workflows of ``steps`` steps at once here; their figures.

    Runs in a process of its own (DBOS is one per process), on a fresh SQLite
    file made with Heron's engine settings.
    """
    from dbos import DBOS, SetWorkflowID

    from heron.runtime.db._database import create_engine

    async def step(index: int) -> int:
        return index

    @DBOS.workflow(name="bench.bare")
    async def workflow(key: int) -> int:
        for index in range(steps):
            await DBOS.run_step_async({"name": "step"}, step, index)
        return key

    async def main() -> dict[str, float]:
        home = Path(tempfile.mkdtemp(prefix="heron-bare-dbos-"))
        try:
            url = f"sqlite:///{home / 'bare.db'}"
            config: Any = {
                "name": "heron-bench",
                "system_database_url": url,
                "system_database_engine": create_engine(url),
                "log_level": "WARNING",
            }
            DBOS(config=config)
            DBOS.launch()
            cpu_before = time.process_time()
            started = time.perf_counter()
            handles = []
            for key in range(count):
                with SetWorkflowID(f"bare-{key}"):
                    handles.append(await DBOS.start_workflow_async(workflow, key))
            for handle in handles:
                await handle.get_result()
            elapsed = time.perf_counter() - started
            cpu = time.process_time() - cpu_before
            DBOS.destroy(workflow_completion_timeout_sec=0)
            return {"per_second": count / elapsed, "cpu_ms_per_node": cpu / count * 1000}
        finally:
            shutil.rmtree(home, ignore_errors=True)

    return asyncio.run(main())


def ceiling(steps: int, count: int) -> dict[str, float]:
    """:func:`bare_dbos` in a fresh process (this script with ``--bare-dbos``)."""
    result = subprocess.run(
        [sys.executable, __file__, "--bare-dbos", str(steps), "--nodes", str(count)],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"the bare DBOS run failed:\n{result.stderr[-2000:]}")
    figures: dict[str, float] = json.loads(result.stdout.strip().splitlines()[-1])
    return figures


def report(
    args: argparse.Namespace,
    figures: dict[str, float],
    bare: dict[int, dict[str, float]],
    load: tuple[float, float, float],
) -> None:
    def mark(ok: bool) -> str:
        return "met" if ok else "MISSED"

    n = args.nodes
    f = figures
    print(
        f"daemon load: {n} nodes x {TURNS} turns (tool, tool, answer), SQLite, "
        f"{args.connections} connections, {os.cpu_count()} CPUs, "
        f"load average {load[0]:.1f} at the start"
    )
    print(f"{'figure':<28}{'measured':>14}   goal")
    p99_ok = f["p99_ms"] < GOAL_P99_CREATE_MS
    print(f"{'create p50':<28}{f['p50_ms']:>11.1f} ms")
    print(
        f"{'create p99':<28}{f['p99_ms']:>11.1f} ms   < {GOAL_P99_CREATE_MS:.0f} ms "
        f"({mark(p99_ok)})"
    )
    print(f"{'create max':<28}{f['max_ms']:>11.1f} ms")
    print(f"{'all creates answered in':<28}{f['create_s']:>12.2f} s")
    print(f"{'first create -> last settled':<28}{f['settle_s']:>12.2f} s")
    print(f"{'nodes settled per second':<28}{f['per_second']:>14.1f}")
    print(f"{'/v1/status p50 under load':<28}{f['read_p50_ms']:>11.1f} ms")
    print(f"{'/v1/status p99 under load':<28}{f['read_p99_ms']:>11.1f} ms")
    print(
        f"{'daemon RSS before / after':<28}{f['rss_before_mib']:>6.1f} / "
        f"{f['rss_after_mib']:.1f} MiB (peak {f['peak_mib']:.1f})"
    )
    print(f"{'memory per node':<28}{f['kib_per_node']:>10.1f} KiB")
    print(f"{'daemon CPU per node':<28}{f['cpu_ms_per_node']:>11.1f} ms")
    if not bare:
        return
    print()
    print(f"ceiling: bare DBOS, {n} async workflows of trivial steps started at once, SQLite")
    print(f"{'':<28}{'settled/s':>14}{'CPU/workflow':>16}")
    print(
        f"{'Heron daemon (per node)':<28}{f['per_second']:>14.1f}{f['cpu_ms_per_node']:>13.1f} ms"
    )
    for steps, b in sorted(bare.items(), reverse=True):
        label = f"bare DBOS, {steps} steps"
        print(f"{label:<28}{b['per_second']:>14.1f}{b['cpu_ms_per_node']:>13.1f} ms")
    same = bare.get(DAEMON_STEPS)
    if same is None:
        return
    cpu_ratio = f["cpu_ms_per_node"] / same["cpu_ms_per_node"]
    rate_ratio = f["per_second"] / same["per_second"]
    print()
    print(f"against bare DBOS with the same {DAEMON_STEPS} steps:")
    print(
        f"{'daemon CPU per node':<28}{cpu_ratio:>13.2f}x   <= {GOAL_CPU_RATIO}x "
        f"({mark(cpu_ratio <= GOAL_CPU_RATIO)})"
    )
    print(
        f"{'nodes settled per second':<28}{rate_ratio:>13.2f}x   >= {GOAL_RATE_RATIO}x "
        f"({mark(rate_ratio >= GOAL_RATE_RATIO)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000, help="nodes to create (1000)")
    parser.add_argument(
        "--connections", type=int, default=32, help="requests in flight at once (32)"
    )
    parser.add_argument(
        "--timeout", type=float, default=600, help="seconds to wait for every node to settle"
    )
    parser.add_argument("--py-spy", metavar="FILE", help="record the daemon with py-spy to FILE")
    parser.add_argument("--keep", action="store_true", help="keep the temporary HERON_HOME")
    parser.add_argument(
        "--no-ceiling", action="store_true", help="skip the bare DBOS runs beside the daemon"
    )
    parser.add_argument("--bare-dbos", type=int, metavar="STEPS", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.nodes < 1 or args.connections < 1:
        parser.error("--nodes and --connections must be at least 1")
    if args.bare_dbos is not None:  # the child process of ceiling()
        print(json.dumps(bare_dbos(args.bare_dbos, args.nodes)))
        return
    if args.py_spy and shutil.which("py-spy") is None:
        parser.error("--py-spy needs py-spy on PATH (pip install py-spy)")
    load = os.getloadavg()
    home = Path(tempfile.mkdtemp(prefix="heron-load-"))
    try:
        figures = asyncio.run(run(args, home))
    finally:
        if args.keep:
            print(f"HERON_HOME kept: {home}")
        else:
            shutil.rmtree(home, ignore_errors=True)
    bare = {}
    if not args.no_ceiling:
        bare = {steps: ceiling(steps, args.nodes) for steps in (DAEMON_STEPS, MINIMUM_STEPS)}
    report(args, figures, bare, load)


if __name__ == "__main__":
    main()
