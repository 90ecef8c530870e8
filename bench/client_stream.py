"""What reading a node's stream through the typed client costs, side by side.

Starts a real ``heron daemon`` on a temporary ``HERON_HOME`` (Unix socket). Per
reader and repetition it creates a dormant node whose scripted model emits about
``--events`` events (turns of 495 text deltas and a tool call), opens the node's
stream, wakes the node with a message and reads to ``node.settled``. Readers:

- ``raw httpx``: ``iter_bytes`` on the route, only finding record ids in the bytes
  (the floor: no parsing at all);
- ``NodeStream``: ``Heron().nodes.events(id)``, typed events;
- ``AsyncNodeStream``: ``AsyncHeron().nodes.events(id)``, typed events;
- ``follow_activity``: the activity feed over a ``NodeStream``.

Figures: events read, the wall time from the wake-up to ``node.settled`` (the node's
own pace bounds it: equal times mean the client keeps up), and this process's CPU
time per 1000 events (what the reader itself costs). Median of ``--repeat`` runs.

Run it from the repository root (after ``pip install -e .``)::

    python bench/client_stream.py
    python bench/client_stream.py --events 4000 --repeat 1
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from heron.client import AsyncHeron, Heron, follow_activity

DELTAS = 495
PER_TURN = DELTAS + 5
ID = re.compile(rb"^id: (\d+)$", re.MULTILINE)


def start_daemon(home: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "HERON_HOME": str(home)}
    env.pop("HERON_SOCKET", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "heron", "daemon"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    transport = httpx.HTTPTransport(uds=str(home / "heron.sock"))
    with httpx.Client(transport=transport, base_url="http://heron", timeout=2) as http:
        while time.monotonic() < deadline:
            if (home / "heron.sock").exists():
                try:
                    if http.get("/healthz").status_code == 200:
                        return process
                except httpx.HTTPError:
                    pass
            time.sleep(0.05)
    process.kill()
    raise SystemExit("the daemon did not come up")


def script(directory: Path, turns: int) -> str:
    text = " ".join(f"w{i}" for i in range(DELTAS))
    steps: list[Any] = [
        {"text": text, "tool_calls": [{"name": "get-current-time", "arguments": {}}]}
    ] * (turns - 1) + [text]
    path = directory / "script.json"
    path.write_text(json.dumps(steps))
    return f"scripted:{path}"


def raw(client: Heron, node_id: str, wake: Callable[[], None]) -> int:
    transport = httpx.HTTPTransport(uds=str(client.settings.socket_path))
    with (
        httpx.Client(transport=transport, base_url="http://heron", timeout=None) as http,
        http.stream("GET", f"/v1/nodes/{node_id}/events", params={"after": 0}) as response,
    ):
        wake()
        count, tail = 0, b""
        for chunk in response.iter_bytes():
            data = tail + chunk
            count += len(ID.findall(data[: data.rfind(b"\n\n") + 1]))
            tail = data[data.rfind(b"\n\n") + 2 :]
            if b"event: node.settled" in chunk:
                return count
    return count


def typed(client: Heron, node_id: str, wake: Callable[[], None]) -> int:
    stream = client.nodes.events(node_id, after=0)
    stream.node  # noqa: B018 - retrieve the node before waking it
    wake()
    return sum(1 for _ in stream)


def activity(client: Heron, node_id: str, wake: Callable[[], None]) -> int:
    stream = client.nodes.events(node_id, after=0)
    count = 0

    def tally(_: object) -> None:
        nonlocal count
        count += 1

    stream.on("*", tally)
    stream.node  # noqa: B018
    wake()
    for _ in follow_activity(stream):
        pass
    return count


def typed_async(client: Heron, node_id: str, wake: Callable[[], None]) -> int:
    async def run() -> int:
        async with AsyncHeron(socket_path=client.settings.socket_path, auto_start=False) as a:
            stream = a.nodes.events(node_id, after=0)
            await stream.node
            wake()
            return sum([1 async for _ in stream])

    return asyncio.run(run())


READERS: dict[str, Callable[[Heron, str, Callable[[], None]], int]] = {
    "raw httpx": raw,
    "NodeStream": typed,
    "AsyncNodeStream": typed_async,
    "follow_activity": activity,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    turns = max(1, min(20, args.events // PER_TURN))
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        model = script(Path(tmp), turns)
        daemon = start_daemon(home)
        results: dict[str, list[tuple[int, float, float]]] = {name: [] for name in READERS}
        try:
            with Heron(socket_path=home / "heron.sock", auto_start=False) as client:
                for _ in range(args.repeat):
                    for name, reader in READERS.items():
                        node = client.nodes.stream(prompt="Go.", model=model, no_kickoff=True)
                        node_id = node.node.node_id
                        node.close()
                        marks: dict[str, float] = {}

                        def wake(node_id: str = node_id, marks: dict[str, float] = marks) -> None:
                            marks["wall"], marks["cpu"] = time.perf_counter(), time.process_time()
                            client.request("POST", f"/v1/nodes/{node_id}/messages", {"body": "Go"})

                        count = reader(client, node_id, wake)
                        wall = time.perf_counter() - marks["wall"]
                        cpu = time.process_time() - marks["cpu"]
                        results[name].append((count, wall, cpu))
        finally:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(30)
    print(f"{'reader':<18}{'events':>8}{'wall s':>9}{'CPU ms / 1000 events':>23}")
    for name, runs in results.items():
        count = int(statistics.median(r[0] for r in runs))
        wall = statistics.median(r[1] for r in runs)
        cpu = statistics.median(r[2] * 1e6 / max(r[0], 1) for r in runs)
        print(f"{name:<18}{count:>8}{wall:>9.2f}{cpu:>23.1f}")


if __name__ == "__main__":
    main()
