"""What working through other agents costs: delegation overhead, and what fan-out saves.

Two measurements, printed side by side, all offline over ``ScriptedProvider``:

1. **Overhead per hand-off** (no delays): the median wall time of one worker run made
   four ways, each on freshly built agents (built outside the timed part):

   - ``worker.run(task)`` — the baseline;
   - ``lead.delegate(to=worker, task=...)`` — plus the delegation bookkeeping;
   - a lead run whose model calls the worker through ``worker.as_tool()``, and
   - the same lead run calling a plain ``@tool`` instead, so that the difference
     ``as_tool - plain tool - worker.run`` is what going through a worker tool adds.

2. **Fan-out wall time**: ``--workers`` workers whose model takes ``--delay`` seconds
   each, asked one after the other with ``await delegate()`` and all at once with
   ``delegate_later()`` + ``gather_delegations()``. Concurrent delegations should take
   about one delay, not ``workers`` delays.

Run it from the repository root::

    python bench/delegation.py               # 2,000 runs per way
    python bench/delegation.py --runs 200    # a quicker look
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from heron import SimpleAgent, gather_delegations, tool
from heron.testing import Reply, ScriptedProvider, call

Go = Callable[[], Awaitable[Any]]


@tool
async def echo(task: str) -> str:
    """Say the task back."""
    return task


def worker() -> SimpleAgent:
    return SimpleAgent(provider=ScriptedProvider(["done"]), name="worker")


def direct() -> Go:
    w = worker()
    return lambda: w.run("do it")


def delegated() -> Go:
    lead, w = SimpleAgent(provider=ScriptedProvider([]), name="lead"), worker()
    return lambda: lead.delegate(to=w, task="do it")


def lead_calling(tool_name: str) -> Go:
    tools = [worker().as_tool(name="echo")] if tool_name == "agent" else [echo]
    lead = SimpleAgent(
        provider=ScriptedProvider([call("echo", task="do it"), "ok"]), name="lead", tools=tools
    )
    return lambda: lead.run("go")


async def median_us(prepare: Callable[[], Go], runs: int) -> float:
    for _ in range(min(runs, 50)):  # warm-up
        await prepare()()
    times = []
    for _ in range(runs):
        go = prepare()
        started = time.perf_counter()
        await go()
        times.append(time.perf_counter() - started)
    gc.collect()
    return statistics.median(times) * 1e6


async def fan_out(workers: int, delay: float) -> tuple[float, float]:
    def team() -> tuple[SimpleAgent, list[SimpleAgent]]:
        members = [
            SimpleAgent(provider=ScriptedProvider([Reply(text="ok", delay=delay)]), name=f"w{i}")
            for i in range(workers)
        ]
        return SimpleAgent(provider=ScriptedProvider([]), name="lead"), members

    lead, members = team()
    started = time.perf_counter()
    for m in members:
        await lead.delegate(to=m, task="t")
    sequential = time.perf_counter() - started

    lead, members = team()
    started = time.perf_counter()
    results = await gather_delegations(*(lead.delegate_later(to=m, task="t") for m in members))
    concurrent = time.perf_counter() - started
    assert all(r.reply == "ok" for r in results)
    return sequential, concurrent


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2000, help="timed runs per way")
    parser.add_argument("--workers", type=int, default=8, help="workers in the fan-out")
    parser.add_argument(
        "--delay", type=float, default=0.05, help="seconds each worker's model takes"
    )
    args = parser.parse_args()

    base = await median_us(direct, args.runs)
    via_delegate = await median_us(delegated, args.runs)
    plain = await median_us(lambda: lead_calling("plain"), args.runs)
    via_tool = await median_us(lambda: lead_calling("agent"), args.runs)
    print(f"{args.runs} runs per way, median wall time in µs\n")
    print(f"{'way':<38}{'median µs':>12}{'added µs':>12}")
    print("-" * 62)
    print(f"{'worker.run()':<38}{base:>12.1f}{'':>12}")
    print(f"{'lead.delegate(to=worker)':<38}{via_delegate:>12.1f}{via_delegate - base:>12.1f}")
    print(f"{'lead run calling a plain tool':<38}{plain:>12.1f}{'':>12}")
    added = via_tool - plain - base
    print(f"{'lead run calling worker.as_tool()':<38}{via_tool:>12.1f}{added:>12.1f}")

    sequential, concurrent = await fan_out(args.workers, args.delay)
    print(f"\nfan-out: {args.workers} workers, {args.delay:g} s model delay each\n")
    print(f"{'way':<38}{'wall ms':>12}")
    print("-" * 50)
    print(f"{'await delegate() one by one':<38}{sequential * 1e3:>12.1f}")
    print(f"{'delegate_later() + gather':<38}{concurrent * 1e3:>12.1f}")
    print(f"\nspeed-up: {sequential / concurrent:.1f}x (ideal {args.workers}x)")


if __name__ == "__main__":
    asyncio.run(main())
