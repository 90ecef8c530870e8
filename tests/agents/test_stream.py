"""agent.run_stream(): the run's chunks read with ``async for``."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel

from heron import ProviderError, SimpleAgent, StreamChunk, tool
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


async def test_leaving_the_block_early_cancels_the_run_and_keeps_history_consistent() -> None:
    entered = asyncio.Event()

    @tool
    async def slow() -> str:
        """Takes forever."""
        entered.set()
        await asyncio.sleep(30)
        return "never"

    agent = SimpleAgent(provider=ScriptedProvider([call("slow"), "unused"]), tools=[slow])
    async with agent.run_stream("go") as stream:
        async for chunk in stream:
            if chunk.tool_calls:
                await asyncio.wait_for(entered.wait(), timeout=5)
                break
    assert agent.last_result is not None
    assert agent.last_result.stop_reason == "cancelled"
    assert [m.role for m in agent.messages] == ["user", "assistant", "tool"]
    with pytest.raises(asyncio.CancelledError):
        await stream.result()
