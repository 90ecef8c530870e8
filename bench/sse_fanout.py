"""Fan-out of one node's event stream to many SSE readers, on a real daemon.

Starts a real ``heron daemon`` on a temporary ``HERON_HOME`` (Unix socket)
and, per scenario, creates one dormant node whose scripted model then emits
about ``--events`` events (20 turns of 495 text deltas and a tool call), attaches
the scenario's readers to ``GET /v1/nodes/{id}/events``, wakes the node with a
message and reads until ``node.settled``. Scenarios, side by side:

- ``alone``: no reader: the node's own event rate with nobody watching;
- ``readers``: ``--readers`` readers (default 100) that keep up;
- ``+stalled``: the same plus one reader that sends its request and never
  reads a byte (the daemon must drop it, not wait for it).

Figures: the node's own event rate (its events over the time from the wake-up
to its ``settled_at``, as the daemon recorded them), the events per second
delivered to all readers together, events lost by readers that keep up (each
must see every number exactly once: 0), how many readers were dropped because
this process could not read fast enough (the machine is shared), and whether
the stalled reader was dropped (``stream_dropped``). The readers run in
``--processes`` worker processes (raw connections, only finding record ids in
the bytes); a reader that was dropped is reported as such, never counted in
"lost". Each scenario runs ``--repeat`` times (interleaved): the median and the
spread are printed. ``readers`` and ``+stalled`` have the same live readers.

Run it from the repository root (after ``pip install -e .``)::

    python bench/sse_fanout.py
    python bench/sse_fanout.py --readers 20 --events 2000 --repeat 1
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import httpx

STARTUP_TIMEOUT = 60.0
DELTAS = 495
"""Text deltas per scripted turn (agents stop at 25 turns: turns are long, not many)."""
PER_TURN = DELTAS + 5
"""Events of one scripted turn: turn.started, the deltas, done, turn.completed, 2 tool events."""
ID = re.compile(rb"^id: (\d+)$", re.MULTILINE)
CODE = re.compile(rb'"code":"(\w+)"')


@dataclass
class Reader:
    """What one reader saw."""

    numbers: list[int] = field(default_factory=list)
    """Every event number received, in order."""
    errors: list[str] = field(default_factory=list)
    """The codes of ``error`` events received."""
    ended_at: float = 0.0
    """When its stream ended (monotonic)."""


def script(path: Path, events: int) -> str:
    turn = {
        "text": " ".join(f"w{i}" for i in range(DELTAS)),
        "tool_calls": [{"name": "get-current-time", "arguments": {}}],
    }
    steps: list[Any] = [turn] * max(events // PER_TURN, 1) + ["Done."]
    path.write_text(json.dumps(steps))
    return f"scripted:{path}"


def start_daemon(home: Path, model: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "HERON_HOME": str(home), "HERON_PROVIDER": model}
    env.pop("HERON_SOCKET", None)
    log = open(home / "daemon.log", "ab")  # kept open for the daemon's life
    process = subprocess.Popen(
        [sys.executable, "-m", "heron", "daemon"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + STARTUP_TIMEOUT
    transport = httpx.HTTPTransport(uds=str(home / "heron.sock"))
    with httpx.Client(transport=transport, base_url="http://heron") as client:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise SystemExit(f"the daemon exited:\n{(home / 'daemon.log').read_text()}")
            try:
                if client.get("/healthz").status_code == 200:
                    return process
            except httpx.TransportError:
                pass
            time.sleep(0.05)
    raise SystemExit("the daemon did not come up")


async def read(socket: str, node: str, reader: Reader, ready: asyncio.Event) -> None:
    """Read the node's stream to its end, noting every event number.

    A raw HTTP/1.0 request: the answer is then the bare SSE bytes up to the close
    (no chunked framing to undo), which keeps many readers cheap to run.
    """
    stream, writer = await asyncio.open_unix_connection(socket, limit=1 << 20)
    writer.write(f"GET /v1/nodes/{node}/events HTTP/1.0\r\nHost: heron\r\n\r\n".encode())
    await writer.drain()
    head = await stream.readuntil(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        raise SystemExit(f"the stream was refused: {head!r}")
    ready.set()
    tail = b""
    while chunk := await stream.read(1 << 16):
        data = tail + chunk
        cut = data.rfind(b"\n\n") + 2
        whole, tail = data[:cut], data[cut:]
        reader.numbers += [int(n) for n in ID.findall(whole)]
        if b"event: error" in whole:
            reader.errors += [c.decode() for c in CODE.findall(whole)]
    reader.ended_at = time.time()
    writer.close()


def worker(socket: str, node: str, count: int, conn: Connection) -> None:
    """A reader process: ``count`` readers of the node; says when all are attached,
    then sends back what each saw."""

    async def run() -> list[Reader]:
        seen = [Reader() for _ in range(count)]
        ready = [asyncio.Event() for _ in seen]
        tasks = [
            asyncio.ensure_future(read(socket, node, r, e))
            for r, e in zip(seen, ready, strict=True)
        ]
        for event in ready:
            await event.wait()
        conn.send("ready")
        await asyncio.gather(*tasks)
        return seen

    conn.send(asyncio.run(run()))
    conn.close()


async def stall(socket: str, node: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Send the request and never read the answer (until the node has settled)."""
    stream, writer = await asyncio.open_unix_connection(socket)
    writer.write(f"GET /v1/nodes/{node}/events HTTP/1.0\r\nHost: heron\r\n\r\n".encode())
    await writer.drain()
    return stream, writer


async def scenario(
    home: Path, model: str, readers: int, processes: int, stalled: bool
) -> dict[str, Any]:
    socket = str(home / "heron.sock")
    transport = httpx.AsyncHTTPTransport(uds=socket)
    async with httpx.AsyncClient(
        transport=transport, base_url="http://heron", timeout=120
    ) as client:
        made = await client.post(
            "/v1/nodes", json={"prompt": "Go.", "model": model, "no_kickoff": True}
        )
        node = made.json()["node_id"]
        # The readers live in their own processes, so reading never competes with this
        # one's loop (nor the daemon's): a few processes holding many readers each.
        context = multiprocessing.get_context("spawn")
        shares = [readers // processes + (i < readers % processes) for i in range(processes)]
        pipes = []
        for share in (s for s in shares if s):
            mine, theirs = context.Pipe()
            context.Process(target=worker, args=(socket, node, share, theirs), daemon=True).start()
            pipes.append(mine)
        loop = asyncio.get_running_loop()
        for pipe in pipes:
            assert await loop.run_in_executor(None, pipe.recv) == "ready"
        counted = (await client.get("/v1/status")).json()["event_streams"]["readers_dropped"]
        stuck = await stall(socket, node) if stalled else None
        woke_at = time.time()
        await client.post(f"/v1/nodes/{node}/messages", json={"body": "Start."})
        seen: list[Reader] = []
        for pipe in pipes:
            seen += await loop.run_in_executor(None, pipe.recv)
        while (await client.get(f"/v1/nodes/{node}/outcome?wait=5")).json()["state"] != "settled":
            pass
        dropped: bool | None = None
        if stuck is not None:
            # Now read what the stalled reader was sent: stream_dropped, or (its write
            # having stalled past the send timeout) a connection the daemon closed.
            body = await asyncio.wait_for(stuck[0].read(), 60)
            status = (await client.get("/v1/status")).json()["event_streams"]
            live_dropped = sum(bool(r.errors) for r in seen)
            dropped = b"stream_dropped" in body or (
                status["readers_dropped"] - counted > live_dropped
            )
            stuck[1].close()
        row = (await client.get(f"/v1/nodes/{node}")).json()
        # Count the node's events from a replay of the settled node (readers may be dropped).
        replay = Reader()
        await read(socket, node, replay, asyncio.Event())
        total = replay.numbers[-1]
    settled = datetime.fromisoformat(row["settled_at"]).timestamp()
    lost = 0
    kept = [r for r in seen if not r.errors]  # a dropped reader is counted apart, never here
    for r in kept:
        # A reader attached to the dormant node first got its status event (number 1).
        got = [n for n in r.numbers if n >= 2]
        lost += len(set(range(2, total + 1)) - set(got)) + (len(got) - len(set(got)))
    delivered = sum(len(r.numbers) for r in seen)
    last_end = max((r.ended_at for r in seen), default=time.time())
    return {
        "node_events": total,
        "node_rate": total / max(settled - woke_at, 1e-9),
        "delivered_rate": delivered / max(last_end - woke_at, 1e-9),
        "kept_up": len(kept),
        "lost": lost,
        "readers_dropped": len(seen) - len(kept),
        "dropped": dropped,
    }


def spread(values: list[float], form: str) -> str:
    """The median, with the lowest and highest of the repeats."""
    if len(values) == 1:
        return form.format(values[0])
    low, mid, high = min(values), statistics.median(values), max(values)
    return f"{form.format(mid)} ({form.format(low)}-{form.format(high)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--readers", type=int, default=100)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--processes", type=int, default=4, help="reader processes")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each scenario")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="heron-sse-bench-"))
    model = script(home / "script.json", args.events)
    daemon = start_daemon(home, model)
    plans = {
        "alone": (0, False),
        "readers": (args.readers, False),
        "+stalled": (args.readers, True),
    }
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in plans}
    try:
        for _ in range(args.repeat):  # interleaved, so a busy moment hits every scenario
            for name, (readers, stalled) in plans.items():
                run = scenario(home, model, readers, args.processes, stalled)
                results[name].append(asyncio.run(run))
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=30)
        shutil.rmtree(home, ignore_errors=True)
    names = list(results)
    print(
        f"SSE fan-out: one node, ~{args.events:,} events, {args.readers} readers in "
        f"{args.processes} processes (Unix socket); median (min-max) of {args.repeat} runs"
    )
    print(f"{'':36}" + "".join(f"{n:>26}" for n in names))
    rows = [
        ("events the node emitted", "node_events", "{:,.0f}"),
        ("node's own event rate (events/s)", "node_rate", "{:,.0f}"),
        ("delivered to all readers (ev/s)", "delivered_rate", "{:,.0f}"),
        ("live readers that kept up", "kept_up", "{:.0f}"),
        ("events lost by those readers", "lost", "{:.0f}"),
        ("live readers dropped (fell behind)", "readers_dropped", "{:.0f}"),
        ("stalled reader dropped", "dropped", "{}"),
    ]
    for label, key, form in rows:
        cells = []
        for name in names:
            values = [r[key] for r in results[name]]
            idle = name == "alone" and key not in ("node_events", "node_rate")
            if idle or values[0] is None:
                cells.append("-")
            elif key == "dropped":
                cells.append(f"{sum(map(bool, values))}/{len(values)} runs")
            else:
                cells.append(spread([float(v) for v in values], form))
        print(f"{label:36}" + "".join(f"{c:>26}" for c in cells))


if __name__ == "__main__":
    main()
