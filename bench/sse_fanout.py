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
the stalled reader was dropped (``stream_dropped``). The readers run in this process on raw
connections and only find record ids in the bytes, so they stay cheap next to
the daemon (both share the machine).

Run it from the repository root (after ``pip install -e .``)::

    python bench/sse_fanout.py
    python bench/sse_fanout.py --readers 20 --events 2000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime
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
    (no chunked framing to undo), which keeps a hundred readers cheap to run.
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
    reader.ended_at = time.monotonic()
    writer.close()


async def stall(socket: str, node: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Send the request and never read the answer (until the node has settled)."""
    stream, writer = await asyncio.open_unix_connection(socket)
    writer.write(f"GET /v1/nodes/{node}/events HTTP/1.0\r\nHost: heron\r\n\r\n".encode())
    await writer.drain()
    return stream, writer


async def scenario(home: Path, model: str, readers: int, stalled: bool) -> dict[str, Any]:
    socket = str(home / "heron.sock")
    limits = httpx.Limits(max_connections=readers + 8, max_keepalive_connections=readers + 8)
    transport = httpx.AsyncHTTPTransport(uds=socket, limits=limits)
    async with httpx.AsyncClient(
        transport=transport, base_url="http://heron", timeout=120, limits=limits
    ) as client:
        made = await client.post(
            "/v1/nodes", json={"prompt": "Go.", "model": model, "no_kickoff": True}
        )
        node = made.json()["node_id"]
        seen = [Reader() for _ in range(readers)]
        ready = [asyncio.Event() for _ in seen]
        tasks = [
            asyncio.ensure_future(read(socket, node, r, e))
            for r, e in zip(seen, ready, strict=True)
        ]
        for event in ready:
            await event.wait()
        stuck = await stall(socket, node) if stalled else None
        woke = time.monotonic()
        woke_at = time.time()
        await client.post(f"/v1/nodes/{node}/messages", json={"body": "Start."})
        if tasks:
            await asyncio.gather(*tasks)
        else:
            while (await client.get(f"/v1/nodes/{node}/outcome?wait=5")).json()[
                "state"
            ] != "settled":
                pass
        dropped: bool | None = None
        if stuck is not None:
            # Now read what the stalled reader was sent: it must end in stream_dropped.
            body = await asyncio.wait_for(stuck[0].read(), 60)
            dropped = b"stream_dropped" in body
            stuck[1].close()
        row = (await client.get(f"/v1/nodes/{node}")).json()
        # Count the node's events from a replay of the settled node (readers may be dropped).
        replay = Reader()
        await read(socket, node, replay, asyncio.Event())
        total = replay.numbers[-1]
    settled = datetime.fromisoformat(row["settled_at"]).timestamp()
    lost = 0
    for r in seen:
        if r.errors:
            continue  # dropped: its own process fell behind (counted apart)
        # A reader attached to the dormant node first got its status event (number 1).
        got = [n for n in r.numbers if n >= 2]
        lost += len(set(range(2, total + 1)) - set(got)) + (len(got) - len(set(got)))
    delivered = sum(len(r.numbers) for r in seen)
    last_end = max((r.ended_at for r in seen), default=time.monotonic())
    return {
        "node_events": total,
        "node_rate": total / max(settled - woke_at, 1e-9),
        "delivered_rate": delivered / max(last_end - woke, 1e-9),
        "lost": lost,
        "readers_dropped": sum(bool(r.errors) for r in seen),
        "dropped": dropped,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--readers", type=int, default=100)
    parser.add_argument("--events", type=int, default=10_000)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="heron-sse-bench-"))
    model = script(home / "script.json", args.events)
    daemon = start_daemon(home, model)
    try:
        results = {
            "alone": asyncio.run(scenario(home, model, 0, False)),
            "readers": asyncio.run(scenario(home, model, args.readers, False)),
            "+stalled": asyncio.run(scenario(home, model, args.readers, True)),
        }
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=30)
        shutil.rmtree(home, ignore_errors=True)
    names = list(results)
    print(f"SSE fan-out: one node, ~{args.events:,} events, {args.readers} readers (Unix socket)")
    print(f"{'':34}" + "".join(f"{n:>14}" for n in names))
    rows = [
        ("events the node emitted", "node_events", "{:,.0f}"),
        ("node's own event rate (events/s)", "node_rate", "{:,.0f}"),
        ("delivered to all readers (ev/s)", "delivered_rate", "{:,.0f}"),
        ("events lost by readers keeping up", "lost", "{}"),
        ("readers dropped (fell behind)", "readers_dropped", "{}"),
        ("stalled reader dropped", "dropped", "{}"),
    ]
    for label, key, form in rows:
        cells = []
        for name in names:
            value = results[name][key]
            idle = name == "alone" and key in ("delivered_rate", "lost", "readers_dropped")
            cells.append("-" if value is None or idle else form.format(value))
        print(f"{label:34}" + "".join(f"{c:>14}" for c in cells))


if __name__ == "__main__":
    main()
