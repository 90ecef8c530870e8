"""The ``planner`` skill: a persistent, checkable todo list for big or vague jobs."""

from __future__ import annotations

from ..tools import Skill
from ..tools.todo import todo_tools

__all__ = ["planner"]

_INSTRUCTIONS = """
Keep the plan in the todo list, not in your head: the conversation may be compacted or
restarted, the list is not.
- Before starting a job with several steps, call todo-list: an earlier session may have left
  a plan. Continue it instead of starting over.
- Otherwise break the job into concrete, checkable steps and add each with todo-add (one
  outcome per item, e.g. "Add a /health endpoint returning 200", not "Backend stuff"). Put
  acceptance criteria and relevant file names in the notes.
- Work on one item at a time: todo-update it to in_progress when you start, todo-complete it
  only when it is really done and checked, not when you merely wrote code for it.
- When you learn something that changes the plan, add, retitle or cancel items (todo-update
  with status cancelled and the reason in the notes) rather than silently drifting from it.
- Record blockers and findings in the item's notes so a later session can pick them up.
- Before you say the job is finished, call todo-list: every item must be completed or
  cancelled with a reason. If some are still open, keep working or say exactly which remain.
"""


def planner() -> Skill:
    """Plan multi-step work in a todo list kept in tool storage (with the todo tools)."""
    return Skill(
        name="planner",
        description=(
            "Use for any large, multi-step or vaguely specified job: keeps a persistent, "
            "checkable todo list so progress survives long conversations and context resets."
        ),
        instructions=_INSTRUCTIONS,
        tools=todo_tools(),
    )
