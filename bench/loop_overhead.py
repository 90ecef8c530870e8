"""Framework overhead of one agent-loop turn: Heron against PydanticAI and the OpenAI Agents SDK.

Every framework plays the same 3-turn script against its own offline fake model, with no
delays and no network:

1. the model calls ``add(a=1, b=2)``;
2. the model calls ``add(a=3, b=4)``;
3. the model answers ``"done"``.

The tool is the same trivial ``async def add(a: int, b: int) -> int`` in each, defined the
framework's idiomatic way (Heron ``@heron.tool``, PydanticAI ``@agent.tool_plain``, Agents SDK
``@function_tool``). The fakes are Heron's ``heron.testing.ScriptedProvider``, PydanticAI's
``FunctionModel`` and, for the Agents SDK, a minimal ``Model`` that hands back prebuilt
responses. As the model and the tool cost next to nothing, a run's wall time is the
framework's own overhead: message bookkeeping, tool dispatch and validation, the fake model's
own work (Heron's and PydanticAI's fakes estimate token usage; the Agents SDK fake does not).

Each run gets a freshly built agent and script, built outside the timed part; only the
``run()`` call is timed, with the garbage collector on as in real use. After a warm-up, the
script times ``--runs`` runs per framework and reports the median and 95th percentile of
(run wall time / 3), in microseconds per turn. It then repeats the same runs under
``tracemalloc`` (a separate pass, since tracing slows Python down) and reports the peak
memory traced over the whole workload (agent building included; it grows somewhat with
``--runs``, as cyclic garbage waits for the collector), the median of one run's own peak,
and what is still held once the workload is over and collected. RSS is not reported: with
three frameworks in one process it depends on which ran first. Connections and name
lookups are refused while measuring, so a framework that tried to reach the network would
fail loudly rather than skew the numbers.

The goal checked at the end: Heron's median overhead per turn is at most half (ratio <= 0.5)
of the faster competitor's. A competitor that is not installed is skipped with a note.

Run it from the repository root::

    pip install -e '.[bench]'
    python bench/loop_overhead.py            # 2,000 runs per framework
    python bench/loop_overhead.py --runs 200 # a quicker look
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import gc
import os
import socket
import statistics
import time
import tracemalloc
from array import array
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any, NoReturn
from unittest import mock

# The Agents SDK reads this on first use; set_tracing_disabled() below makes sure too.
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

PROMPT = "Add 1 and 2, then 3 and 4."
ANSWER = "done"
TURNS = 3
TOOL_CALLS = 2
WARMUP_RUNS = 50
GOAL_RATIO = 0.5

Go = Callable[[], Awaitable[Any]]
"""One run of a freshly built agent, ready to await."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Framework:
    """One framework under test."""

    name: str
    """How the table names it."""
    version: str
    """The installed distribution's version."""
    prepare: Callable[[], Go]
    """Build a fresh agent and script (untimed); return the run to time."""
    outcome: Callable[[Any], tuple[str, int]]
    """A run's result as (final text, tool results), to check the script was really played."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Measurement:
    """What one framework measured."""

    framework: Framework
    """The framework measured."""
    median_us: float
    """Median wall time per turn, in microseconds."""
    p95_us: float
    """95th-percentile wall time per turn, in microseconds."""
    peak_bytes: int
    """Peak memory traced over the whole workload."""
    run_peak_bytes: int
    """Median over the runs of one run's peak, above the memory held when it started."""
    retained_bytes: int
    """Traced memory still held after the workload and a full collection."""


# -- the frameworks ------------------------------------------------------------------------


def heron_framework() -> Framework:
    """Heron: ``SimpleAgent`` over a ``ScriptedProvider``."""
    from heron import RunResult, SimpleAgent, tool
    from heron.testing import ScriptedProvider, Step, call

    @tool
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    def prepare() -> Go:
        script: list[Step] = [call("add", a=1, b=2), call("add", a=3, b=4), ANSWER]
        agent = SimpleAgent(provider=ScriptedProvider(script), tools=[add])
        return functools.partial(agent.run, PROMPT)

    def outcome(result: RunResult) -> tuple[str, int]:
        return result.reply, len(result.tool_calls)

    return Framework(name="heron", version=_version("heron"), prepare=prepare, outcome=outcome)


def pydantic_ai_framework() -> Framework:
    """PydanticAI: an ``Agent`` over a ``FunctionModel`` that plays the script."""
    from pydantic_ai import Agent, AgentRunResult, models
    from pydantic_ai.messages import (
        ModelMessage,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    models.ALLOW_MODEL_REQUESTS = False  # a real model request would now raise

    def prepare() -> Go:
        script = iter(
            [
                ModelResponse(parts=[ToolCallPart("add", {"a": 1, "b": 2})]),
                ModelResponse(parts=[ToolCallPart("add", {"a": 3, "b": 4})]),
                ModelResponse(parts=[TextPart(ANSWER)]),
            ]
        )

        # Async on purpose: FunctionModel runs a plain function in a worker thread.
        async def play(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            return next(script)

        agent = Agent(FunctionModel(play))

        @agent.tool_plain
        async def add(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

        return functools.partial(agent.run, PROMPT)

    def outcome(result: AgentRunResult[str]) -> tuple[str, int]:
        returns = [
            part
            for message in result.new_messages()
            for part in message.parts
            if isinstance(part, ToolReturnPart)
        ]
        return result.output, len(returns)

    dist = "pydantic-ai-slim" if _installed("pydantic-ai-slim") else "pydantic-ai"
    return Framework(name="pydantic-ai", version=_version(dist), prepare=prepare, outcome=outcome)


def openai_agents_framework() -> Framework:
    """OpenAI Agents SDK: an ``Agent`` over a minimal scripted ``Model``, tracing off."""
    from agents import (
        Agent,
        Model,
        ModelResponse,
        Runner,
        RunResult,
        Usage,
        function_tool,
        set_tracing_disabled,
        testing,
    )

    set_tracing_disabled(True)

    class ScriptedModel(Model):
        """Hands back prebuilt responses in order; the least work a ``Model`` can do.

        (``agents.testing.ScriptedModel`` also snapshots every call, which costs more.)
        """

        def __init__(self, outputs: list[list[Any]]) -> None:
            self._outputs = iter(outputs)

        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            return ModelResponse(output=next(self._outputs), usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> NoReturn:
            raise NotImplementedError("the benchmark does not stream")

    @function_tool
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    def prepare() -> Go:
        model = ScriptedModel(
            [
                [testing.function_call("add", {"a": 1, "b": 2}, call_id="call_1")],
                [testing.function_call("add", {"a": 3, "b": 4}, call_id="call_2")],
                [testing.assistant_message(ANSWER)],
            ]
        )
        agent = Agent(name="agent", tools=[add], model=model)
        return functools.partial(Runner.run, agent, PROMPT)

    def outcome(result: RunResult) -> tuple[str, int]:
        outputs = [item for item in result.new_items if item.type == "tool_call_output_item"]
        return result.final_output, len(outputs)

    return Framework(
        name="openai-agents", version=_version("openai-agents"), prepare=prepare, outcome=outcome
    )


COMPETITORS: tuple[tuple[str, Callable[[], Framework]], ...] = (
    ("pydantic-ai-slim", pydantic_ai_framework),
    ("openai-agents", openai_agents_framework),
)


def _installed(dist: str) -> bool:
    try:
        version(dist)
    except PackageNotFoundError:
        return False
    return True


def _version(dist: str) -> str:
    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


# -- measuring -----------------------------------------------------------------------------


@contextlib.contextmanager
def no_network() -> Iterator[None]:
    """Make any connection attempt (or name lookup) raise while measuring."""

    def refuse(*args: object, **kwargs: object) -> NoReturn:
        raise RuntimeError("loop_overhead: a framework tried to reach the network")

    with (
        mock.patch.object(socket.socket, "connect", refuse),
        mock.patch.object(socket.socket, "connect_ex", refuse),
        mock.patch.object(socket, "getaddrinfo", refuse),
    ):
        yield


async def warm_up(framework: Framework) -> None:
    """Run a few times untimed, checking that the script is played as meant."""
    for _ in range(WARMUP_RUNS):
        result = await framework.prepare()()
        got = framework.outcome(result)
        if got != (ANSWER, TOOL_CALLS):
            raise RuntimeError(
                f"{framework.name} did not play the script: "
                f"expected answer {ANSWER!r} after {TOOL_CALLS} tool results, got {got!r}"
            )


async def time_runs(framework: Framework, runs: int) -> list[float]:
    """Wall time of each run, in seconds; agents are built outside the timed part."""
    samples: list[float] = []
    gc.collect()
    for _ in range(runs):
        go = framework.prepare()
        started = time.perf_counter()
        await go()
        samples.append(time.perf_counter() - started)
    return samples


async def trace_memory(framework: Framework, runs: int) -> tuple[int, int, int]:
    """Traced memory over ``runs`` runs: workload peak, median run peak, and retained.

    The workload peak covers agent building too; a run's peak is measured from
    the memory held once its agent is built.
    """
    # Allocated before tracing starts, so that the bookkeeping is not counted as retained.
    run_peaks = array("q", bytes(8 * runs))
    peak = 0
    gc.collect()
    tracemalloc.start()
    try:
        for i in range(runs):
            go = framework.prepare()
            held, building_peak = tracemalloc.get_traced_memory()
            tracemalloc.reset_peak()
            await go()
            _, run_peak = tracemalloc.get_traced_memory()
            peak = max(peak, building_peak, run_peak)
            run_peaks[i] = run_peak - held
        del go  # the last agent would otherwise count as retained
        gc.collect()
        retained, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, int(statistics.median(run_peaks)), retained


async def measure(framework: Framework, runs: int) -> Measurement:
    """Warm up, time, then trace memory for one framework."""
    await warm_up(framework)
    samples = await time_runs(framework, runs)
    peak, run_peak, retained = await trace_memory(framework, runs)
    per_turn_us = [s / TURNS * 1e6 for s in samples]
    p95 = statistics.quantiles(per_turn_us, n=100)[94] if len(per_turn_us) > 1 else per_turn_us[0]
    return Measurement(
        framework=framework,
        median_us=statistics.median(per_turn_us),
        p95_us=p95,
        peak_bytes=peak,
        run_peak_bytes=run_peak,
        retained_bytes=retained,
    )


# -- reporting -----------------------------------------------------------------------------


def kib(n: int) -> str:
    """Bytes as KiB, for the table."""
    return f"{n / 1024:,.1f} KiB"


def ratio(a: float, b: float) -> str:
    """``a / b`` to three places, or ``n/a`` when ``b`` is zero."""
    return f"{a / b:.3f}" if b else "n/a"


def report(results: list[Measurement], runs: int) -> None:
    """Print the side-by-side table, Heron's ratios and the verdict on the goal."""
    print(f"\n{runs:,} runs x {TURNS} turns per framework; per turn = run wall time / {TURNS}\n")
    header = (
        f"{'framework':<15} {'version':<10} {'median µs/turn':>15} {'p95 µs/turn':>12} "
        f"{'peak memory':>14} {'peak/run':>12} {'retained':>12}"
    )
    print(header)
    print("-" * len(header))
    for m in results:
        print(
            f"{m.framework.name:<15} {m.framework.version:<10} {m.median_us:>15.1f} "
            f"{m.p95_us:>12.1f} {kib(m.peak_bytes):>14} {kib(m.run_peak_bytes):>12} "
            f"{kib(m.retained_bytes):>12}"
        )
    heron, others = results[0], results[1:]
    if not others:
        print("\ngoal not checked: no competitor installed (pip install -e '.[bench]')")
        return
    print()
    for other in others:
        print(
            f"heron / {other.framework.name}: "
            f"median {ratio(heron.median_us, other.median_us)}, "
            f"p95 {ratio(heron.p95_us, other.p95_us)}, "
            f"peak memory {ratio(heron.peak_bytes, other.peak_bytes)}, "
            f"peak/run {ratio(heron.run_peak_bytes, other.run_peak_bytes)}"
        )
    fastest = min(others, key=lambda m: m.median_us)
    goal = heron.median_us / fastest.median_us
    verdict = "HOLDS" if goal <= GOAL_RATIO else "DOES NOT HOLD"
    print(
        f"\ngoal (heron median µs/turn <= {GOAL_RATIO} x the faster competitor's, "
        f"{fastest.framework.name}): {verdict} (ratio {goal:.3f})"
    )


async def main(runs: int) -> None:
    """Load what is installed, measure each framework in turn, print the report."""
    frameworks = [heron_framework()]
    for dist, load in COMPETITORS:
        try:
            frameworks.append(load())
        except ImportError as exc:
            print(f"note: skipping {dist}, which did not import ({exc}); pip install -e '.[bench]'")
    results = []
    with no_network():
        for framework in frameworks:
            print(f"measuring {framework.name} {framework.version} ...", flush=True)
            results.append(await measure(framework, runs))
    report(results, runs)


def parse_args() -> argparse.Namespace:
    """The command line: ``--runs N``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--runs", type=int, default=2000, help="timed runs per framework (default: 2000)"
    )
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    return args


if __name__ == "__main__":
    asyncio.run(main(parse_args().runs))
