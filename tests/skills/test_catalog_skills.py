"""The catalog skills: what they tell the model, and the tools they bring (each once)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from heron import SimpleAgent, Skill
from heron.skills import (
    backend_security,
    big_task,
    long_task_efficiency,
    planner,
    ui_ux_design,
)
from heron.testing import ScriptedProvider, call
from heron.tools.todo import todo_tools

TODO = {"todo-add", "todo-update", "todo-complete", "todo-list"}

# name -> (factory taking the project root, the tool names the skill must bring)
SKILLS: dict[str, tuple[Callable[[Path], Skill], set[str]]] = {
    "big-task": (lambda root: big_task(), TODO),
    "long-task-efficiency": (lambda root: long_task_efficiency(), set()),
    "ui-ux-design": (lambda root: ui_ux_design(), set()),
    "backend-security": (lambda root: backend_security(), set()),
}
NAMES = list(SKILLS)
# A built-in tool's name as it would appear in instructions text.
TOOL_MENTION = re.compile(r"\b(?:fs|bash|todo|browser|present)-[a-z]+(?:-[a-z]+)*\b")


def build(name: str, root: Path) -> Skill:
    factory, _ = SKILLS[name]
    return factory(root)


def agent_with(root: Path, *skills: Skill, **options: object) -> SimpleAgent:
    return SimpleAgent(
        provider=ScriptedProvider(["done"]),
        instruction="You are a careful engineer.",
        skills=list(skills),
        **options,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("name", NAMES)
class TestEachSkill:
    def test_is_named_in_kebab_case_and_says_when_to_use_it(
        self, name: str, tmp_path: Path
    ) -> None:
        skill = build(name, tmp_path)
        assert skill.name == name
        assert skill.description.startswith("Use this skill ")
        lines = skill.instructions.strip().splitlines()
        assert len(lines) >= 12, "instructions should be concrete, a dozen lines or more"
        assert all(line.startswith(("- ", "  ")) for line in lines), "one point per bullet"

    def test_brings_exactly_the_tools_it_needs(self, name: str, tmp_path: Path) -> None:
        skill = build(name, tmp_path)
        names = [t.name for t in skill.tools]
        assert len(names) == len(set(names))
        assert set(names) == SKILLS[name][1]

    def test_mentions_only_tools_it_brings(self, name: str, tmp_path: Path) -> None:
        skill = build(name, tmp_path)
        mentioned = set(TOOL_MENTION.findall(skill.instructions))
        assert mentioned <= {t.name for t in skill.tools}
        # A skill with tools tells the model how to use them.
        assert bool(mentioned) == bool(skill.tools)

    def test_each_call_returns_a_fresh_skill_and_fresh_tools(
        self, name: str, tmp_path: Path
    ) -> None:
        first, second = build(name, tmp_path), build(name, tmp_path)
        assert first is not second
        assert (first.name, first.description, first.instructions) == (
            second.name,
            second.description,
            second.instructions,
        )
        # Stateful tools (processes, a browser) must never be shared by two agents.
        assert not {id(t) for t in first.tools} & {id(t) for t in second.tools}

    def test_renders_into_the_system_prompt(self, name: str, tmp_path: Path) -> None:
        skill = build(name, tmp_path)
        prompt = agent_with(tmp_path, skill).system_prompt()
        assert prompt.startswith("You are a careful engineer.\n\nSKILLS:\n\n")
        assert f"\n{name} - {skill.description}\n" in prompt
        assert skill.instructions.strip() in prompt

    async def test_registers_its_tools_once(self, name: str, tmp_path: Path) -> None:
        skill = build(name, tmp_path)
        agent = agent_with(tmp_path, skill, tools=list(skill.tools))
        offered = [t.name for t in await agent.visible_tools()]
        assert sorted(offered) == sorted(SKILLS[name][1])


class TestTogether:
    async def test_every_skill_in_one_agent_registers_each_tool_once(self, tmp_path: Path) -> None:
        skills = [build(name, tmp_path) for name in NAMES]
        # planner() brings the todo tools too, and so does `tools`: one registration each.
        agent = agent_with(tmp_path, *skills, planner(), tools=todo_tools())
        offered = [t.name for t in await agent.visible_tools()]
        assert len(offered) == len(set(offered))
        assert set(offered) == TODO
        prompt = agent.system_prompt()
        assert [prompt.index(f"\n{name} - ") for name in NAMES] == sorted(
            prompt.index(f"\n{name} - ") for name in NAMES
        )


class TestAtWork:
    async def test_big_task_keeps_its_scope_on_the_todo_list(self, tmp_path: Path) -> None:
        provider = ScriptedProvider(
            [
                [call("todo-add", title="Login page"), call("todo-add", title="Signup page")],
                call("todo-complete", id="todo-1"),
                call("todo-list"),
                "Signup page is still open.",
            ]
        )
        agent = SimpleAgent(provider=provider, skills=[big_task()])
        result = await agent.run("Build the login and signup pages.")
        listing = result.tool_calls[-1].result
        assert "[x] todo-1: Login page" in listing
        assert "[ ] todo-2: Signup page" in listing
