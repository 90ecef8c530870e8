"""Tool-call ids: unique within a conversation, and the same in the stream as in the history."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from heron import Message, SimpleAgent, StreamChunk, ToolCall, tool
from heron.testing import Reply, ScriptedProvider


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def test_missing_and_repeated_call_ids_get_unique_ones(
    assert_consistent: Callable[[Sequence[Message]], None],
) -> None:
    calls = [
        ToolCall(id="", name="add", arguments={"a": 1, "b": 1}),
        ToolCall(id="dup", name="add", arguments={"a": 2, "b": 2}),
        ToolCall(id="dup", name="add", arguments={"a": 50, "b": 50}),
    ]
    provider = ScriptedProvider([Reply(tool_calls=calls), "ok"])
    agent = SimpleAgent(provider=provider, tools=[add])
    result = await agent.run("go")

    ids = [r.id for r in result.tool_calls]
    assert len(set(ids)) == 3 and "" not in ids and ids[1] == "dup"
    assert [r.result for r in result.tool_calls] == ["2", "4", "100"]
    assert_consistent(agent.messages)


async def test_ids_are_unique_across_the_conversation_and_streamed_as_stored() -> None:
    same = ToolCall(id="call_0", name="add", arguments={"a": 1, "b": 1})
    chunks: list[StreamChunk] = []
    provider = ScriptedProvider([Reply(tool_calls=[same]), Reply(tool_calls=[same]), "done"])
    agent = SimpleAgent(provider=provider, tools=[add])
    result = await agent.run("go", chunks.append)
    ids = [r.id for r in result.tool_calls]
    assert ids[0] == "call_0" and len(set(ids)) == 2
    streamed = [c.tool_calls[0].id for c in chunks if c.tool_calls]
    executed = [c.tool_call_id for c in chunks if c.role == "tool"]
    assert streamed == executed == ids
