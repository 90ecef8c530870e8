"""agent.run_stream(): the run's chunks read with ``async for``."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Sequence

import pytest
from pydantic import BaseModel

from heron import (
    ChatResponse,
    ChunkCallback,
    FunctionTool,
    Message,
    ProviderError,
    RunError,
    SimpleAgent,
    StreamChunk,
    ToolSchema,
    UserError,
    tool,
)
from heron.testing import Reply, ScriptedProvider, Step, call


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def describe(chunk: StreamChunk) -> str:
    """A chunk's kind in one word, for the logs below."""
    if chunk.role != "assistant":
        return chunk.role
    return "call" if chunk.tool_calls else "done" if chunk.done else "text"


class Observed(ScriptedProvider):
    """A scripted provider that logs each time the run gets past one of its chunks."""

    def __init__(self, steps: Sequence[Step], log: list[str]) -> None:
        super().__init__(steps)
        self.log = log

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] | None = None,
        on_chunk: ChunkCallback | None = None,
    ) -> ChatResponse:
        if on_chunk is None:
            return await super().chat(messages, tools=tools)
        deliver: ChunkCallback = on_chunk

        async def observed(chunk: StreamChunk) -> None:
            delivered = deliver(chunk)
            if inspect.isawaitable(delivered):
                await delivered
            self.log.append(f"run past {describe(chunk)}")

        return await super().chat(messages, tools=tools, on_chunk=observed)


def launcher() -> tuple[FunctionTool, list[str]]:
    """An irreversible tool, and the list that records each time it really ran."""
    ran: list[str] = []

    @tool
    async def launch() -> str:
        """Irreversible."""
        ran.append("launched")
        return "launched"

    return launch, ran


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
    launch, ran = launcher()
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


async def test_the_run_waits_for_the_reader_at_each_chunk() -> None:
    log: list[str] = []

    @tool
    async def plus(a: int, b: int) -> int:
        """Add two integers."""
        log.append("tool ran")
        return a + b

    provider = Observed([call("plus", a=1, b=2), "3"], log)
    agent = SimpleAgent(provider=provider, tools=[plus])
    async with agent.run_stream("1+2") as stream:
        async for chunk in stream:
            # A slow reader: it gives the loop away while it holds the chunk, so a run
            # that did not wait for it would take its next step now.
            await asyncio.sleep(0)
            if chunk.tool_calls:
                assert not any(m.role == "tool" for m in agent.messages)
            log.append(f"reader done with {describe(chunk)}")
    assert (await stream.result()).reply == "3"
    # The run gets past each chunk only once the reader has finished with it.
    assert log == [
        "reader done with user",
        "reader done with call",
        "run past call",
        "reader done with done",
        "run past done",
        "tool ran",
        "reader done with tool",
        "reader done with text",
        "run past text",
        "reader done with done",
        "run past done",
    ]


async def test_a_stream_is_iterated_once_and_result_leaves_chunks_readable() -> None:
    agent = SimpleAgent(provider=ScriptedProvider(["hello there"]))
    stream = agent.run_stream("hi")
    result = await stream.result()
    chunks = [c async for c in stream]
    assert result.reply == "hello there"
    assert "".join(c.content for c in chunks if c.role == "assistant") == "hello there"
    with pytest.raises(UserError, match="once"):
        stream.__aiter__()


async def test_breaking_out_of_a_stream_without_async_with_cancels_the_run(
    assert_consistent: Callable[[Sequence[Message]], None],
) -> None:
    launch, ran = launcher()
    agent = SimpleAgent(provider=ScriptedProvider([call("launch"), "x"]), tools=[launch])
    stream = agent.run_stream("go")
    async for chunk in stream:
        if chunk.tool_calls:
            break
    with pytest.raises(RunError, match="cancelled"):
        await asyncio.wait_for(stream.result(), timeout=5)
    assert ran == []
    assert_consistent(agent.messages)


async def test_a_stream_cancelled_before_its_run_began_ends_its_reader() -> None:
    agent = SimpleAgent(provider=ScriptedProvider(["never"]))
    stream = agent.run_stream("hi")
    async with stream:
        pass  # leaves before the run has taken a single step

    async def read_all() -> list[StreamChunk]:
        return [c async for c in stream]

    assert await asyncio.wait_for(read_all(), timeout=5) == []  # ends, rather than hangs
    with pytest.raises(RunError, match="cancelled"):
        await stream.result()


async def test_cancelling_the_caller_of_result_cancels_the_run() -> None:
    launch, ran = launcher()
    asked = asyncio.Event()

    def model(messages: Sequence[Message]) -> Reply:
        asked.set()
        return Reply(tool_calls=[call("launch")], delay=30)

    agent = SimpleAgent(provider=ScriptedProvider([model, "done"]), tools=[launch])
    waiter = asyncio.ensure_future(agent.run_stream("go").result())
    await asyncio.wait_for(asked.wait(), timeout=5)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert ran == []
    assert agent.last_result is not None and agent.last_result.stop_reason == "cancelled"


async def test_the_partial_run_is_this_streams_own() -> None:
    agent = SimpleAgent(provider=ScriptedProvider(["earlier answer", "never"]))
    await agent.run("earlier")
    async with agent.run_stream("this one") as stream:
        async for _ in stream:
            break
    with pytest.raises(RunError) as info:
        await stream.result()
    partial = info.value.result
    assert partial is not None
    assert partial.stop_reason == "cancelled"
    assert [m.text for m in partial.messages] == ["this one"]


async def test_the_run_waits_for_the_reader_even_before_iteration_starts() -> None:
    launch, ran = launcher()
    agent = SimpleAgent(provider=ScriptedProvider([call("launch"), "x"]), tools=[launch])
    async with agent.run_stream("go") as stream:
        for _ in range(20):
            await asyncio.sleep(0)  # give a run that did not wait every chance to go on
        async for chunk in stream:
            if chunk.tool_calls:
                break
    assert ran == []
