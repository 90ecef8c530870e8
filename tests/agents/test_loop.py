"""The agent loop: streaming, tool dispatch, hooks, stop conditions, queueing."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from heron import (
    BaseAgent,
    Capabilities,
    ChatResponse,
    ChunkCallback,
    LocalToolClient,
    Message,
    Provider,
    SimpleAgent,
    StreamChunk,
    ToolCall,
    ToolCallRecord,
    ToolResult,
    ToolSchema,
    UserError,
    tool,
)
from heron.agents import current_tool_call
from heron.testing import Reply, ScriptedProvider, call


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(name="ask-user", stop_iteration_after_use=True)
def ask_user(question: str) -> str:
    """Ask the human a question and stop."""
    return f"asked: {question}"


class RecordingProvider(Provider):
    """Answers from a list without streaming, like some APIs; records the tools offered."""

    name = "recording"

    def __init__(self, replies: list[ChatResponse]) -> None:
        self.replies = replies
        self.tools_args: list[Sequence[ToolSchema] | None] = []

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities()

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] | None = None,
        on_chunk: ChunkCallback | None = None,
    ) -> ChatResponse:
        self.tools_args.append(tools)
        return self.replies.pop(0)


def kinds(chunks: Sequence[StreamChunk]) -> list[str]:
    """A compact picture of a chunk sequence."""
    out = []
    for c in chunks:
        if c.role == "user":
            out.append("user")
        elif c.role == "tool":
            out.append(f"tool:{c.tool_name}")
        elif c.tool_calls:
            out.append(f"call:{c.tool_calls[0].name}")
        elif c.thinking:
            out.append("thinking")
        elif c.done:
            out.append("done")
        else:
            out.append("text")
    return out


def squash(seq: list[str]) -> list[str]:
    """Collapse runs of repeated text/thinking deltas into one entry."""
    out: list[str] = []
    for k in seq:
        if out and k in ("text", "thinking") and out[-1] == k:
            continue
        out.append(k)
    return out


async def test_streams_the_seed_sequence_for_one_tool_call_then_answer() -> None:
    chunks: list[StreamChunk] = []
    agent = SimpleAgent(
        provider=ScriptedProvider([call("add", a=2, b=3), "The sum is 5."]), tools=[add]
    )
    result = await agent.run("What is 2 + 3?", on_chunk=chunks.append)

    assert squash(kinds(chunks)) == ["user", "call:add", "done", "tool:add", "text", "done"]
    assert chunks[0] == StreamChunk(role="user", content="What is 2 + 3?", done=True)
    tool_chunk = chunks[3]
    assert (tool_chunk.content, tool_chunk.done, tool_chunk.tool_name) == ("5", True, "add")
    assert tool_chunk.tool_call_id == chunks[1].tool_calls[0].id
    text = "".join(c.content for c in chunks if c.role == "assistant" and not c.done)
    assert text == "The sum is 5."
    assert all(not c.tool_calls for c in chunks if c.done)
    assert result.reply == "The sum is 5."
    assert result.stop_reason == "end_turn"


async def test_thinking_deltas_come_before_content_and_never_on_done() -> None:
    chunks: list[StreamChunk] = []
    provider = ScriptedProvider([Reply(text="Paris.", thinking="The capital of France is Paris.")])
    agent = SimpleAgent(provider=provider)
    result = await agent.run("Capital of France?", on_chunk=chunks.append)

    assert squash(kinds(chunks)) == ["user", "thinking", "text", "done"]
    for c in chunks:
        assert not (c.thinking and c.content)
        if c.done:
            assert c.thinking is None
    assert "".join(c.thinking or "" for c in chunks) == "The capital of France is Paris."
    assert agent.messages[-1].thinking == "The capital of France is Paris."
    assert result.reply == "Paris."


async def test_async_on_chunk_is_awaited() -> None:
    seen: list[str] = []

    async def on_chunk(chunk: StreamChunk) -> None:
        await asyncio.sleep(0)
        seen.append(chunk.role)

    agent = SimpleAgent(provider=ScriptedProvider([call("add", a=1, b=1), "2"]), tools=[add])
    await agent.run("1+1", on_chunk=on_chunk)
    assert seen[0] == "user" and "tool" in seen and seen[-1] == "assistant"


async def test_a_provider_that_does_not_stream_is_streamed_for_it() -> None:
    calls = [ToolCall(id="c1", name="add", arguments={"a": 1, "b": 2})]
    provider = RecordingProvider(
        [
            ChatResponse(content="Adding.", thinking="Use add.", tool_calls=tuple(calls)),
            ChatResponse(content="3"),
        ]
    )
    chunks: list[StreamChunk] = []
    await SimpleAgent(provider=provider, tools=[add]).run("1+2", chunks.append)
    assert kinds(chunks) == [
        "user",
        "thinking",
        "text",
        "call:add",
        "done",
        "tool:add",
        "text",
        "done",
    ]


async def test_tool_chunks_say_whether_the_call_failed() -> None:
    chunks: list[StreamChunk] = []
    agent = SimpleAgent(
        provider=ScriptedProvider([[call("add", a=1, b=1), call("add", a="x", b=1)], "ok"]),
        tools=[add],
    )
    await agent.run("go", chunks.append)
    assert sorted((c.content, c.is_error) for c in chunks if c.role == "tool")[0] == ("2", False)
    assert [c.is_error for c in chunks if c.role == "tool"].count(True) == 1


async def test_parallel_tool_calls_run_concurrently() -> None:
    # Each call waits until both have started: only concurrent dispatch can finish.
    started = 0
    both_started = asyncio.Event()

    @tool
    async def rendezvous(name: str) -> str:
        """Wait for the other call."""
        nonlocal started
        started += 1
        if started == 2:
            both_started.set()
        await asyncio.wait_for(both_started.wait(), timeout=5)
        return f"hello {name}"

    chunks: list[StreamChunk] = []
    provider = ScriptedProvider(
        [[call("rendezvous", name="a"), call("rendezvous", name="b")], "both done"]
    )
    agent = SimpleAgent(provider=provider, tools=[rendezvous])
    result = await agent.run("go", on_chunk=chunks.append)

    assert result.reply == "both done"
    assert [r.result for r in result.tool_calls] == ["hello a", "hello b"]
    assert squash(kinds(chunks))[:5] == [
        "user",
        "call:rendezvous",
        "call:rendezvous",
        "done",
        "tool:rendezvous",
    ]
    # Results are stored in call order, each right after the assistant message.
    tool_messages = [m for m in agent.messages if m.role == "tool"]
    assert [m.text for m in tool_messages] == ["hello a", "hello b"]
    assert [m.tool_call_id for m in tool_messages] == [c.id for c in agent.messages[1].tool_calls]


async def test_tool_failures_unknown_tools_and_bad_arguments_reach_the_model() -> None:
    @tool
    def explode() -> str:
        """Always fails."""
        raise RuntimeError("boom")

    provider = ScriptedProvider(
        [[call("explode"), call("no-such-tool"), call("add", a="x", b=1)], "recovered"]
    )
    agent = SimpleAgent(provider=provider, tools=[add, explode])
    result = await agent.run("try things")

    assert result.reply == "recovered"
    errors = {r.name: r.result for r in result.tool_calls}
    assert all(r.is_error for r in result.tool_calls)
    assert "boom" in errors["explode"]
    assert "unknown tool 'no-such-tool'" in errors["no-such-tool"]
    assert "add, explode" in errors["no-such-tool"]
    assert "a:" in errors["add"] and "integer" in errors["add"]
    # The model saw the errors on its next request.
    last_request = provider.requests[-1].messages
    assert [m.is_error for m in last_request if m.role == "tool"] == [True, True, True]


async def test_stop_iteration_tool_ends_the_run() -> None:
    provider = ScriptedProvider(
        [Reply(text="Let me ask.", tool_calls=[call("ask-user", question="Which?")])]
    )
    agent = SimpleAgent(provider=provider, tools=[ask_user])
    result = await agent.run("do something vague")

    assert result.stop_reason == "tool_stop"
    assert result.stopped
    assert result.reply == "Let me ask."
    assert result.tool_calls[0].result == "asked: Which?"
    assert provider.remaining == 0


async def test_max_turns_is_a_stop_reason_not_an_exception() -> None:
    provider = ScriptedProvider([call("add", a=1, b=1)] * 5)
    agent = SimpleAgent(provider=provider, tools=[add], max_turns=3)
    result = await agent.run("loop forever")

    assert result.stop_reason == "max_turns"
    assert result.turns == 3
    assert len(provider.requests) == 3
    assert not result.stopped
    # History stays consistent: every call has its result.
    assert agent.messages[-1].role == "tool"


async def test_an_agent_without_tools_offers_none_rather_than_an_empty_list() -> None:
    provider = RecordingProvider([ChatResponse(content="hi")])
    await SimpleAgent(provider=provider).run("hello")
    assert provider.tools_args == [None]


async def test_provider_without_tool_support_is_refused() -> None:
    provider = ScriptedProvider(["hi"], capabilities=Capabilities(supports_tools=False))
    agent = SimpleAgent(provider=provider)
    with pytest.raises(UserError, match="tool calling"):
        await agent.run("hello")
    assert provider.requests == []


async def test_a_run_made_during_another_queues_its_prompt() -> None:
    order: list[str] = []
    second_asked = asyncio.Event()

    async def first_answer(messages: Sequence[Message]) -> str:
        await second_asked.wait()  # still answering when the second run is asked for
        return "first answer"

    provider = ScriptedProvider([first_answer, "second answer"])
    agent = SimpleAgent(provider=provider)

    async def run(prompt: str) -> str:
        if prompt == "two":
            second_asked.set()
        result = await agent.run(prompt, on_chunk=lambda c: order.append(prompt))
        return result.reply

    first, second = await asyncio.wait_for(asyncio.gather(run("one"), run("two")), timeout=5)
    assert (first, second) == ("first answer", "second answer")
    assert [m.text for m in agent.messages] == ["one", "first answer", "two", "second answer"]
    # Every chunk of the first run arrived before any chunk of the queued one.
    assert order == sorted(order, key=lambda p: p == "two")
    assert order.count("one") > 1 and order.count("two") > 1


async def test_run_sync_works_outside_and_is_refused_inside_a_loop() -> None:
    agent = SimpleAgent(provider=ScriptedProvider(["hi"]))
    with pytest.raises(UserError, match="running event loop"):
        agent.run_sync("hello")


def test_run_sync_runs_the_loop() -> None:
    agent = SimpleAgent(
        provider=ScriptedProvider([call("add", a=4, b=5), "9", "again"]), tools=[add]
    )
    assert agent.run_sync("4+5").reply == "9"
    assert agent.run_sync("more").reply == "again"  # a second event loop works too


async def test_hooks_see_each_call_and_result() -> None:
    calls: list[ToolCall] = []
    records: list[ToolCallRecord] = []

    async def on_result(record: ToolCallRecord) -> None:
        records.append(record)

    agent = SimpleAgent(
        provider=ScriptedProvider([[call("add", a=1, b=2), call("add", a=3, b=4)], "ok"]),
        tools=[add],
        on_tool_call=calls.append,
        on_tool_result=on_result,
    )
    await agent.run("add twice")
    assert [c.arguments for c in calls] == [{"a": 1, "b": 2}, {"a": 3, "b": 4}]
    assert sorted(r.result for r in records) == ["3", "7"]
    assert all(r.duration is not None and r.duration >= 0 for r in records)


@pytest.mark.parametrize("calls", [1, 2])
async def test_a_failing_on_tool_call_hook_leaves_every_call_answered(
    calls: int, assert_consistent: Callable[[Sequence[Message]], None]
) -> None:
    def hook(call: ToolCall) -> None:
        raise RuntimeError("hook broke")

    agent = SimpleAgent(
        provider=ScriptedProvider([[call("add", a=1, b=1)] * calls]),
        tools=[add],
        on_tool_call=hook,
    )
    with pytest.raises(RuntimeError, match="hook broke"):
        await agent.run("go")
    assert_consistent(agent.messages)
    assert [m.role for m in agent.messages].count("tool") == calls


@pytest.mark.parametrize("calls", [1, 2])
async def test_a_failing_callback_after_a_tool_ran_keeps_its_real_result(calls: int) -> None:
    side_effects: list[int] = []

    @tool
    async def transfer(amount: int) -> str:
        """Moves money."""
        side_effects.append(amount)
        return f"sent {amount}"

    def on_result(record: object) -> None:
        raise RuntimeError("logger down")

    agent = SimpleAgent(
        provider=ScriptedProvider([[call("transfer", amount=100)] * calls]),
        tools=[transfer],
        on_tool_result=on_result,
    )
    with pytest.raises(RuntimeError, match="logger down"):
        await agent.run("pay")
    assert side_effects == [100] * calls
    tool_messages = [m for m in agent.messages if m.role == "tool"]
    assert [(m.text, m.is_error) for m in tool_messages] == [("sent 100", False)] * calls
    assert agent.last_result is not None
    assert all(r.duration is not None for r in agent.last_result.tool_calls)


async def test_an_exception_in_on_chunk_propagates_and_history_stays_consistent() -> None:
    def on_chunk(chunk: StreamChunk) -> None:
        if chunk.role == "tool":
            raise ValueError("consumer broke")

    agent = SimpleAgent(
        provider=ScriptedProvider([[call("add", a=1, b=2), call("add", a=2, b=2)], "x"]),
        tools=[add],
    )
    with pytest.raises(ValueError, match="consumer broke"):
        await agent.run("go", on_chunk=on_chunk)
    assert [m.role for m in agent.messages] == ["user", "assistant", "tool", "tool"]
    assert agent.last_result is not None and agent.last_result.stop_reason == "error"


async def test_base_agent_limits_tools_to_allowed_ones() -> None:
    @tool
    def secret() -> str:
        """Not for this agent."""
        return "leaked"

    client = LocalToolClient([add, secret])
    provider = ScriptedProvider([call("secret"), "ok"])
    agent = BaseAgent(provider=provider, tool_client=client, allowed_tools=["add"])
    result = await agent.run("hi")

    assert provider.requests[0].tool_names == ["add"]
    assert result.tool_calls[0].is_error
    assert "unknown tool 'secret'" in result.tool_calls[0].result


async def test_allowed_tools_missing_from_the_client_is_a_clear_error() -> None:
    agent = BaseAgent(
        provider=ScriptedProvider(["x"]), tool_client=LocalToolClient([add]), allowed_tools=["nope"]
    )
    with pytest.raises(UserError, match="nope"):
        await agent.run("hi")


async def test_provider_errors_propagate_with_a_recorded_result() -> None:
    from heron import ProviderError

    provider = ScriptedProvider([ProviderError("overloaded", status=529, retryable=True)])
    agent = SimpleAgent(provider=provider)
    with pytest.raises(ProviderError) as info:
        await agent.run("hello")
    assert info.value.status == 529
    assert agent.last_result is not None
    assert agent.last_result.stop_reason == "error"
    assert "overloaded" in (agent.last_result.error or "")
    assert [m.role for m in agent.messages] == ["user"]


async def test_system_prompt_and_history_are_sent_each_turn() -> None:
    provider = ScriptedProvider([call("add", a=1, b=1), "2"])
    agent = SimpleAgent(provider=provider, instruction="Be terse.", tools=[add])
    await agent.run("1+1")
    first, second = provider.requests
    assert first.messages[0] == Message.system("Be terse.")
    assert [m.role for m in second.messages] == ["system", "user", "assistant", "tool"]
    assert second.tool_names == ["add"]


async def test_tokens_are_counted_per_run_and_over_the_agent_life() -> None:
    provider = ScriptedProvider([call("add", a=1, b=1), "2", "second"])
    agent = SimpleAgent(provider=provider, tools=[add])
    r1 = await agent.run("1+1")
    r2 = await agent.run("more")
    assert r1.input_tokens > 0 and r1.output_tokens > 0
    assert r2.input_tokens > 0
    assert agent.usage.input_tokens == r1.input_tokens + r2.input_tokens
    assert agent.usage.output_tokens == r1.output_tokens + r2.output_tokens
    assert agent.usage.requests == 3
    assert r1.duration > 0


async def test_a_tool_client_sees_the_call_it_is_running() -> None:
    seen: list[ToolCall | None] = []

    class Recording(LocalToolClient):
        async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
            seen.append(current_tool_call())
            return await super().call_tool(name, arguments)

    agent = BaseAgent(
        provider=ScriptedProvider([Reply(tool_calls=[call("add", a=1, b=2)] * 2), "3 and 3"]),
        tool_client=Recording([add]),
    )
    result = await agent.run("Add twice.")
    calls = [c for c in seen if c is not None]
    assert len(calls) == len(seen) == 2
    assert [c.id for c in calls] == [r.id for r in result.tool_calls]
    assert len({c.id for c in calls}) == 2 and {c.name for c in calls} == {"add"}
    assert current_tool_call() is None  # outside a call
