"""The daemon's page under load, in Chromium: a canvas of 1,000 nodes, and its frame
time while 100 nodes write text at once.

Starts a real ``heron daemon`` on a temporary ``HERON_HOME``, creates ``--nodes`` nodes
over the Unix socket (a tenth of them resident roots, the rest their children, so the
canvas shows trees) and waits for them to settle. Then, in Debian's Chromium (headless,
driven by Playwright), it prints:

- the time from opening the sign-in link to the canvas showing every node (its totals
  line counting them all and the first rows drawn), and how much of it the snapshot
  request took;
- the time a scroll to the bottom of the list takes to draw its last row;
- the page's frame time (``requestAnimationFrame`` deltas, p50 / p95 / max) while
  ``--streaming`` nodes write text at once (a word every 20 ms each), on the canvas
  (which follows them all over the one feed) and on one of those nodes' page (which
  also streams that node's text).

Run it from the repository root (after ``pip install -e .``; ``apt-get install
chromium``)::

    python bench/ui_load.py                    # 1,000 nodes, 100 streaming
    python bench/ui_load.py --nodes 200 --streaming 20
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from daemon_load import Daemon

CHROMIUM = "/usr/bin/chromium"
STREAM_WORDS = 400
STREAM_CHUNK_DELAY = 0.02
"""Each streaming node writes :data:`STREAM_WORDS` words, one per 20 ms (about 8 s)."""
FRAME_SECONDS = 5.0
"""How long the frame time is sampled."""

FRAMES_JS = """(seconds) => new Promise((resolve) => {
  const deltas = [];
  let last = performance.now();
  const end = last + seconds * 1000;
  const tick = (now) => {
    deltas.push(now - last);
    last = now;
    if (now < end) requestAnimationFrame(tick); else resolve(deltas);
  };
  requestAnimationFrame(tick);
})"""


def percentile(values: Sequence[float], fraction: float) -> float:
    """The ``fraction`` quantile of ``values`` (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))]


def start_daemon(home: Path) -> Daemon:
    """A daemon on ``home`` whose default model answers "Done." at once."""
    quick = home / "quick.json"
    quick.write_text(json.dumps(["Done."]))
    return Daemon(home, f"scripted:{quick}")


async def create_all(client: httpx.AsyncClient, bodies: list[dict[str, Any]]) -> list[str]:
    """Create a node per body, 64 at a time; their ids in order."""
    gate = asyncio.Semaphore(64)

    async def create(body: dict[str, Any]) -> str:
        async with gate:
            response = await client.post("/v1/nodes", json=body)
        if response.status_code != 201:
            raise RuntimeError(f"create failed: {response.status_code} {response.text}")
        node_id: str = response.json()["node_id"]
        return node_id

    return list(await asyncio.gather(*(create(body) for body in bodies)))


async def wait_quiet(client: httpx.AsyncClient, count: int, within: float = 300) -> None:
    """Wait until ``count`` nodes are settled or dormant."""
    deadline = time.monotonic() + within
    while True:
        counts: dict[str, int] = (await client.get("/v1/status")).json()["nodes"]
        quiet = sum(counts.get(s, 0) for s in ("completed", "failed", "cancelled", "dormant"))
        if quiet >= count:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {quiet} of {count} nodes quiet after {within:.0f} s")
        await asyncio.sleep(0.2)


def cpu_seconds(pid: int) -> float:
    """The process's user + system CPU time so far (``/proc/<pid>/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def wait_idle(pid: int, within: float = 120) -> None:
    """Wait until the daemon uses under 5% of a core for a second: settled nodes' last
    workflow steps and writes are done, so the page is measured, not the tail of the load."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        before = cpu_seconds(pid)
        await asyncio.sleep(1.0)
        if cpu_seconds(pid) - before < 0.05:
            return
    raise RuntimeError(f"the daemon was still busy {within:.0f} s after the nodes settled")


async def make_tree(daemon: Daemon, count: int) -> str:
    """``count`` nodes (a tenth resident roots, the rest children); a sign-in link."""
    roots = max(1, count // 10)
    async with daemon.client(64) as client:
        ids = await create_all(
            client,
            [
                {"prompt": f"Root {i}", "name": f"root-{i:04d}", "root_lifecycle": "resident"}
                for i in range(roots)
            ],
        )
        await wait_quiet(client, roots)
        children = [
            {"prompt": f"Child {i}", "name": f"child-{i:04d}", "parent": ids[i % roots]}
            for i in range(count - roots)
        ]
        await create_all(client, children)
        await wait_quiet(client, count)
        await wait_idle(daemon.process.pid)
        login: str = (await client.post("/v1/ui/open", json={})).json()["login_url"]
    return login


async def start_streaming(daemon: Daemon, count: int) -> list[str]:
    """``count`` nodes that write slowly, all at once."""
    script = daemon.home / "stream.json"
    words = " ".join(f"word{i}" for i in range(STREAM_WORDS))
    script.write_text(json.dumps([{"text": words, "chunk_delay": STREAM_CHUNK_DELAY}]))
    body = {"prompt": "Write.", "model": f"scripted:{script}"}
    async with daemon.client(64) as client:
        return await create_all(
            client, [{**body, "name": f"streamer-{i:03d}"} for i in range(count)]
        )


def frames(page: Any) -> dict[str, float]:
    """The page's frame time for :data:`FRAME_SECONDS`: p50 / p95 / max in ms."""
    deltas: list[float] = page.evaluate(FRAMES_JS, FRAME_SECONDS)[1:]
    return {
        "frames": len(deltas),
        "p50": statistics.median(deltas),
        "p95": percentile(deltas, 0.95),
        "max": max(deltas),
    }


def measure(daemon: Daemon, login: str, nodes: int, streaming: int) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    figures: dict[str, Any] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            started = time.perf_counter()
            page.goto(login)
            page.wait_for_function(
                "(n) => (document.querySelector('#canvas-totals')?.textContent || '')"
                ".startsWith(n + ' nodes') && document.querySelector('.row')",
                arg=nodes,
                timeout=120_000,
            )
            figures["canvas_ready_s"] = time.perf_counter() - started
            figures["rows_in_dom"] = page.locator(".row").count()
            figures["snapshot_ms"] = page.evaluate(
                "() => performance.getEntriesByType('resource')"
                ".filter((e) => e.name.endsWith('/v1/canvas/snapshot'))[0]?.duration ?? 0"
            )
            started = time.perf_counter()
            page.evaluate(
                "() => { const l = document.querySelector('#canvas-list');"
                " l.scrollTop = l.scrollHeight; }"
            )
            page.wait_for_function(
                '(n) => document.querySelector(`.row[aria-posinset="${n}"]`)', arg=nodes
            )
            figures["scroll_to_end_ms"] = (time.perf_counter() - started) * 1000
            figures["idle"] = frames(page)
            # (Playwright's sync API runs an event loop in this thread: create from another)
            with ThreadPoolExecutor(1) as pool:
                ids = pool.submit(asyncio.run, start_streaming(daemon, streaming)).result()
            page.wait_for_function(
                "() => (document.querySelector('#canvas-totals')?.textContent || '')"
                ".includes(' running')"
            )
            figures["canvas_streaming"] = frames(page)
            page.evaluate("(id) => { location.hash = '#/nodes/' + id; }", ids[-1])
            page.locator("#live-text:not([hidden])").wait_for(timeout=30_000)
            figures["node_streaming"] = frames(page)
        finally:
            browser.close()
    return figures


def report(args: argparse.Namespace, figures: dict[str, Any], load: tuple[float, ...]) -> None:
    def line(name: str, f: dict[str, float]) -> str:
        return (
            f"  {name:<36} p50 {f['p50']:6.1f} ms   p95 {f['p95']:6.1f} ms   "
            f"max {f['max']:6.1f} ms   ({f['frames']:.0f} frames)"
        )

    print(f"ui_load: {args.nodes} nodes, {args.streaming} streaming; load {load[0]:.2f}")
    print(
        f"  canvas showing every node           {figures['canvas_ready_s']:.2f} s "
        f"(sign-in link to first rows; {figures['rows_in_dom']} rows in the DOM)"
    )
    print(f"  of which GET /v1/canvas/snapshot    {figures['snapshot_ms']:.0f} ms")
    print(f"  scroll to the last row              {figures['scroll_to_end_ms']:.0f} ms")
    print("frame time (requestAnimationFrame deltas):")
    print(line("canvas, idle", figures["idle"]))
    print(line(f"canvas, {args.streaming} nodes streaming", figures["canvas_streaming"]))
    print(line("one streaming node's page", figures["node_streaming"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000, help="nodes on the canvas (1000)")
    parser.add_argument("--streaming", type=int, default=100, help="nodes streaming (100)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary HERON_HOME")
    args = parser.parse_args()
    if args.nodes < 1 or args.streaming < 1:
        parser.error("--nodes and --streaming must be at least 1")
    if not os.path.exists(CHROMIUM):
        parser.error(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    load = os.getloadavg()
    home = Path(tempfile.mkdtemp(prefix="heron-ui-load-"))
    daemon = start_daemon(home)
    try:
        asyncio.run(daemon.wait_ready())
        login = asyncio.run(make_tree(daemon, args.nodes))
        figures = measure(daemon, login, args.nodes, args.streaming)
    finally:
        daemon.stop()
        if args.keep:
            print(f"HERON_HOME kept: {home}")
        else:
            shutil.rmtree(home, ignore_errors=True)
    report(args, figures, load)


if __name__ == "__main__":
    main()
