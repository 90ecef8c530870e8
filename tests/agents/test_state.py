"""Saving and resuming agent state (in one process and across two), and refusing bad state."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from heron import (
    AgentState,
    Capabilities,
    ImagePart,
    Message,
    SimpleAgent,
    ToolCall,
    Usage,
    UserError,
    tool,
)
from heron.agents import STATE_VERSION
from heron.testing import Reply, ScriptedProvider, call


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def test_state_is_json_serialisable_and_versioned() -> None:
    agent = SimpleAgent(
        provider=ScriptedProvider([Reply(text="5", tool_calls=[call("add", a=2, b=3)]), "done"]),
        tools=[add],
        name="calc",
    )
    await agent.run("2+3")
    state = agent.state()
    text = json.dumps(state)  # plain JSON, nothing custom
    assert json.loads(text) == state
    assert state["version"] == STATE_VERSION
    assert state["name"] == "calc"
    assert [m["role"] for m in state["messages_full"]] == ["user", "assistant", "tool", "assistant"]
    assert state["messages"] == state["messages_full"]
    assert state["memory"] is None
    assert state["input_tokens"] == agent.usage.input_tokens > 0
    assert state["output_tokens"] == agent.usage.output_tokens > 0
    assert state["requests"] == 2


async def test_resume_continues_the_same_conversation_and_counters() -> None:
    first = SimpleAgent(provider=ScriptedProvider(["Hello Ada."]))
    await first.run("My name is Ada.")
    saved = json.loads(json.dumps(first.state()))

    provider = ScriptedProvider(
        [lambda msgs: "You are Ada." if "Ada" in msgs[0].text else "No idea."]
    )
    second = SimpleAgent(provider=provider, state=saved)
    result = await second.run("Who am I?")

    assert result.reply == "You are Ada."
    assert [m.text for m in provider.requests[0].messages] == [
        "My name is Ada.",
        "Hello Ada.",
        "Who am I?",
    ]
    assert second.usage.requests == 2
    assert second.usage.input_tokens == first.usage.input_tokens + result.input_tokens


async def test_memory_and_compaction_count_survive_a_resume() -> None:
    caps = Capabilities(context_window=120, safe_usage_ratio=0.5)

    def model(msgs: Sequence[Message]) -> str:
        if "long-term memory" in msgs[0].text:
            return "The user likes herons."
        return "ok " * 25

    agent = SimpleAgent(provider=ScriptedProvider([model] * 10, capabilities=caps))
    for i in range(3):
        await agent.run(f"chat {i} " + "words " * 20)
    assert agent.compactions >= 1
    resumed = SimpleAgent(provider=ScriptedProvider([]), state=agent.state())
    assert resumed.memory == "The user likes herons."
    assert resumed.compactions == agent.compactions
    assert resumed.messages == agent.messages
    assert resumed.messages_full == agent.messages_full


def test_an_unknown_state_version_is_refused() -> None:
    with pytest.raises(UserError, match="version 99"):
        SimpleAgent(provider=ScriptedProvider([]), state={"version": 99})


def test_a_malformed_state_is_refused_clearly() -> None:
    with pytest.raises(UserError, match="invalid agent state"):
        SimpleAgent(provider=ScriptedProvider([]), state={"version": 1, "messages": "nope"})
    with pytest.raises(UserError, match="invalid agent state"):
        SimpleAgent(provider=ScriptedProvider([]), state={"version": 1, "unknown_field": 1})


def test_agent_state_model_round_trips() -> None:
    state = AgentState(memory="m", input_tokens=3)
    assert AgentState.load(state.model_dump()) == state


def test_the_saved_name_is_restored() -> None:
    agent = SimpleAgent(provider=ScriptedProvider([]), name="calc")
    assert SimpleAgent(provider=ScriptedProvider([]), state=agent.state()).name == "calc"
    assert SimpleAgent(provider=ScriptedProvider([]), state=agent.state(), name="x").name == "x"


async def test_provider_thinking_is_replayed_and_survives_state() -> None:
    block = {"type": "thinking", "thinking": "hmm", "signature": "sig=="}
    provider = ScriptedProvider(
        [Reply(thinking="hmm", provider_thinking=[block], tool_calls=[call("add", a=1, b=2)]), "3"]
    )
    agent = SimpleAgent(provider=provider, tools=[add])
    await agent.run("1+2")
    replayed = provider.requests[1].messages[1]
    assert replayed.provider_thinking == (block,)
    resumed = SimpleAgent(
        provider=ScriptedProvider([]), state=json.loads(json.dumps(agent.state()))
    )
    assert resumed.messages[1].provider_thinking == (block,)
    assert resumed.messages[1].thinking == "hmm"


async def test_images_survive_state() -> None:
    png = b"\x89PNG\r\n\x1a\n fake"
    agent = SimpleAgent(provider=ScriptedProvider(["a cat"]))
    await agent.run(Message.user("What is this?", ImagePart(data=png)))
    resumed = SimpleAgent(
        provider=ScriptedProvider([]), state=json.loads(json.dumps(agent.state()))
    )
    assert resumed.messages[0].images == (ImagePart(data=png),)


async def test_state_saved_between_a_call_and_its_result_resumes_cleanly(
    assert_consistent: Callable[[Sequence[Message]], None],
) -> None:
    saved: list[dict[str, Any]] = []
    agent: SimpleAgent

    def checkpoint(call: ToolCall) -> None:
        saved.append(json.loads(json.dumps(agent.state())))

    agent = SimpleAgent(
        provider=ScriptedProvider([call("add", a=1, b=2), "3"]),
        tools=[add],
        on_tool_call=checkpoint,
    )
    await agent.run("1+2")
    # The process "died" after the checkpoint: resume from it.
    provider = ScriptedProvider(["Sorry, that was interrupted."])
    resumed = SimpleAgent(provider=provider, state=saved[0], tools=[add])
    assert_consistent(resumed.messages)
    assert resumed.messages[-1].is_error and "interrupted" in resumed.messages[-1].text
    await resumed.run("go on")
    assert_consistent(provider.requests[0].messages[1:])


def test_broken_saved_state_is_refused_clearly() -> None:
    provider = ScriptedProvider([])
    with pytest.raises(UserError, match=r"messages_full\[0\]: missing 'role'"):
        SimpleAgent(provider=provider, state={"version": 1, "messages_full": [{"content": "x"}]})
    bad_image = {"role": "user", "content": [{"type": "image", "data": "%%%"}]}
    with pytest.raises(UserError, match=r"messages\[0\]"):
        SimpleAgent(provider=provider, state={"version": 1, "messages": [bad_image]})


def test_bad_state_types_are_refused() -> None:
    with pytest.raises(UserError, match=r"json\.loads it first"):
        SimpleAgent(provider=ScriptedProvider([]), state='{"version": 1}')  # type: ignore[typeddict-item]
    bad = AgentState(messages=[{"role": "nobody", "content": "x"}])
    with pytest.raises(UserError, match=r"messages\[0\]"):
        SimpleAgent(provider=ScriptedProvider([]), state=bad)


def test_a_dict_that_is_not_saved_state_is_named_as_such() -> None:
    with pytest.raises(UserError, match="no 'version'"):
        SimpleAgent(provider=ScriptedProvider([]), state={"foo": 1})


SCRIPT = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from heron import SimpleAgent, tool
    from heron.testing import ScriptedProvider, call

    @tool
    def remember(fact: str) -> str:
        \"\"\"Store a fact.\"\"\"
        return "stored " + fact

    def model(messages):
        facts = [m.text for m in messages if m.role == "tool"]
        last = messages[-1]
        if last.role == "tool":
            return "ok"
        if last.text.startswith("remember "):
            return call("remember", fact=last.text.removeprefix("remember "))
        return "I know: " + ", ".join(facts)

    path = Path(sys.argv[1])
    state = json.loads(path.read_text()) if path.exists() else None
    agent = SimpleAgent(provider=ScriptedProvider([model] * 4), tools=[remember], state=state)
    result = agent.run_sync(sys.argv[2])
    path.write_text(json.dumps(agent.state()))
    print(result.reply)
    """
)


@pytest.mark.slow
def test_resume_across_two_processes(tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    script.write_text(SCRIPT)
    state = tmp_path / "state.json"

    def run(prompt: str) -> str:
        done = subprocess.run(
            [sys.executable, str(script), str(state), prompt],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return done.stdout.strip()

    assert run("remember herons fish") == "ok"
    assert run("remember cranes dance") == "ok"
    assert run("what do you know?") == "I know: stored herons fish, stored cranes dance"
    saved = json.loads(state.read_text())
    assert saved["requests"] == 5
    assert len(saved["messages_full"]) == 10


def test_with_memory_restarts_the_working_context_from_the_summary() -> None:
    state = AgentState(
        messages_full=[{"role": "user", "content": "hi"}],
        messages=[{"role": "user", "content": "hi"}],
        input_tokens=10,
        output_tokens=4,
        requests=2,
        context_tokens=7,
        compactions=1,
    )
    fresh = state.with_memory("They said hi.", Usage(input_tokens=5, output_tokens=3, requests=1))
    assert (fresh.memory, fresh.messages, fresh.messages_full) == (
        "They said hi.",
        [],
        state.messages_full,
    )
    assert (fresh.input_tokens, fresh.output_tokens, fresh.requests) == (15, 7, 3)
    assert fresh.compactions == 2 and 0 < fresh.context_tokens < state.context_tokens
    assert state.memory is None and state.messages  # the original is unchanged
