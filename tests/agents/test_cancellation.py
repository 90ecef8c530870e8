"""Cancelling a run: history stays consistent, tools wind down, stale cancels are ignored."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

import pytest

from heron import (
    Message,
    SimpleAgent,
    tool,
)
from heron.testing import Reply, ScriptedProvider, call


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def test_cancelling_during_the_model_call_keeps_history_consistent() -> None:
    asked = asyncio.Event()

    def slow_model(messages: Sequence[Message]) -> Reply:
        asked.set()
        return Reply(text="never", delay=30)

    agent = SimpleAgent(provider=ScriptedProvider([slow_model]))
    task = asyncio.create_task(agent.run("slow"))
    await asyncio.wait_for(asked.wait(), timeout=5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, timeout=5)

    assert [m.role for m in agent.messages] == ["user"]
    assert agent.last_result is not None
    assert agent.last_result.stop_reason == "cancelled"
    assert not agent.last_result.stopped


async def test_cancelling_during_tools_cancels_them_and_records_results() -> None:
    entered = asyncio.Event()
    cancelled: list[str] = []

    @tool
    async def slow(name: str) -> str:
        """Takes forever."""
        entered.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(name)
            raise
        return "never"

    provider = ScriptedProvider([[call("slow", name="a"), call("add", a=1, b=2)], "unused"])
    agent = SimpleAgent(provider=provider, tools=[slow, add])
    task = asyncio.create_task(agent.run("go"))
    await asyncio.wait_for(entered.wait(), timeout=5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, timeout=5)

    assert cancelled == ["a"]
    roles = [m.role for m in agent.messages]
    assert roles == ["user", "assistant", "tool", "tool"]
    calls = agent.messages[1].tool_calls
    assert [m.tool_call_id for m in agent.messages[2:]] == [c.id for c in calls]
    assert agent.messages[2].is_error and "cancelled" in agent.messages[2].text
    assert agent.messages[3].text == "3"
    assert agent.last_result is not None and agent.last_result.stop_reason == "cancelled"

    # The agent is still usable and the next request is well formed.
    provider2 = ScriptedProvider(["fine"])
    agent.provider = provider2
    result = await agent.run("again")
    assert result.reply == "fine"


async def test_cancelling_a_one_call_turn_whose_tool_swallows_it_still_cancels(
    assert_consistent: Callable[[Sequence[Message]], None],
) -> None:
    entered = asyncio.Event()

    @tool
    async def stubborn() -> str:
        """Cleans up and returns even when cancelled."""
        entered.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            return "cleaned up"
        return "finished"

    agent = SimpleAgent(provider=ScriptedProvider([call("stubborn"), "done"]), tools=[stubborn])
    task = asyncio.create_task(agent.run("go"))
    await asyncio.wait_for(entered.wait(), timeout=5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, timeout=5)
    assert agent.last_result is not None and agent.last_result.stop_reason == "cancelled"
    assert_consistent(agent.messages)
    assert agent.messages[-1].text == "cleaned up"  # what really happened is kept


async def test_a_second_cancel_still_waits_for_tools_winding_down() -> None:
    entered: list[int] = []
    winding_down: list[int] = []
    all_entered, all_winding_down, release = asyncio.Event(), asyncio.Event(), asyncio.Event()

    @tool
    async def careful(n: int) -> str:
        """Finishes its write even when cancelled."""
        entered.append(n)
        if len(entered) == 2:
            all_entered.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            winding_down.append(n)
            if len(winding_down) == 2:
                all_winding_down.set()
            await release.wait()  # finishing the write
            return f"sent {n}"
        return "never"

    hooked: list[str] = []
    agent = SimpleAgent(
        provider=ScriptedProvider([[call("careful", n=1), call("careful", n=2)]]),
        tools=[careful],
        on_tool_result=lambda r: hooked.append(r.result),
    )
    hooked_when_the_run_ended: list[str] = []

    async def run() -> None:
        try:
            await agent.run("go")
        finally:
            hooked_when_the_run_ended.extend(hooked)

    task = asyncio.create_task(run())
    await asyncio.wait_for(all_entered.wait(), timeout=5)
    task.cancel()
    await asyncio.wait_for(all_winding_down.wait(), timeout=5)
    task.cancel()  # impatient: cancel again while the tools wind down
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, timeout=5)
    # The run waited for both tools: their real results are kept, and no hook fires late.
    assert sorted(hooked_when_the_run_ended) == ["sent 1", "sent 2"]
    assert [m.text for m in agent.messages if m.role == "tool"] == ["sent 1", "sent 2"]


async def test_a_cancellation_caught_earlier_does_not_cancel_later_runs() -> None:
    # A chat loop that stops one run and carries on with the next, in one task.
    me = asyncio.current_task()
    assert me is not None

    def stopped_while_answering(messages: Sequence[Message]) -> Reply:
        me.cancel()  # the user presses "stop" while the model call is in flight
        return Reply(text="slow", delay=30)

    provider = ScriptedProvider([stopped_while_answering, call("add", a=1, b=2), "3"])
    agent = SimpleAgent(provider=provider, tools=[add])
    with pytest.raises(asyncio.CancelledError):
        await agent.run("stop me")
    assert me.cancelling() == 1  # caught, not forgotten: exactly the stale state
    try:
        result = await agent.run("what is 1+2?")
    except asyncio.CancelledError:
        pytest.fail("the cancellation caught earlier cancelled a later run")
    finally:
        me.uncancel()
    assert result.stop_reason == "end_turn"
    assert result.tool_calls[0].result == "3" and not result.tool_calls[0].is_error


@pytest.mark.parametrize("calls", [1, 2])
async def test_a_cancelled_error_from_inside_a_tool_is_that_tools_failure(calls: int) -> None:
    @tool
    async def flaky() -> str:
        """Its own sub-request was cancelled."""
        raise asyncio.CancelledError

    script = [[call("flaky")] * calls, "recovered"]
    agent = SimpleAgent(provider=ScriptedProvider(script), tools=[flaky])
    result = await asyncio.wait_for(agent.run("go"), timeout=5)
    assert result.reply == "recovered"
    assert all(r.is_error and "cancel" in r.result for r in result.tool_calls)
