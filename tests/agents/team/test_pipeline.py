"""Pipeline: each agent's reply is the next one's prompt."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence

import pytest

from heron import (
    ImagePart,
    Message,
    Pipeline,
    ProviderError,
    RunError,
    SimpleAgent,
    StreamChunk,
    TeamResult,
    UserError,
    tool,
)
from heron.testing import Reply, ScriptedProvider, Step, call


def agent(name: str, *steps: Step) -> SimpleAgent:
    return SimpleAgent(provider=ScriptedProvider(steps), name=name)


def shout(messages: Sequence[Message]) -> str:
    return messages[-1].text.upper()


def exclaim(messages: Sequence[Message]) -> str:
    return messages[-1].text + "!"


async def test_three_steps_each_feeding_the_next() -> None:
    first = agent("first", "herons fish")
    second = agent("second", shout)
    third = agent("third", exclaim)
    chunks: list[StreamChunk] = []
    pipeline = Pipeline([first, second, third], name="shouters")
    result = await pipeline.run("say something", on_chunk=chunks.append)

    assert result.reply == "HERONS FISH!"
    assert result.history == ["first", "second", "third"]
    assert result.steps == [first.last_result, second.last_result, third.last_result]
    assert [s.messages[0].text for s in result.steps] == [
        "say something",
        "herons fish",
        "HERONS FISH",
    ]
    assert (result.team, result.prompt, result.stop_reason) == ("shouters", "say something", "done")
    assert pipeline.last_result is result

    # Totals are exactly the members' spending; the duration spans every step.
    members = (first, second, third)
    assert result.input_tokens == sum(a.usage.input_tokens for a in members)
    assert result.output_tokens == sum(a.usage.output_tokens for a in members)
    assert result.tokens_by_agent() == {
        a.name: (a.usage.input_tokens, a.usage.output_tokens) for a in members
    }
    assert result.duration >= sum(s.duration for s in result.steps)

    # Every step streams, tagged with its agent, in order.
    starts = [(c.agent, c.content) for c in chunks if c.role == "user"]
    assert starts == [
        ("first", "say something"),
        ("second", "herons fish"),
        ("third", "HERONS FISH"),
    ]


async def test_a_step_with_tools_and_slow_turns() -> None:
    @tool
    def count(text: str) -> int:
        """Count the words in a text."""
        return len(text.split())

    counter = SimpleAgent(
        provider=ScriptedProvider([call("count", text="a b c"), Reply(text="3 words", delay=0.01)]),
        name="counter",
        tools=[count],
    )
    result = await Pipeline([agent("writer", "a b c"), counter]).run("write")
    assert result.reply == "3 words"
    assert [c.name for c in result.steps[1].tool_calls] == ["count"]


async def test_a_failing_step_raises_and_keeps_what_ran() -> None:
    first = agent("first", "draft")
    broken = agent("broken", call("nothing"), ProviderError("overloaded", status=529))
    third = agent("third", "never")
    pipeline = Pipeline([first, broken, third])
    with pytest.raises(ProviderError, match="overloaded"):
        await pipeline.run("go")

    partial = pipeline.last_result
    assert partial is not None
    assert partial.stop_reason == "error" and "overloaded" in (partial.error or "")
    assert partial.history == ["first", "broken"]
    assert partial.steps[1].stop_reason == "error"
    assert partial.input_tokens == first.usage.input_tokens + broken.usage.input_tokens
    assert third.provider.requests == []  # type: ignore[attr-defined]


async def test_a_step_without_a_reply_stops_the_pipeline() -> None:
    silent = SimpleAgent(provider=ScriptedProvider([call("x")]), name="silent", max_turns=1)
    pipeline = Pipeline([silent, agent("next", "never")])
    with pytest.raises(RunError, match=r"step 1 \('silent'\) ended \(max_turns\)") as caught:
        await pipeline.run("go")
    assert caught.value.result is silent.last_result


async def test_cancelling_a_pipeline_cancels_the_running_step(
    cancel_after: Callable[..., Awaitable[None]],
) -> None:
    slow = agent("slow", Reply(text="never", delay=60))
    pipeline = Pipeline([agent("fast", "ok"), slow])
    await cancel_after(lambda on_chunk: pipeline.run("go", on_chunk=on_chunk), "slow")
    assert pipeline.last_result is not None
    assert pipeline.last_result.stop_reason == "cancelled"
    assert pipeline.last_result.steps[-1].stop_reason == "cancelled"


async def test_team_results_export_and_rebuild() -> None:
    pipeline = Pipeline([agent("a", "one"), agent("b", "two")])
    result = await pipeline.run("go")
    data = json.loads(result.to_json())
    assert "routing" not in data and "error" not in data
    assert data["id"] == result.id and data["created_at"] == result.created_at.isoformat()
    assert result.created_at <= result.steps[0].created_at
    rebuilt = TeamResult.from_dict(data)
    assert rebuilt.export() == result.export()
    assert (rebuilt.id, rebuilt.created_at) == (result.id, result.created_at)
    data["steps"][0]["output"][0]["content"] = "altered"
    with pytest.raises(ValueError, match="checksum"):
        TeamResult.from_dict(data)


def test_run_sync_runs_the_pipeline() -> None:
    result = Pipeline([agent("a", "one"), agent("b", exclaim)]).run_sync("go")
    assert result.reply == "one!"


async def test_run_sync_is_refused_inside_a_loop() -> None:
    with pytest.raises(UserError, match="running event loop"):
        Pipeline([agent("a", "x")]).run_sync("go")


@pytest.mark.parametrize(
    ("agents", "message"),
    [
        ([], "non-empty list of agents"),
        ("abc", "non-empty list of agents"),
        (["not an agent"], "must be heron agents, not str"),
    ],
)
def test_bad_pipelines_are_refused(agents: object, message: str) -> None:
    with pytest.raises(UserError, match=message):
        Pipeline(agents)  # type: ignore[arg-type]


async def test_bad_prompts_are_refused() -> None:
    pipeline = Pipeline([agent("a", "x")])
    for prompt in ("", "   ", None):
        with pytest.raises(UserError, match="non-empty string"):
            await pipeline.run(prompt)  # type: ignore[arg-type]
    assert pipeline.last_result is None


async def test_a_message_prompt_reaches_the_first_step_whole() -> None:
    looker = agent("looker", "A heron on one leg.")
    writer = agent("writer", "Poem.")
    photo = ImagePart(url="https://example.org/heron.png")
    result = await Pipeline([looker, writer]).run(Message.user("Describe this.", photo))

    assert result.prompt == "Describe this."
    first = looker.provider.requests[0].messages[-1]  # type: ignore[attr-defined]
    assert first.text == "Describe this." and photo in first.content
    assert writer.provider.requests[0].messages[-1].text == "A heron on one leg."  # type: ignore[attr-defined]
    assert "prompt_message" not in result.export()


async def test_a_message_prompt_needs_text_and_the_user_role() -> None:
    pipeline = Pipeline([agent("a", "x")])
    with pytest.raises(UserError, match="a user Message with text"):
        await pipeline.run(Message.user(ImagePart(url="https://example.org/heron.png")))
    with pytest.raises(UserError, match="must be a user message, not 'assistant'"):
        await pipeline.run(Message.assistant("hi"))
