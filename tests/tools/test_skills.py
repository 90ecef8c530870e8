"""Skills: how they render into the system prompt and how their tools merge."""

import dataclasses
from typing import Any

import pytest

from heron import Skill, Tool, ToolContext, UserError, tool
from heron.tools import merge_tools, render_skills


def total(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def other_total(a: int, b: int) -> int:
    """Also adds."""
    return a + b


class Echo(Tool):
    name = "echo"
    description = "Say it back."

    async def execute(self, arguments: dict[str, Any], context: ToolContext) -> Any:
        return arguments


MATH = Skill(
    name="math-helper",
    description="Use for exact arithmetic.",
    instructions="\n- Always use math-sum for addition.\n- Show your work.\n  ",
)


class TestRender:
    def test_name_dash_description_then_instructions(self) -> None:
        assert MATH.render() == (
            "math-helper - Use for exact arithmetic.\n"
            "- Always use math-sum for addition.\n- Show your work."
        )

    def test_no_skills_render_nothing(self) -> None:
        assert render_skills([]) == ""

    def test_skills_block(self) -> None:
        ask = Skill(name="ask", description="Use when stuck.", instructions="Ask the user.")
        assert render_skills([MATH, ask]) == (
            "SKILLS:\n\n"
            "math-helper - Use for exact arithmetic.\n"
            "- Always use math-sum for addition.\n- Show your work.\n\n"
            "ask - Use when stuck.\nAsk the user."
        )

    def test_skills_are_frozen_and_default_to_no_tools(self) -> None:
        assert MATH.tools == ()
        with pytest.raises(dataclasses.FrozenInstanceError):
            MATH.name = "x"  # type: ignore[misc]

    def test_skills_hold_their_tools_as_a_tuple(self) -> None:
        echo = Echo()
        tools: list[Tool] = [echo]
        skill = Skill(name="math", description="Maths.", instructions="Use echo.", tools=tools)
        tools.clear()
        assert skill.tools == (echo,)
        assert hash(skill) == hash(skill)


class TestMergeTools:
    def test_tools_then_skill_tools_in_order(self) -> None:
        adder, echo = tool(total), Echo()
        skill = Skill(name="s", description="d", instructions="i", tools=[echo])
        assert merge_tools([adder], [skill]) == [adder, echo]

    def test_a_tool_in_tools_and_in_a_skill_is_registered_once(self) -> None:
        adder = tool(total)
        skill = Skill(name="s", description="d", instructions="i", tools=[adder])
        merged = merge_tools([adder], [skill])
        assert merged == [adder]

    def test_a_tool_shared_by_two_skills_is_registered_once(self) -> None:
        echo = Echo()
        first = Skill(name="a", description="d", instructions="i", tools=[echo])
        second = Skill(name="b", description="d", instructions="i", tools=[echo])
        assert merge_tools([], [first, second]) == [echo]

    def test_two_wrappers_of_one_function_are_registered_once(self) -> None:
        first, second = tool(total), tool(total)
        assert first is not second
        skill = Skill(name="s", description="d", instructions="i", tools=[second])
        assert merge_tools([first], [skill]) == [first]

    def test_two_instances_of_a_tool_class_sharing_a_name_are_refused(self) -> None:
        # Instances may differ in state the schema does not show (a root, a client).
        with pytest.raises(UserError, match="echo"):
            merge_tools([Echo(), Echo()], [])

    def test_different_functions_sharing_a_name_are_refused(self) -> None:
        clash = tool(name="total")(other_total)
        with pytest.raises(UserError, match="two different tools are named 'total'"):
            merge_tools(
                [tool(total)], [Skill(name="s", description="", instructions="", tools=[clash])]
            )

    def test_different_tool_kinds_sharing_a_name_are_refused(self) -> None:
        with pytest.raises(UserError, match="'echo'"):
            merge_tools([Echo(), tool(name="echo")(total)], [])

    def test_a_changed_description_is_a_different_tool(self) -> None:
        with pytest.raises(UserError):
            merge_tools([Echo(), Echo(description="Repeat it.")], [])

    def test_nothing_to_merge(self) -> None:
        assert merge_tools([], []) == []
