"""A real daemon SIGKILLed several times under load, its event streams read throughout.

Nodes on the scripted provider stream text and call tools while the daemon is
killed at random instants (a fixed seed) and restarted; readers follow every
node across the kills with their last ``sequence_number``. Afterwards: no node
acknowledged is lost or stuck, no settled outcome changed, every logged event
any reader received is in the log as it was received, every completed step's
events are there once, ``node.settled`` once per node, usage counted once, and
the log has holes only where text deltas were (restarts leave no other trace).
"""

from __future__ import annotations

import http.client
import itertools
import json
import random
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.daemon import Daemon, wait_status, write_script

from heron.runtime._local import UnixHTTPConnection

TURNS = 4
"""Model turns per node: three with a tool call each, then the answer."""

WORDS = " ".join(f"word{n}" for n in range(12))


def script(name: str) -> list[dict[str, Any]]:
    """Turns that stream a dozen deltas each, slowly enough to be cut by a kill."""
    turn = {"text": WORDS, "delay": 0.2, "chunk_delay": 0.02}
    calls = [{"name": "get-current-time", "arguments": {}}]
    return [{**turn, "tool_calls": calls}] * (TURNS - 1) + [{**turn, "text": f"{name} done."}]


@dataclass
class Reader:
    """Follows one node's events across restarts, resuming after the last one received."""

    daemon: Daemon
    node_id: str
    got: list[tuple[int, str, dict[str, Any]]] = field(default_factory=list)
    gaps: list[dict[str, Any]] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)

    def run(self, deadline: float) -> None:
        cursor = 0
        while time.monotonic() < deadline and not self.done.is_set():
            # http.client, not httpx: httpcore leaks the socket of a refused Unix connect.
            conn = UnixHTTPConnection(self.daemon.socket, timeout=30)
            try:
                conn.request("GET", f"/v1/nodes/{self.node_id}/events?after={cursor}")
                response = conn.getresponse()
                pending = b""
                while chunk := response.read1(1 << 16):
                    pending += chunk
                    *blocks, pending = pending.split(b"\n\n")
                    for block in blocks:
                        cursor = self._take(block.decode(), cursor)
            except (OSError, http.client.HTTPException):
                time.sleep(0.1)  # the daemon is down: resume from the cursor once it is up
            finally:
                conn.close()

    def _take(self, block: str, cursor: int) -> int:
        if block.startswith(":"):
            return cursor
        fields = dict(line.split(": ", 1) for line in block.split("\n"))
        data = json.loads(fields["data"])
        if fields["event"] == "error":
            self.gaps.append(data["error"])
        elif "id" in fields:
            cursor = int(fields["id"])
            self.got.append((cursor, fields["event"], data))
            if fields["event"] == "node.settled":
                self.done.set()
        return cursor


def logged(home: Path) -> dict[str, list[tuple[int, str, dict[str, Any]]]]:
    with sqlite3.connect(home / "heron.db") as db:
        rows = db.execute(
            "SELECT node_id, sequence_number, type, data FROM heron_events"
            " ORDER BY node_id, sequence_number"
        ).fetchall()
    out: dict[str, list[tuple[int, str, dict[str, Any]]]] = {}
    for node_id, seq, kind, data in rows:
        out.setdefault(node_id, []).append((seq, kind, json.loads(data)))
    return out


@pytest.mark.slow
def test_sigkills_under_load_lose_no_node_event_settlement_or_count(tmp_path: Path) -> None:
    rng = random.Random(21)
    daemon = Daemon(tmp_path / "home", {"HERON_PROVIDER": write_script(tmp_path, "d", ["D."])})
    deadline = time.monotonic() + 180  # (generous: a loaded machine starts daemons slowly)
    nodes: list[str] = []
    readers: list[threading.Thread] = []
    watched: dict[str, Reader] = {}
    settled: dict[str, Any] = {}

    def add(client: httpx.Client, count: int) -> None:
        for _ in range(count):
            name = f"n{len(nodes)}"
            model = write_script(tmp_path, name, script(name))
            response = client.post("/v1/nodes", json={"prompt": "Go.", "model": model})
            assert response.status_code == 201, response.text
            node_id = response.json()["node_id"]
            nodes.append(node_id)
            reader = watched[node_id] = Reader(daemon, node_id)
            thread = threading.Thread(target=reader.run, args=(deadline,), daemon=True)
            thread.start()
            readers.append(thread)

    def note_outcomes(client: httpx.Client) -> None:
        for node_id in nodes:
            body = client.get(f"/v1/nodes/{node_id}/outcome").json()
            if body["state"] == "settled":
                assert settled.setdefault(node_id, body["outcome"]) == body["outcome"]

    daemon.start()
    try:
        with daemon.client() as client:
            add(client, 6)
        for kill in range(4):
            time.sleep(rng.uniform(0.4, 1.6))
            daemon.kill()
            daemon.start()
            with daemon.client() as client:
                note_outcomes(client)
                add(client, 1 if kill < 2 else 0)  # creates between kills, too
        with daemon.client() as client:
            for node_id in nodes:
                wait_status(client, node_id, "completed", timeout=60)

            note_outcomes(client)
            usage = {n: client.get(f"/v1/nodes/{n}").json()["turns"] for n in nodes}
        for thread in readers:
            thread.join(timeout=max(deadline - time.monotonic(), 0.1))
    finally:
        daemon.stop()

    assert len(settled) == len(nodes) == 8
    log = logged(daemon.home)
    for n, node_id in enumerate(nodes):
        events = log[node_id]
        by_number = {seq: (kind, data) for seq, kind, data in events}
        kinds = [kind for _, kind, _ in events]
        assert settled[node_id]["output_text"] == f"n{n} done."
        # node.settled once, last; every completed step's events once.
        assert kinds.count("node.settled") == 1 and kinds[-1] == "node.settled"
        # It ran once, however often it was recovered: said once.
        changes = [d["status"] for _, k, d in events if k == "node.status.changed"]
        assert changes == ["running", "completed"], changes
        assert kinds.count("node.output_text.done") == TURNS, kinds
        assert kinds.count("node.turn.completed") == TURNS, kinds
        completed = [d["tool_call_id"] for _, k, d in events if k == "node.tool_call.completed"]
        assert sorted(completed) == sorted(set(completed)) and len(completed) == TURNS - 1
        assert usage[node_id] == TURNS  # a turn DBOS ran again is counted once
        # Every logged event a reader received is in the log, as received; a delta's
        # number never names a logged event.
        reader = watched[node_id]
        assert reader.done.is_set() and reader.got[-1][1] == "node.settled"
        for seq, kind, data in reader.got:
            if kind == "node.output_text.delta":
                assert seq not in by_number
            else:
                assert by_number[seq] == (
                    kind,
                    {k: v for k, v in data.items() if k not in ("node_id", "sequence_number")},
                )
        # Holes only where text deltas were: right after a turn started (restarts skip
        # no numbers), so a stream_gap means deltas really missing.
        for (a, kind, _), (b, _, _) in itertools.pairwise(events):
            assert b == a + 1 or kind == "node.turn.started", (node_id, a, kind, b)
            assert b - a - 1 <= len(WORDS.split()), (node_id, a, b)  # a turn's deltas at most
        for gap in reader.gaps:
            assert gap["code"] == "stream_gap", gap
            earliest = gap["details"]["earliest_sequence"]
            before = max(seq for seq in by_number if seq < earliest)
            assert by_number[before][0] == "node.turn.started", (node_id, gap)
