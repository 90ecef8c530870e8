"""agent.run_stream(): the run's chunks read with ``async for``."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel

from heron import ProviderError, RunError, SimpleAgent, StreamChunk, UserError, tool
from heron.testing import Reply, ScriptedProvider, call


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def test_iterating_gives_the_same_chunks_as_on_chunk() -> None:
    script = [
        Reply(text="Adding.", thinking="Use the tool.", tool_calls=[call("add", a=1, b=2)]),
        "3",
    ]
    expected: list[StreamChunk] = []
    await SimpleAgent(provider=ScriptedProvider(script), tools=[add]).run(
        "1+2", on_chunk=expected.append
    )

    agent = SimpleAgent(provider=ScriptedProvider(script), tools=[add])
    async with agent.run_stream("1+2") as stream:
        seen = [chunk async for chunk in stream]
    result = await stream.result()

    def strip_ids(chunks: list[StreamChunk]) -> list[tuple[object, ...]]:
        return [
            (c.role, c.content, c.done, c.thinking, [t.name for t in c.tool_calls]) for c in chunks
        ]

    assert strip_ids(seen) == strip_ids(expected)
    assert result.reply == "3"
    assert result.stop_reason == "end_turn"


async def test_the_result_is_typed_by_output_type() -> None:
    class Answer(BaseModel):
        value: int

    agent = SimpleAgent(provider=ScriptedProvider(['{"value": 3}']))
    stream = agent.run_stream("1+2?", output_type=Answer)
    chunks = [c async for c in stream]
    assert chunks[0].role == "user"
    assert (await stream.result()).output_value == Answer(value=3)


async def test_result_without_iterating_runs_to_the_end() -> None:
    agent = SimpleAgent(provider=ScriptedProvider([call("add", a=2, b=2), "4"]), tools=[add])
    result = await agent.run_stream("2+2").result()
    assert result.reply == "4"


async def test_a_failing_run_raises_from_the_iteration() -> None:
    agent = SimpleAgent(provider=ScriptedProvider([ProviderError("down", status=503)]))
    stream = agent.run_stream("hello")
    with pytest.raises(ProviderError, match="down"):
        async for _ in stream:
            pass
    with pytest.raises(ProviderError):
        await stream.result()


async def test_a_reader_that_stops_at_a_tool_call_stops_the_run_before_the_tool() -> None:
    ran: list[str] = []

    @tool
    async def launch() -> str:
        """Irreversible."""
        ran.append("launched")
        return "launched"

    agent = SimpleAgent(provider=ScriptedProvider([call("launch"), "unused"]), tools=[launch])
    async with agent.run_stream("go") as stream:
        async for chunk in stream:
            if chunk.tool_calls:
                break  # the reader decides: no
    assert ran == []
    assert agent.last_result is not None
    assert agent.last_result.stop_reason == "cancelled"
    assert [m.role for m in agent.messages] == ["user"]
    with pytest.raises(RunError, match="cancelled") as info:
        await stream.result()
    assert info.value.result is agent.last_result


async def test_the_run_waits_for_a_slow_reader() -> None:
    agent = SimpleAgent(provider=ScriptedProvider([call("add", a=1, b=2), "3"]), tools=[add])
    tool_results_seen_early: list[bool] = []
    async with agent.run_stream("1+2") as stream:
        async for chunk in stream:
            if chunk.tool_calls:
                await asyncio.sleep(0.01)  # a slow reader; the run must not run ahead
                tool_results_seen_early.append(any(m.role == "tool" for m in agent.messages))
    assert tool_results_seen_early == [False]
    assert (await stream.result()).reply == "3"


async def test_a_stream_is_iterated_once_and_result_leaves_chunks_readable() -> None:
    agent = SimpleAgent(provider=ScriptedProvider(["hello there"]))
    stream = agent.run_stream("hi")
    result = await stream.result()
    chunks = [c async for c in stream]
    assert result.reply == "hello there"
    assert "".join(c.content for c in chunks if c.role == "assistant") == "hello there"
    with pytest.raises(UserError, match="once"):
        stream.__aiter__()
