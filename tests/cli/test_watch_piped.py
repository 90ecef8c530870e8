"""``heron nodes watch`` with its output piped, as a program tailing it reads it.

Each test runs ``heron`` as a real subprocess whose stdout is a pipe, against a real
daemon, and reads that pipe line by line *while the node is still working*: a node's
tool blocks on a gate file the test opens only after the watcher said what is running.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.daemon import Daemon

from heron import api
from heron.client import Heron

pytestmark = pytest.mark.slow

Scripts = Any

SPINNER_FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"

GATE = {
    "name": "bash-run",
    "arguments": {"command": "while [ ! -e gate ]; do sleep 0.05; done; echo through"},
}
"""A tool call that runs until the test creates ``gate`` in the node's directory."""


class Watcher:
    """A ``heron`` subprocess whose stdout is a pipe, read line by line as it comes."""

    def __init__(self, daemon: Daemon, *args: str) -> None:
        env = {**os.environ, "HERON_HOME": str(daemon.home), "COLUMNS": "80"}
        for variable in ("HERON_BASE_URL", "HERON_SOCKET", "HERON_TOKEN", "FORCE_COLOR"):
            env.pop(variable, None)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "heron", *args],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._queue.put(line)
        self._queue.put(None)

    def until(self, wanted: Callable[[str], bool], timeout: float = 30) -> list[str]:
        """Read lines until one is ``wanted``; every line read so far (the test fails if
        none comes within ``timeout`` seconds or the output ends first)."""
        deadline = time.monotonic() + timeout
        while not self.lines or not wanted(self.lines[-1]):
            left = deadline - time.monotonic()
            try:
                line = self._queue.get(timeout=max(left, 0.01))
            except queue.Empty:
                pytest.fail(f"no such line within {timeout} s; the pipe so far: {self.lines}")
            if line is None:
                pytest.fail(f"the output ended without such a line: {self.lines}")
            self.lines.append(line)
        return list(self.lines)

    def finish(self, timeout: float = 60) -> tuple[int, str]:
        """Wait for the exit; its status and the whole of stdout."""
        code = self.process.wait(timeout)
        while (line := self._queue.get(timeout=10)) is not None:
            self.lines.append(line)
        return code, "".join(self.lines)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def watcher(daemon: Daemon) -> Iterator[Callable[..., Watcher]]:
    """``watcher(*args)`` starts ``heron *args`` piped; every one is stopped at the end."""
    started: list[Watcher] = []

    def start(*args: str) -> Watcher:
        started.append(Watcher(daemon, *args))
        return started[-1]

    yield start
    for one in started:
        one.close()


@pytest.fixture
def gate(client: Heron, tmp_path: Path) -> Iterator[Path]:
    """The node's directory; its gate is opened at the end whatever happened, so no node
    is left blocked in the shared daemon."""
    yield tmp_path
    (tmp_path / "gate").touch()


def plain(out: str) -> None:
    """Piped output holds no spinner frames and no terminal control sequences."""
    assert "\x1b" not in out and "\r" not in out, repr(out)
    assert not any(frame in out for frame in SPINNER_FRAMES), out


def tool_running(client: Heron, node_id: str) -> None:
    """Wait until the node's gated tool call has started."""
    with client.nodes.events(node_id, after=0) as stream:
        next(e for e in stream if isinstance(e, api.ToolCallStarted))


def test_a_piped_watch_of_a_running_node_shows_the_running_tool_at_once(
    client: Heron, scripts: Scripts, gate: Path, watcher: Callable[..., Watcher]
) -> None:
    push = {"tier": "progress", "title": "Gate", "body": "Waiting at the gate."}
    model = scripts(
        "gated",
        [
            {"text": "Reporting.", "tool_calls": [{"name": "push-report", "arguments": push}]},
            {"text": "Waiting for the gate.", "tool_calls": [GATE]},
            "Through.",
        ],
    )
    node = client.nodes.create(prompt="Go", model=model, cwd=str(gate), scopes=["act"])
    tool_running(client, node.node_id)
    watch = watcher("nodes", "watch", node.node_id)
    # What the node does now, at once: its status, turns and tokens, then the run so
    # far in the order it happened, then the tool that is running (it cannot end
    # before the gate exists).
    seen = watch.until(lambda line: "bash-run" in line)
    assert not (gate / "gate").exists()
    assert re.fullmatch(
        rf"{node.node_id} is running · 1 run · 2 turns so far · tokens \d+ in / \d+ out\n",
        seen[0],
    ), seen
    assert seen[1:] == [
        "Reporting.\n",
        "▍ report · progress · Gate\n",
        "  Waiting at the gate.\n",
        "Waiting for the gate.\n",
        "  ↳ bash-run · running a command …\n",
    ], seen

    (gate / "gate").touch()
    code, out = watch.finish()
    assert code == 0, out
    lines = out.splitlines()
    assert lines[len(seen) :] == [
        "  ✓ bash-run · running a command",
        "· turn 3",
        "Through.",
        "✓ completed",
        lines[-1],
    ], out
    assert re.fullmatch(
        rf"{node.node_id} · completed · 3 turns · tokens \d+ in / \d+ out", lines[-1]
    )
    plain(out)


def test_create_watch_piped_shows_each_turn_and_tool_as_it_starts(
    client: Heron, scripts: Scripts, gate: Path, watcher: Callable[..., Watcher]
) -> None:
    model = scripts("gated", [{"text": "Waiting for the gate.", "tool_calls": [GATE]}, "Through."])
    watch = watcher(
        "nodes", "create", "Go", "--model", model, "--cwd", str(gate), "--scope", "act", "--watch"
    )
    seen = watch.until(lambda line: "bash-run" in line)
    assert not (gate / "gate").exists()
    match = re.fullmatch(r"created node (\S+) \(running\)\n", seen[0])
    assert match, seen
    assert seen[1:] == [
        "· turn 1\n",
        "Waiting for the gate.\n",
        "  ↳ bash-run · running a command …\n",
    ], seen

    (gate / "gate").touch()
    code, out = watch.finish()
    assert code == 0, out
    assert out.splitlines()[len(seen) : -1] == [
        "  ✓ bash-run · running a command",
        "· turn 2",
        "Through.",
        "✓ completed",
    ], out
    plain(out)


def test_a_piped_watch_of_a_dormant_node_says_so_then_when_it_wakes(
    client: Heron, scripts: Scripts, gate: Path, watcher: Callable[..., Watcher]
) -> None:
    model = scripts("woken", [{"text": "Waiting.", "tool_calls": [GATE]}, "Second."])
    node = client.nodes.create(
        prompt="Go", model=model, cwd=str(gate), scopes=["act"], no_kickoff=True
    )
    watch = watcher("nodes", "watch", node.node_id)
    dormant = f"· waiting for a message (heron nodes message {node.node_id} TEXT)\n"
    assert watch.until(lambda line: "waiting for a message" in line) == [dormant]
    client.nodes.message(node.node_id, "Wake up")
    seen = watch.until(lambda line: "bash-run" in line)
    assert not (gate / "gate").exists()
    assert seen == [
        dormant,
        "· running\n",
        "· turn 1\n",
        "Waiting.\n",
        "  ↳ bash-run · running a command …\n",
    ], seen
    (gate / "gate").touch()
    code, out = watch.finish()
    assert code == 0, out
    assert out.splitlines()[len(seen) : -1] == [
        "  ✓ bash-run · running a command",
        "· turn 2",
        "Second.",
        "✓ completed",
    ], out
    plain(out)


def test_watch_json_writes_each_event_as_a_line_as_it_happens(
    client: Heron, scripts: Scripts, gate: Path, watcher: Callable[..., Watcher]
) -> None:
    model = scripts("gated", [{"text": "Waiting for the gate.", "tool_calls": [GATE]}, "Through."])
    node = client.nodes.create(prompt="Go", model=model, cwd=str(gate), scopes=["act"])
    watch = watcher("nodes", "watch", node.node_id, "--json", "--after", "0")
    seen = watch.until(lambda line: '"node.tool_call.started"' in line)
    assert not (gate / "gate").exists()
    events = [json.loads(line) for line in seen]
    assert [e["type"] for e in events if e["type"] != "node.output_text.delta"] == [
        "node.status.changed",
        "node.turn.started",
        "node.output_text.done",
        "node.turn.completed",
        "node.tool_call.started",
    ], events
    started = events[-1]
    assert started["tool"] == "bash-run" and started["node_id"] == node.node_id

    # Joined while the tool runs: the node's status, its run so far, the running call.
    joined = watcher("nodes", "watch", node.node_id, "--json")
    seeded = [json.loads(line) for line in joined.until(lambda line: "tool_call" in line)]
    assert not (gate / "gate").exists()
    assert [(e["type"], e.get("status") or e.get("text") or e.get("tool")) for e in seeded] == [
        ("node.status.changed", "running"),
        ("node.output_text.done", "Waiting for the gate."),
        ("node.tool_call.started", "bash-run"),
    ], seeded

    (gate / "gate").touch()
    assert joined.finish()[0] == 0
    code, out = watch.finish()
    assert code == 0, out
    events = [json.loads(line) for line in out.splitlines()]
    numbers = [event["sequence_number"] for event in events]
    assert numbers == sorted(numbers)
    assert events[-1]["type"] == "node.settled"
    assert events[-1]["outcome"]["output_text"] == "Through."
