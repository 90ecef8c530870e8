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


async def test_calls_streamed_out_of_order_keep_their_ids_and_arguments() -> None:
    a = ToolCall(id="toolu_A", name="add", arguments={"a": 1, "b": 1})
    b = ToolCall(id="toolu_B", name="add", arguments={"a": 100, "b": 100})

    class OutOfOrder(ScriptedProvider):
        async def chat(self, messages, *, tools=None, on_chunk=None):  # type: ignore[no-untyped-def]
            response = await super().chat(messages, tools=tools)
            if on_chunk is not None:
                for c in reversed(response.tool_calls):
                    on_chunk(StreamChunk(role="assistant", tool_calls=(c,)))
                on_chunk(StreamChunk(role="assistant", done=True))
            return response

    chunks: list[StreamChunk] = []
    agent = SimpleAgent(provider=OutOfOrder([Reply(tool_calls=[a, b]), "ok"]), tools=[add])
    result = await agent.run("go", chunks.append)
    streamed = {c.tool_calls[0].id: c.tool_calls[0].arguments for c in chunks if c.tool_calls}
    stored = {r.id: r.arguments for r in result.tool_calls}
    assert streamed == stored == {"toolu_A": {"a": 1, "b": 1}, "toolu_B": {"a": 100, "b": 100}}
    results = {c.tool_call_id: c.content for c in chunks if c.role == "tool"}
    assert results == {"toolu_A": "2", "toolu_B": "200"}
