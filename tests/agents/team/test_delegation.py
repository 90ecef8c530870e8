"""delegate(), delegate_later() and gather_delegations(): handing tasks to other agents."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from heron import (
    ChunkCallback,
    DelegationFuture,
    ProviderError,
    RunResult,
    SimpleAgent,
    StreamChunk,
    UserError,
    gather_delegations,
    tool,
)
from heron.testing import Reply, ScriptedProvider, Step, call


def agent(name: str, *steps: Step, tools: list[Any] | None = None) -> SimpleAgent:
    return SimpleAgent(provider=ScriptedProvider(steps), name=name, tools=tools or [])


class Timeline:
    """Start and finish events of worker runs, read from their chunks."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str | None]] = []

    def __call__(self, chunk: StreamChunk) -> None:
        if chunk.role == "user":
            self.events.append(("start", chunk.agent))
        elif chunk.role == "assistant" and chunk.done:
            self.events.append(("finish", chunk.agent))

    def overlapped(self, *names: str) -> bool:
        """Whether every run started before any finished."""
        starts = [
            i for i, (kind, who) in enumerate(self.events) if kind == "start" and who in names
        ]
        ends = [i for i, (kind, who) in enumerate(self.events) if kind == "finish" and who in names]
        return len(starts) == len(names) and max(starts) < min(ends)


async def test_delegate_returns_the_result_with_who_delegated_and_how_long() -> None:
    lead = agent("lead")
    analyst = agent("analyst", "Revenue grew 4%.")
    chunks: list[StreamChunk] = []
    result = await lead.delegate(to=analyst, task="Summarise Q3", on_chunk=chunks.append)

    assert result is analyst.last_result
    assert (result.agent_name, result.delegated_by) == ("analyst", "lead")
    assert result.reply == "Revenue grew 4%."
    assert result.export()["delegated_by"] == "lead"
    assert {c.agent for c in chunks} == {"analyst"}
    assert chunks[0].content == "Summarise Q3"


async def test_a_delegations_duration_includes_waiting_for_a_busy_worker() -> None:
    lead = agent("lead")
    analyst = agent("analyst", Reply(text="First.", delay=0.05), "Second.")
    busy, freed = asyncio.Event(), []

    def watch(chunk: StreamChunk) -> None:
        if chunk.role == "user":
            busy.set()
        elif chunk.role == "assistant" and chunk.done:
            freed.append(time.perf_counter())

    first = asyncio.ensure_future(analyst.run("first", on_chunk=watch))
    await busy.wait()
    asked = time.perf_counter()
    result = await lead.delegate(to=analyst, task="second")
    await first

    assert result.reply == "Second."
    assert result.duration >= freed[0] - asked > 0  # the wait for the first run is in it


async def test_delegate_can_ask_for_structured_output() -> None:
    lead = agent("lead")
    counter = agent("counter", '{"count": 3}')
    result = await lead.delegate(
        to=counter,
        task="Count the herons",
        output_type={"type": "object", "properties": {"count": {"type": "integer"}}},
    )
    assert result.output_value == {"count": 3}


@pytest.mark.parametrize(
    ("to", "task", "message"),
    [
        ("a name", "x", "can only delegate to a heron agent, not str"),
        ("self", "x", "cannot delegate to itself"),
        ("other", "", "a task must be a non-empty string"),
        ("other", 42, "a task must be a non-empty string"),
    ],
)
async def test_bad_delegations_are_refused_at_once(to: str, task: object, message: str) -> None:
    lead = agent("lead")
    other = agent("other", "never used")
    kwargs: dict[str, Any] = {"to": {"self": lead, "other": other}.get(to, to), "task": task}
    with pytest.raises(UserError, match=message):
        await lead.delegate(**kwargs)
    with pytest.raises(UserError, match=message):
        lead.delegate_later(**kwargs)
    assert other.provider.requests == []  # type: ignore[attr-defined]


async def test_delegate_later_fans_out_concurrently() -> None:
    lead = agent("lead")
    a = agent("alpha", Reply(text="A.", delay=0.02))
    b = agent("beta", Reply(text="B.", delay=0.02))
    timeline = Timeline()
    futures = [
        lead.delegate_later(to=a, task="do A", on_chunk=timeline),
        lead.delegate_later(to=b, task="do B", on_chunk=timeline),
    ]
    assert all(isinstance(f, DelegationFuture) and not f.done() for f in futures)
    assert futures[0].agent_name == "alpha" and futures[0].task == "do A"

    results = await gather_delegations(*futures)

    assert timeline.overlapped("alpha", "beta")
    assert [(r.agent_name, r.delegated_by, r.reply) for r in results] == [
        ("alpha", "lead", "A."),
        ("beta", "lead", "B."),
    ]
    assert results[0] is await futures[0]  # awaiting again gives the same result
    assert futures[0].result() is results[0] and futures[0].exception() is None
    assert all(r.duration > 0 for r in results)


async def test_a_delegation_future_works_with_asyncio_wait_and_output_type() -> None:
    lead = agent("lead")
    counter = agent("counter", Reply(text='{"count": 3}', delay=0.01))
    future = lead.delegate_later(
        to=counter,
        task="Count the herons",
        output_type={"type": "object", "properties": {"count": {"type": "integer"}}},
    )
    with pytest.raises(asyncio.InvalidStateError):
        future.result()
    done, _ = await asyncio.wait([future.asyncio_task])
    assert done == {future.asyncio_task}
    assert future.result().output_value == {"count": 3}


async def test_fan_out_under_a_streamed_parent_streams_and_counts_every_worker(
    usage_adds_up: Callable[..., None],
) -> None:
    a = agent("alpha", Reply(text="A.", delay=0.02))
    b = agent("beta", Reply(text="B.", delay=0.02))

    @tool
    async def both() -> str:
        """Ask alpha and beta at once."""
        futures = [lead.delegate_later(to=a, task="A?"), lead.delegate_later(to=b, task="B?")]
        return " ".join(r.reply for r in await gather_delegations(*futures))

    lead = agent("lead", call("both"), "A. B.", tools=[both])
    timeline = Timeline()
    async with lead.run_stream("go") as stream:
        async for chunk in stream:
            timeline(chunk)
    result = await stream.result()

    assert timeline.overlapped("alpha", "beta")
    assert result.reply == "A. B."
    assert sorted(r.agent_name for r in result.tool_calls[0].runs) == ["alpha", "beta"]
    usage_adds_up(result, lead, a, b)


async def test_one_failure_does_not_stop_the_others() -> None:
    lead = agent("lead")
    broken = agent("broken", ProviderError("quota exceeded", status=429))
    fine = agent("fine", Reply(text="Done.", delay=0.02))
    futures = [
        lead.delegate_later(to=broken, task="t1"),
        lead.delegate_later(to=fine, task="t2"),
    ]
    failed, ok = await gather_delegations(*futures)

    assert (failed.agent_name, failed.stop_reason) == ("broken", "error")
    assert "quota exceeded" in (failed.error or "")
    assert (ok.agent_name, ok.stop_reason, ok.reply) == ("fine", "end_turn", "Done.")
    with pytest.raises(ProviderError, match="quota exceeded"):
        await futures[0]


async def test_cancel_on_error_stops_the_rest_and_raises() -> None:
    lead = agent("lead")
    # A turn calling an unknown tool (an error result), then a failing one.
    broken = agent("broken", call("missing"), ProviderError("boom"))
    slow = agent("slow", Reply(text="never", delay=60))
    futures = [
        lead.delegate_later(to=slow, task="t1"),
        lead.delegate_later(to=broken, task="t2"),
    ]
    with pytest.raises(ProviderError, match="boom"):
        await gather_delegations(*futures, cancel_on_error=True)
    assert all(f.done() for f in futures)
    assert futures[0].partial.stop_reason == "cancelled"
    assert futures[1].partial.stop_reason == "error"
    assert futures[1].partial.input_tokens > 0


async def test_cancelling_the_gatherer_cancels_every_delegation(
    cancel_after: Callable[..., Awaitable[None]],
) -> None:
    lead = agent("lead")
    workers = [agent(f"w{i}", Reply(text="never", delay=60)) for i in range(3)]
    futures: list[DelegationFuture[Any]] = []

    async def start(on_chunk: ChunkCallback) -> list[RunResult]:
        futures.extend(lead.delegate_later(to=w, task="wait", on_chunk=on_chunk) for w in workers)
        return await gather_delegations(*futures)

    await cancel_after(start, "w2")  # the last to start
    assert [f.partial.stop_reason for f in futures] == ["cancelled"] * 3
    assert all(w.last_result is f.partial for w, f in zip(workers, futures, strict=True))


async def test_a_delegation_cancelled_before_it_began_says_so() -> None:
    future = agent("lead").delegate_later(to=agent("idle", "x"), task="t")
    assert future.cancel()
    with pytest.raises(asyncio.CancelledError):
        await future
    assert future.partial.stop_reason == "cancelled"
    assert not future.cancel()  # already over
    assert "done" in repr(future)


def test_gather_takes_only_futures() -> None:
    with pytest.raises(UserError, match="DelegationFuture values, not coroutine"):
        asyncio.run(_gather_a_coroutine())


async def _gather_a_coroutine() -> None:
    async def nothing() -> None:
        return None

    coro = nothing()
    try:
        await gather_delegations(coro)  # type: ignore[arg-type]
    finally:
        coro.close()


async def test_empty_gather_is_empty() -> None:
    assert await gather_delegations() == []


# -- delegation from inside a run --------------------------------------


async def test_delegating_inside_a_tool_records_the_run_on_the_call(
    usage_adds_up: Callable[..., None],
) -> None:
    researcher = agent("researcher", "Herons nest in colonies.")
    chunks: list[StreamChunk] = []

    @tool
    async def research(topic: str) -> str:
        """Research a topic."""
        return (await lead.delegate(to=researcher, task=f"Research {topic}")).reply

    lead = agent(
        "lead", call("research", topic="nesting"), "They nest in colonies.", tools=[research]
    )
    result = await lead.run("How do herons nest?", on_chunk=chunks.append)

    (record,) = result.tool_calls
    assert record.result == "Herons nest in colonies."
    assert record.runs == (researcher.last_result,)
    assert record.runs[0].delegated_by == "lead"
    usage_adds_up(result, lead, researcher)
    # Without an on_chunk of its own, the delegation streams into the run's.
    assert "".join(c.content for c in chunks if c.agent == "researcher") == (
        "Research nestingHerons nest in colonies."
    )


async def test_fan_out_inside_a_tool_overlaps_and_counts_every_worker(
    usage_adds_up: Callable[..., None],
) -> None:
    a = agent("alpha", Reply(text="A.", delay=0.02))
    b = agent("beta", Reply(text="B.", delay=0.02))
    timeline = Timeline()

    @tool
    async def both() -> str:
        """Ask alpha and beta at once."""
        futures = [lead.delegate_later(to=a, task="A?"), lead.delegate_later(to=b, task="B?")]
        return " ".join(r.reply for r in await gather_delegations(*futures))

    lead = agent("lead", call("both"), "A. B.", tools=[both])
    result = await lead.run("go", on_chunk=timeline)

    assert timeline.overlapped("alpha", "beta")
    assert result.tool_calls[0].result == "A. B."
    assert sorted(r.agent_name for r in result.tool_calls[0].runs) == ["alpha", "beta"]
    usage_adds_up(result, lead, a, b)


async def test_nested_delegation_two_levels_deep(usage_adds_up: Callable[..., None]) -> None:
    researcher = agent("researcher", "Grey herons weigh 1.5 kg.")

    @tool
    async def ask_researcher(question: str) -> str:
        """Ask the researcher."""
        return (await manager.delegate(to=researcher, task=question)).reply

    manager = agent(
        "manager", call("ask_researcher", question="Weight?"), "1.5 kg.", tools=[ask_researcher]
    )

    @tool
    async def ask_manager(question: str) -> str:
        """Ask the manager."""
        return (await lead.delegate(to=manager, task=question)).reply

    lead = agent("lead", call("ask_manager", question="How heavy?"), "1.5 kg.", tools=[ask_manager])
    result = await lead.run("How heavy is a grey heron?")

    assert [(r.agent_name, r.delegated_by) for r in result.walk()] == [
        ("lead", None),
        ("manager", "lead"),
        ("researcher", "manager"),
    ]
    usage_adds_up(result, lead, manager, researcher)


async def test_delegate_later_needs_async_code() -> None:
    slow = agent("slow", "never")

    @tool
    def fire_and_forget() -> str:
        """Start work and return at once."""
        lead.delegate_later(to=slow, task="background")
        return "started"

    lead = agent("lead", call("fire_and_forget"), "ok", tools=[fire_and_forget])
    # A sync tool runs in a worker thread, where there is no loop to start a task on.
    result = await lead.run("go")
    (record,) = result.tool_calls
    assert record.is_error and "delegate_later() needs a running event loop" in record.result
    assert slow.provider.requests == []  # type: ignore[attr-defined]


async def test_an_unawaited_delegation_is_cancelled_and_recorded_when_its_call_ends() -> None:
    slow = agent("slow", Reply(text="never", delay=60))
    futures: list[DelegationFuture[Any]] = []

    @tool
    async def fire_and_forget() -> str:
        """Start work and return at once."""
        futures.append(lead.delegate_later(to=slow, task="background"))
        return "started"

    lead = agent("lead", call("fire_and_forget"), "ok", tools=[fire_and_forget])
    result = await lead.run("go")

    (future,) = futures
    assert future.done() and future.partial.stop_reason == "cancelled"
    # On the record although it was cancelled before it could begin.
    assert result.tool_calls[0].runs == (future.partial,)
    assert future.partial.turns == 0 and slow.provider.requests == []  # type: ignore[attr-defined]


async def test_cancelling_the_parent_cancels_delegations_its_tool_awaits(
    cancel_after: Callable[..., Awaitable[None]],
) -> None:
    workers = [agent(f"w{i}", Reply(text="never", delay=60)) for i in range(2)]
    futures: list[DelegationFuture[Any]] = []

    @tool
    async def fan_out() -> str:
        """Ask both workers."""
        futures.extend(lead.delegate_later(to=w, task="wait") for w in workers)
        return str(await gather_delegations(*futures))

    lead = agent("lead", call("fan_out"), tools=[fan_out])
    await cancel_after(lambda on_chunk: lead.run("go", on_chunk=on_chunk), "w1")  # after w0
    assert [f.partial.stop_reason for f in futures] == ["cancelled", "cancelled"]
    assert lead.last_result is not None
    assert len(lead.last_result.tool_calls[0].runs) == 2
