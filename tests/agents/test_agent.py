"""BaseAgent and SimpleAgent: construction, misuse, threads, event loops and re-entrancy."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Sequence
from typing import Any

import pytest

from heron import (
    BaseAgent,
    Capabilities,
    ChatResponse,
    LocalToolClient,
    MemoryStorage,
    Message,
    Provider,
    SimpleAgent,
    Skill,
    StreamChunk,
    ToolContext,
    UserError,
    tool,
)
from heron.testing import Reply, ScriptedProvider, call


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


# -- construction and misuse get a clear error ---------------------------------


def test_misconfigured_agents_fail_at_construction() -> None:
    def plain(x: int) -> int:
        return x

    provider = ScriptedProvider([])
    with pytest.raises(UserError, match=r"not a Tool.*@tool"):
        SimpleAgent(provider=provider, tools=[plain])  # type: ignore[list-item]
    with pytest.raises(UserError, match="lists"):
        SimpleAgent(provider=provider, tools=add)  # type: ignore[arg-type]
    with pytest.raises(UserError, match="max_turns"):
        SimpleAgent(provider=provider, max_turns="5")  # type: ignore[typeddict-item]
    with pytest.raises(UserError, match="skills"):
        SimpleAgent(provider=provider, skills=[add])  # type: ignore[list-item]


def test_a_provider_with_a_sync_chat_is_refused() -> None:
    class Blocking(Provider):
        @property
        def capabilities(self) -> Capabilities:
            return Capabilities()

        def chat(self, messages: Any, *, tools: Any = None, on_chunk: Any = None) -> Any:  # type: ignore[override]
            return ChatResponse(content="x")

    with pytest.raises(UserError, match="must be `async def`"):
        SimpleAgent(provider=Blocking())


async def test_none_for_optional_lists_is_accepted() -> None:
    agent = SimpleAgent(provider=ScriptedProvider(["hi"]), tools=None, skills=None)  # type: ignore[arg-type]
    assert (await agent.run("hello")).reply == "hi"


async def test_a_base_agent_whose_client_lacks_a_skills_tools_is_refused() -> None:
    skill = Skill(name="math", description="Maths.", instructions="Use add.", tools=[add])
    agent = BaseAgent(
        provider=ScriptedProvider(["x"]), tool_client=LocalToolClient(), skills=[skill]
    )
    with pytest.raises(UserError, match="add"):
        await agent.run("hi")


@pytest.mark.parametrize("prompt", [None, 123, ["hi"], b"bytes"])
async def test_a_prompt_that_is_not_text_or_a_message_is_refused(prompt: Any) -> None:
    agent = SimpleAgent(provider=ScriptedProvider(["x"]))
    with pytest.raises(UserError, match="a prompt must be a str or a Message"):
        await agent.run(prompt)
    assert agent.messages == []
    json.dumps(agent.state())


async def test_on_chunk_can_be_passed_positionally_like_the_seed() -> None:
    chunks: list[StreamChunk] = []
    await SimpleAgent(provider=ScriptedProvider(["hi"])).run("hello", chunks.append)
    assert chunks[0].content == "hello"


async def test_a_resumed_simple_agent_keeps_its_tool_environment() -> None:
    @tool
    async def ticket(context: ToolContext) -> str:
        """Open a ticket."""
        assert context.ids is not None
        return f"{context.env_id}: {await context.ids.next('ticket')}"

    storage = MemoryStorage()
    first = SimpleAgent(
        provider=ScriptedProvider([call("ticket"), "ok"]),
        tools=[ticket],
        name="support",
        storage=storage,
    )
    await first.run("open one")
    second = SimpleAgent(
        provider=ScriptedProvider([call("ticket"), "ok"]),
        tools=[ticket],
        state=first.state(),
        storage=storage,
    )
    result = await second.run("open another")
    assert result.tool_calls[0].result == "support: ticket-2"


# -- threads, event loops, re-entrancy ------------------------------------------


def test_a_second_thread_running_the_same_agent_is_refused() -> None:
    started, release = threading.Event(), threading.Event()

    def slow(messages: Sequence[Message]) -> str:
        started.set()
        release.wait(10)
        return "first"

    agent = SimpleAgent(provider=ScriptedProvider([slow, "second"]))
    outcome: list[str] = []
    worker = threading.Thread(target=lambda: outcome.append(agent.run_sync("a").reply))
    worker.start()
    try:
        assert started.wait(10)
        with pytest.raises(UserError, match="another event loop or thread"):
            agent.run_sync("b")
    finally:
        release.set()
        worker.join(10)
    assert outcome == ["first"]
    assert agent.run_sync("c").reply == "second"  # free again afterwards


def test_ids_keep_working_across_run_sync_loops() -> None:
    @tool
    async def ref(context: ToolContext) -> str:
        """Hand out a ref id."""
        assert context.ids is not None
        return await context.ids.next()

    agent = SimpleAgent(
        provider=ScriptedProvider([call("ref"), "a", call("ref"), "b"]), tools=[ref]
    )
    first = agent.run_sync("one")
    second = agent.run_sync("two")
    assert [first.tool_calls[0].result, second.tool_calls[0].result] == ["ref-1", "ref-2"]


def test_an_agent_whose_loop_died_mid_run_can_run_again() -> None:
    asked = asyncio.Event()

    def hang(messages: Sequence[Message]) -> Reply:
        asked.set()
        return Reply(text="never", delay=30)

    agent = SimpleAgent(provider=ScriptedProvider([hang, "again"]))
    loop = asyncio.new_event_loop()
    task = loop.create_task(agent.run("hang"))
    loop.run_until_complete(asyncio.wait_for(asked.wait(), timeout=5))  # in its model call
    loop.close()  # the run never finished
    assert not task.done()
    assert agent.run_sync("hello").reply == "again"


async def test_an_agent_running_itself_from_a_tool_fails_clearly() -> None:
    agent: SimpleAgent

    @tool
    async def recurse() -> str:
        """Calls its own agent."""
        return (await agent.run("again")).reply

    agent = SimpleAgent(provider=ScriptedProvider([call("recurse"), "ok"]), tools=[recurse])
    result = await asyncio.wait_for(agent.run("go"), timeout=5)
    assert result.tool_calls[0].is_error
    assert "inside its own run" in result.tool_calls[0].result
