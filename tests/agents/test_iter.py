"""Driving a run turn by turn with ``agent.iter()``."""

from __future__ import annotations

import pytest

from heron import SimpleAgent, UserError, tool
from heron.testing import ScriptedProvider, call


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def _agent(provider: ScriptedProvider) -> SimpleAgent:
    return SimpleAgent(provider=provider, tools=[add])


async def test_each_iteration_is_one_turn_with_its_tool_calls() -> None:
    agent = _agent(ScriptedProvider([call("add", a=2, b=3), call("add", a=5, b=1), "6"]))
    turns = []
    async with agent.iter("add things") as run:
        async for turn in run:
            turns.append(turn)
    assert [t.index for t in turns] == [1, 2, 3]
    assert [[c.result for c in t.tool_calls] for t in turns] == [["5"], ["6"], []]
    assert [t.done for t in turns] == [False, False, True]
    assert turns[-1].message is not None and turns[-1].message.text == "6"
    assert run.result.stop_reason == "end_turn"
    assert run.result.reply == "6"
    assert agent.last_result is run.result
    assert run.result.duration > 0


async def test_a_message_added_between_turns_reaches_the_next_model_call() -> None:
    provider = ScriptedProvider([call("add", a=1, b=1), "done"])
    agent = _agent(provider)
    async with agent.iter("start") as run:
        first = await run.__anext__()
        assert not first.done
        await run.add("also check the integration lane")
        async for _ in run:
            pass
    last_request = provider.requests[-1].messages
    assert last_request[-1].role == "user"
    assert last_request[-1].text == "also check the integration lane"
    # The message sits after the tool result it followed, in the saved history too.
    roles = [m.role for m in agent.messages]
    assert roles[-3:] == ["tool", "user", "assistant"]


async def test_leaving_early_ends_the_run_cancelled_with_a_consistent_history() -> None:
    agent = _agent(ScriptedProvider([call("add", a=1, b=2), "never played"]))
    async with agent.iter("go") as run:
        async for turn in run:
            assert turn.tool_calls[0].result == "3"
            break
    assert run.done
    assert run.result.stop_reason == "cancelled"
    assert [m.role for m in agent.messages] == ["user", "assistant", "tool"]
    # The agent is free again: a new run takes the next scripted turn.
    result = await agent.run("again")
    assert result.reply == "never played"


async def test_add_after_the_run_is_over_is_refused() -> None:
    agent = _agent(ScriptedProvider(["hi"]))
    async with agent.iter("hello") as run:
        async for _ in run:
            pass
        with pytest.raises(UserError, match="the run is over"):
            await run.add("more")


async def test_using_the_run_outside_its_block_is_refused() -> None:
    run = _agent(ScriptedProvider(["hi"])).iter("hello")
    with pytest.raises(UserError, match="async with"):
        _ = run.result


async def test_a_failing_turn_raises_and_marks_the_result() -> None:
    agent = _agent(ScriptedProvider([RuntimeError("model down")]))
    with pytest.raises(RuntimeError, match="model down"):
        async with agent.iter("hello") as run:
            async for _ in run:
                pass
    assert run.result.stop_reason == "error"
    assert "model down" in (run.result.error or "")


async def test_add_or_another_step_during_a_turn_is_refused() -> None:
    import asyncio

    entered, release = asyncio.Event(), asyncio.Event()

    async def slow_turn(messages: object) -> object:
        entered.set()
        await release.wait()
        return call("add", a=1, b=1)

    agent = _agent(ScriptedProvider([slow_turn, "ok"]))
    async with agent.iter("go") as run:
        turn = asyncio.ensure_future(run.__anext__())
        await entered.wait()  # the model is mid-turn
        with pytest.raises(UserError, match="between turns"):
            await run.add("sneaked in")
        with pytest.raises(UserError, match="already in progress"):
            await run.__anext__()
        release.set()
        await turn
        async for _ in run:
            pass
    roles = [m.role for m in agent.messages]
    assert roles == ["user", "assistant", "tool", "assistant"]
