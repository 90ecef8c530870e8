"""agent.as_tool(): a worker agent the parent's model calls like any tool."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

import pytest

from heron import (
    AgentTool,
    Capabilities,
    LocalToolClient,
    Message,
    Provider,
    ProviderError,
    SimpleAgent,
    StreamChunk,
    ToolContext,
    UserError,
    tool,
)
from heron.testing import Reply, ScriptedProvider, Step, call, is_compaction_request


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def worker(name: str, *steps: Step, instruction: str = "") -> SimpleAgent:
    return SimpleAgent(
        provider=ScriptedProvider(steps),
        name=name,
        instruction=instruction,
        tools=[add],
    )


async def test_the_parent_model_sees_a_tool_taking_a_task() -> None:
    researcher = worker("researcher", "x", instruction="You research facts.\nBe brief.")
    schema = researcher.as_tool().schema
    assert schema.name == "researcher"
    assert "'researcher'" in schema.description
    assert "You research facts." in schema.description
    assert "Be brief" not in schema.description
    assert schema.input_schema["required"] == ["task"]
    assert list(schema.input_schema["properties"]) == ["task"]

    custom = researcher.as_tool(name="ask-research", description="Ask the research desk.")
    assert (custom.name, custom.description) == ("ask-research", "Ask the research desk.")
    assert isinstance(custom, AgentTool) and custom.worker is researcher


def test_an_agent_name_that_cannot_be_a_tool_name_needs_one() -> None:
    agent = worker("research team", "x")
    with pytest.raises(UserError, match=r"as_tool\(name=\.\.\.\)"):
        agent.as_tool()
    assert agent.as_tool(name="research-team").name == "research-team"


async def test_worker_chunks_tokens_and_result_reach_the_parent(
    usage_adds_up: Callable[..., None],
) -> None:
    researcher = worker("researcher", call("add", a=2, b=3), "Herons eat 5 fish a day.")
    lead = SimpleAgent(
        provider=ScriptedProvider(
            [call("researcher", task="How many fish do herons eat?"), "Five fish a day."]
        ),
        name="lead",
        tools=[researcher.as_tool()],
    )
    chunks: list[StreamChunk] = []
    result = await lead.run("Tell me about herons", on_chunk=chunks.append)

    assert result.reply == "Five fish a day."
    (record,) = result.tool_calls
    assert record.result == "Herons eat 5 fish a day."
    (sub,) = record.runs
    assert sub is researcher.last_result
    assert (sub.agent_name, sub.delegated_by, sub.stop_reason) == ("researcher", "lead", "end_turn")
    assert [c.name for c in sub.tool_calls] == ["add"]
    assert result.sub_runs == [sub]

    # Tokens: the worker's roll up into the parent's run, counted once.
    assert result.own_input_tokens == lead.usage.input_tokens
    assert result.own_output_tokens == lead.usage.output_tokens
    assert result.input_tokens == lead.usage.input_tokens + sub.input_tokens
    usage_adds_up(result, lead, researcher)

    # Chunks: the worker's whole run, tagged, before the parent's tool result.
    mine = [c for c in chunks if c.agent is None]
    theirs = [c for c in chunks if c.agent == "researcher"]
    assert len(mine) + len(theirs) == len(chunks)
    assert theirs[0] == StreamChunk(
        role="user", content="How many fish do herons eat?", done=True, agent="researcher"
    )
    worker_tool = next(c for c in theirs if c.role == "tool")
    assert (worker_tool.tool_name, worker_tool.content) == ("add", "5")
    answer = [c.content for c in theirs if c.role == "assistant"]
    assert "".join(answer) == "Herons eat 5 fish a day."
    parent_tool = next(c for c in mine if c.role == "tool")
    assert chunks.index(parent_tool) > chunks.index(theirs[-1])
    assert parent_tool.content == "Herons eat 5 fish a day."


async def test_two_workers_called_in_one_turn_run_concurrently(
    usage_adds_up: Callable[..., None],
) -> None:
    a = worker("alpha", Reply(text="A done.", delay=0.02))
    b = worker("beta", Reply(text="B done.", delay=0.02))
    lead = SimpleAgent(
        provider=ScriptedProvider(
            [[call("alpha", task="do A"), call("beta", task="do B")], "Both done."]
        ),
        name="lead",
        tools=[a.as_tool(), b.as_tool()],
    )
    events: list[tuple[str, str]] = []

    def record(chunk: StreamChunk) -> None:
        if chunk.role == "user" and chunk.agent is not None:
            events.append(("start", chunk.agent))
        elif chunk.role == "tool" and chunk.agent is None:
            events.append(("finish", chunk.tool_name or ""))

    result = await lead.run("Do A and B", on_chunk=record)

    # Both workers had started before either finished: they overlapped.
    assert sorted(events[:2]) == [("start", "alpha"), ("start", "beta")]
    assert sorted(events[2:]) == [("finish", "alpha"), ("finish", "beta")]
    assert [r.agent_name for r in result.sub_runs] == ["alpha", "beta"]
    usage_adds_up(result, lead, a, b)


async def test_a_failing_worker_is_an_error_result_and_its_tokens_still_count(
    usage_adds_up: Callable[..., None],
) -> None:
    broken = worker("broken", call("add", a=1, b=1), ProviderError("model down", status=503))
    fine = worker("fine", Reply(text="Fine.", delay=0.01))
    lead = SimpleAgent(
        provider=ScriptedProvider(
            [[call("broken", task="t1"), call("fine", task="t2")], "One worked."]
        ),
        name="lead",
        tools=[broken.as_tool(), fine.as_tool()],
    )
    result = await lead.run("go")

    assert result.reply == "One worked."
    failed, ok = result.tool_calls
    assert failed.is_error and "model down" in failed.result
    assert not ok.is_error and ok.result == "Fine."
    (partial,) = failed.runs
    assert partial.stop_reason == "error" and "model down" in (partial.error or "")
    assert partial.input_tokens > 0  # its first turn happened and was paid for
    usage_adds_up(result, lead, broken, fine)


async def test_a_worker_stopping_without_an_answer_is_an_error_result() -> None:
    looping = SimpleAgent(
        provider=ScriptedProvider([call("add", a=1, b=1)]), name="looping", tools=[add], max_turns=1
    )
    lead = SimpleAgent(
        provider=ScriptedProvider([call("looping", task="t"), "ok"]),
        tools=[looping.as_tool()],
    )
    result = await lead.run("go")
    (record,) = result.tool_calls
    assert record.is_error
    assert record.result == "agent 'looping' stopped (max_turns) without an answer"
    assert record.runs[0].stop_reason == "max_turns"


async def test_nested_workers_two_levels_deep(usage_adds_up: Callable[..., None]) -> None:
    researcher = worker("researcher", "Grey herons live 5 years.")
    manager = SimpleAgent(
        provider=ScriptedProvider(
            [call("researcher", task="Lifespan of grey herons?"), "About 5 years."]
        ),
        name="manager",
        tools=[researcher.as_tool()],
    )
    lead = SimpleAgent(
        provider=ScriptedProvider([call("manager", task="Find the lifespan."), "5 years."]),
        name="lead",
        tools=[manager.as_tool()],
    )
    chunks: list[StreamChunk] = []
    result = await lead.run("How long do herons live?", on_chunk=chunks.append)

    assert [(r.agent_name, r.delegated_by) for r in result.walk()] == [
        ("lead", None),
        ("manager", "lead"),
        ("researcher", "manager"),
    ]
    assert result.sub_runs[0].sub_runs[0] is researcher.last_result
    usage_adds_up(result, lead, manager, researcher)
    # The innermost worker's chunks keep its own name all the way up.
    said = "".join(c.content for c in chunks if c.agent == "researcher" and c.role == "assistant")
    assert said == "Grey herons live 5 years."
    assert {c.agent for c in chunks} == {None, "manager", "researcher"}


async def test_cancelling_the_parent_cancels_the_worker(
    assert_consistent: Callable[[Sequence[Message]], None],
) -> None:
    # The worker finishes a tool turn (spending tokens), then thinks for a minute.
    slow = worker("slow", call("add", a=1, b=2), Reply(text="never", delay=60))
    lead = SimpleAgent(
        provider=ScriptedProvider([call("slow", task="take your time")]),
        name="lead",
        tools=[slow.as_tool()],
    )
    busy = asyncio.Event()

    def on_chunk(chunk: StreamChunk) -> None:
        if chunk.agent == "slow" and chunk.role == "tool":
            busy.set()

    run = asyncio.ensure_future(lead.run("go", on_chunk=on_chunk))
    await busy.wait()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run

    partial = lead.last_result
    assert partial is not None and partial.stop_reason == "cancelled"
    (record,) = partial.tool_calls
    assert record.is_error
    (sub,) = record.runs
    assert sub is slow.last_result and sub.stop_reason == "cancelled"
    # The worker's finished turn is counted into the cancelled parent's totals.
    assert sub.input_tokens == slow.usage.input_tokens > 0
    assert partial.input_tokens == partial.own_input_tokens + sub.input_tokens
    assert partial.output_tokens == partial.own_output_tokens + sub.output_tokens
    assert partial.own_input_tokens == lead.usage.input_tokens > 0
    assert_consistent(lead.messages)
    assert_consistent(slow.messages)


async def test_a_worker_compacting_its_memory_counts_the_compaction_into_the_parent(
    usage_adds_up: Callable[..., None],
) -> None:
    fetched: list[int] = []

    @tool
    def fetch(page: int) -> str:
        """Fetch a page of a long document."""
        fetched.append(page)
        return f"page {page}: " + "lorem ipsum " * 15

    def step(messages: Sequence[Message]) -> Step:
        if is_compaction_request(messages):
            return "Task: read pages. Read so far: several."
        read = len(fetched)
        return call("fetch", page=read + 1) if read < 4 else "Read four pages."

    reader = SimpleAgent(
        provider=ScriptedProvider(
            [step] * 30, capabilities=Capabilities(context_window=240, safe_usage_ratio=0.5)
        ),
        name="reader",
        tools=[fetch],
    )
    lead = SimpleAgent(
        provider=ScriptedProvider([call("reader", task="Read four pages."), "Done."]),
        name="lead",
        tools=[reader.as_tool()],
    )
    result = await lead.run("Have the document read.")

    assert reader.compactions >= 1
    (sub,) = result.sub_runs
    assert sub.reply == "Read four pages."
    compaction_requests = [
        r
        for r in reader.provider.requests  # type: ignore[attr-defined]
        if is_compaction_request(r.messages)
    ]
    assert compaction_requests and sub.turns < len(reader.provider.requests)  # type: ignore[attr-defined]
    usage_adds_up(result, lead, reader)  # the compaction's tokens included


async def test_a_worker_tool_called_outside_any_run_just_runs() -> None:
    helper = worker("helper", "Done.")
    res = await helper.as_tool().run({"task": "do it"}, ToolContext())
    assert (res.text, res.is_error) == ("Done.", False)
    assert helper.last_result is not None and helper.last_result.delegated_by is None


async def test_a_worker_cannot_call_its_own_parent() -> None:
    lead = SimpleAgent(provider=ScriptedProvider([call("back", task="t"), "done"]), name="lead")
    back = worker("back", call("lead", task="loop"), "gave up")
    for agent, other in ((back, lead), (lead, back)):
        assert isinstance(agent.tool_client, LocalToolClient)
        agent.tool_client.register_tool(other.as_tool())
    result = await lead.run("go")
    inner = result.sub_runs[0]
    assert inner.tool_calls[0].is_error
    assert "from inside its own run" in inner.tool_calls[0].result


@pytest.mark.parametrize(
    "arguments", [{}, {"task": 3}, {"task": "t", "extra": 1}], ids=["none", "number", "extra"]
)
async def test_bad_arguments_reach_the_model_without_running_the_worker(
    arguments: dict[str, object],
) -> None:
    helper = worker("helper")
    res = await helper.as_tool().run(arguments, ToolContext())
    assert res.is_error
    assert "expected one string argument 'task'" in res.text
    assert helper.provider.requests == []  # type: ignore[attr-defined]


async def test_worker_chunks_reach_a_streamed_parent() -> None:
    helper = worker("helper", "Helped.")
    lead = SimpleAgent(
        provider=ScriptedProvider([call("helper", task="help"), "Thanks."]),
        tools=[helper.as_tool()],
    )
    async with lead.run_stream("go") as stream:
        chunks = [c async for c in stream]
    assert (await stream.result()).reply == "Thanks."
    said = "".join(c.content for c in chunks if c.agent == "helper" and c.role == "assistant")
    assert said == "Helped."


async def test_a_worker_cut_off_by_its_token_limit_says_so_to_the_parent(
    cut_off: Callable[[str], Provider],
) -> None:
    terse = SimpleAgent(provider=cut_off("Herons are"), name="terse")
    lead = SimpleAgent(
        provider=ScriptedProvider([call("terse", task="Describe herons"), "ok"]),
        name="lead",
        tools=[terse.as_tool()],
    )
    result = await lead.run("go")
    (record,) = result.tool_calls
    assert record.runs[0].stop_reason == "max_tokens"
    assert record.result == (
        "Herons are\n\n[agent 'terse''s answer was cut off by its model's token limit]"
    )
