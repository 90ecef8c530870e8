"""Skills: instructions bundled with the tools they depend on."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .._core import UserError
from ._tool import Tool

__all__ = ["Skill", "merge_tools", "render_skills", "require_skills"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Skill:
    """Instructions and the tools they need, included in an agent as one unit.

    The description is the model's first signal of whether the skill applies:
    write it as "use this when ..."::

        math = Skill(
            name="math-helper",
            description="Use for exact arithmetic.",
            instructions="- Always use math-sum for addition.",
            tools=[math_sum],
        )
    """

    name: str
    """Short identifier shown to the model."""
    description: str
    """When to use the skill."""
    instructions: str
    """How to go about it, folded into the system prompt."""
    tools: Sequence[Tool] = field(default_factory=tuple)
    """Tools the instructions rely on; registered with the skill."""

    def __post_init__(self) -> None:
        tools = self.tools
        if isinstance(tools, Tool) or not all(isinstance(t, Tool) for t in tools):
            raise UserError(f"skill {self.name!r}: tools must be a list of Tool objects")
        object.__setattr__(self, "tools", tuple(tools))  # frozen, hashable, not the caller's list

    def render(self) -> str:
        """The skill's entry in the ``SKILLS:`` block of the system prompt."""
        return f"{self.name} - {self.description}\n{self.instructions.strip()}"


def render_skills(skills: Sequence[Skill]) -> str:
    """The ``SKILLS:`` block for ``skills``, or an empty string when there are none."""
    if not skills:
        return ""
    return "SKILLS:\n\n" + "\n\n".join(s.render() for s in skills)


def require_skills(skills: Iterable[Skill]) -> tuple[Skill, ...]:
    """``skills`` as a tuple, or a :class:`UserError` if it is not a list of skills."""
    items = None if isinstance(skills, Skill) else tuple(skills)
    if items is None or not all(isinstance(s, Skill) for s in items):
        raise UserError("skills must be a list of Skill objects")
    return items


def merge_tools(tools: Iterable[Tool], skills: Iterable[Skill]) -> list[Tool]:
    """All tools of ``tools`` and ``skills``, each registered once.

    A tool passed both directly and inside a skill (or in two skills) is kept
    once; two *different* tools sharing a name are a :class:`UserError`.
    """
    if isinstance(tools, Tool) or isinstance(skills, Skill):
        raise UserError("tools and skills must be lists, even of one item")
    skills = require_skills(skills)
    merged: dict[str, Tool] = {}
    for t in [*tools, *(t for s in skills for t in s.tools)]:
        if not isinstance(t, Tool):
            hint = " (decorate functions with @tool)" if callable(t) else ""
            raise UserError(f"not a Tool: {t!r}{hint}")
        seen = merged.get(t.name)
        if seen is None:
            merged[t.name] = t
        elif seen is not t and not seen.same_definition(t):
            raise UserError(f"two different tools are named {t.name!r}; tool names must be unique")
    return list(merged.values())
