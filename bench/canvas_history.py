"""What the canvas's reads cost as a daemon's nodes pile up, side by side.

Fills a SQLite store (as the daemon's) with N settled nodes, each with a saved
conversation of M messages (user, assistant tool calls, tool results, answers),
then times each read over the real store: history ``search`` (ranked words found
in every transcript), ``grep`` (a regular expression), ``search-rare`` and
``grep-rare`` (a word one transcript in 50 holds: the database pre-filters),
``stats``, and ``attention`` (every node's state and outcome). One row per
operation and size: median milliseconds per request, transcripts per second and
megabytes of message text per second.

Run it from the repository root::

    python bench/canvas_history.py                      # 200 and 1000 nodes, 40 messages
    python bench/canvas_history.py --nodes 100 --messages 200 --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from heron import api
from heron.runtime.canvas._service import Canvas
from heron.runtime.daemon import SCHEMAS
from heron.runtime.db._database import create_engine
from heron.runtime.db._handle import Database
from heron.runtime.nodes._store import NodeStore

RARE = 50
"""One node in this many mentions a flamingo (what the ``-rare`` operations look for)."""

EVENTS = 100
"""Events logged per node."""

WORDS = "heron egret pelican stork ibis crane bittern kingfisher cormorant gannet".split()


def conversation(seed: int, messages: int) -> dict[str, Any]:
    """A saved AgentState of ``messages`` messages with tool calls and results."""
    rare = " Mind the flamingo." if seed % RARE == 0 else ""
    out: list[dict[str, Any]] = [
        {"role": "user", "content": f"Task {seed}: count the birds.{rare}"}
    ]
    for i in range(1, messages):
        word = WORDS[(seed + i) % len(WORDS)]
        text = f"Step {i}: the {word} was seen near pond {seed % 17}. " * 4
        if i % 3 == 1:
            call = {"id": f"c{i}", "name": "fs-grep", "arguments": {"pattern": word}}
            out.append({"role": "assistant", "content": text, "tool_calls": [call]})
        elif i % 3 == 2:
            out.append({"role": "tool", "content": text, "tool_call_id": f"c{i - 1}"})
        else:
            out.append({"role": "assistant", "content": text})
    return {"version": 1, "messages_full": out, "messages": out}


async def fill(store: NodeStore, nodes: int, messages: int) -> int:
    """Insert the nodes; returns the characters of message text they hold."""
    now = time.time()
    chars = 0
    for n in range(nodes):
        state = conversation(n, messages)
        chars += sum(len(m["content"]) for m in state["messages_full"])
        row = {
            "node_id": f"n-{n:06d}",
            "status": "completed" if n % 5 else "failed",
            "root": True,
            "root_lifecycle": "terminal",
            "mode": "base",
            "pin_cwd": False,
            "extra": {},
            "created_at": now + n,
            "updated_at": now + n,
            "runs": 1,
            "turns": messages // 2,
            "input_tokens": 1000,
            "output_tokens": 200,
            "state": state,
        }
        await store.insert_node(row, None)
        outcome = {"kind": "result"} if n % 5 else {"kind": "failure", "reason": "crashed"}
        await store.settle(row["node_id"], outcome, row["status"])
        # Its event log (a node's turns, calls and chunks): attention need not read it.
        delta = {"type": "text", "text": "..."}
        await store.append_events(
            [(row["node_id"], e, "node.chunk", delta, now + n) for e in range(1, EVENTS + 1)]
        )
    return chars


async def timed(action: Callable[[], Awaitable[object]], rounds: int) -> float:
    await action()  # warm-up
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        await action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _operations(canvas: Canvas) -> dict[str, Callable[[], Awaitable[object]]]:
    history = canvas.history
    return {
        "search": lambda: history.search(
            api.HistorySearchRequest(query="kingfisher pond", limit=20)
        ),
        "grep": lambda: history.grep(api.HistoryGrepRequest(pattern=r"pond 1[0-6]\b", limit=500)),
        "search-rare": lambda: history.search(api.HistorySearchRequest(query="flamingo")),
        "grep-rare": lambda: history.grep(api.HistoryGrepRequest(pattern="flamingo")),
        "stats": lambda: history.stats(api.HistoryStatsRequest()),
        "attention": lambda: canvas.attention(),
    }


async def main(sizes: list[int], messages: int, rounds: int) -> None:
    print(f"{'operation':<12}{'nodes':>8}{'ms/request':>13}{'transcripts/s':>16}{'MB/s':>9}")
    for nodes in sizes:
        with tempfile.TemporaryDirectory() as home:
            database = Database(create_engine(f"sqlite:///{Path(home) / 'heron.db'}"))
            database.migrate(SCHEMAS)
            store = NodeStore(database)
            try:
                chars = await fill(store, nodes, messages)
                kernel = SimpleNamespace(store=store, db=database, active={})
                operations = _operations(Canvas(kernel))  # type: ignore[arg-type]
                for name, action in operations.items():
                    seconds = await timed(action, rounds)
                    rate = nodes / seconds
                    megabytes = chars / seconds / 1e6 if name != "attention" else float("nan")
                    print(
                        f"{name:<12}{nodes:>8}{seconds * 1000:>13.1f}{rate:>16.0f}{megabytes:>9.1f}"
                    )
            finally:
                database.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[200, 1000])
    parser.add_argument("--messages", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    asyncio.run(main(options.nodes, options.messages, options.rounds))
