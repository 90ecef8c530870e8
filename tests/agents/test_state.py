"""Saving and resuming agent state, in one process and across two."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

import pytest

from heron import AgentState, Capabilities, Message, SimpleAgent, UserError, tool
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
