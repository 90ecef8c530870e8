"""The planner skill: its prompt entry, its todo tools registered once, and it working."""

from heron import SimpleAgent
from heron.skills import planner
from heron.testing import ScriptedProvider, call
from heron.tools import todo_tools

TODO_TOOLS = ["todo-add", "todo-update", "todo-complete", "todo-list"]


async def test_renders_into_the_system_prompt_and_registers_its_tools_once() -> None:
    provider = ScriptedProvider(["ok"])
    # The todo tools passed directly as well: still one of each.
    agent = SimpleAgent(provider=provider, skills=[planner(), planner()], tools=todo_tools())
    await agent.run("build a shop")

    request = provider.requests[0]
    assert request.tool_names == TODO_TOOLS
    system = request.messages[0]
    assert system.role == "system"
    assert "SKILLS:" in system.text
    assert "planner - Use for any large, multi-step or vaguely specified job" in system.text
    assert "todo-complete" in system.text


def test_each_call_is_a_fresh_skill_naming_only_tools_it_brings() -> None:
    first, second = planner(), planner()
    assert first is not second
    assert first.name == "planner"
    assert [t.name for t in first.tools] == TODO_TOOLS
    for word in ["todo-add", "todo-update", "todo-complete", "todo-list"]:
        assert word in first.instructions


async def test_the_tools_it_brings_work() -> None:
    provider = ScriptedProvider([call("todo-add", title="Outline"), call("todo-list"), "done"])
    result = await SimpleAgent(provider=provider, skills=[planner()]).run("plan")
    assert not any(r.is_error for r in result.tool_calls)
    assert "[ ] todo-1: Outline" in result.tool_calls[1].result
