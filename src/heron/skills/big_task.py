"""The ``big-task`` skill: carrying a large job through to the end, tracked on a todo list."""

from __future__ import annotations

from ..tools import Skill
from ..tools.todo import todo_tools

__all__ = ["big_task"]

_DESCRIPTION = (
    "Use this skill when the job is large or ambitious (many files, many features, a whole "
    "app or report) and the risk is stopping early or handing back a partial slice as if "
    "it were the whole."
)

_INSTRUCTIONS = """\
- Before any work, write down what "done" means for the whole request: every feature, file,
  page or question the user asked for. Put each one on the todo list with todo-add; keep the
  list, not your memory, as the record of the scope.
- Never shrink the job silently. If the request is bigger than one turn, keep going turn
  after turn; do not replace parts of it with placeholders, "left as an exercise", mock data,
  or TODO comments.
- Work item by item: mark the item in progress with todo-update, finish it, check that it
  really works, then todo-complete it. Add new items with todo-add as you discover them.
- Check todo-list before you write your final answer. If anything is still open, continue
  working instead of answering.
- If something truly cannot be done (missing access, a decision only the user can make), say
  which item, why, and what you did instead. Everything else still gets finished.
- Prefer a complete, plain solution to an elaborate half-finished one: breadth of the asked-for
  scope comes first, polish second.
- Your final answer lists what was delivered against the todo list, item by item, and names
  anything left open with the reason. Never claim more than you verified.
"""


def big_task() -> Skill:
    """The ``big-task`` skill, with the todo tools to track the full scope.

    Pair it with :func:`heron.skills.long_task_efficiency` for jobs that also
    run long::

        agent = SimpleAgent(provider=provider, skills=[big_task()])
    """
    return Skill(
        name="big-task",
        description=_DESCRIPTION,
        instructions=_INSTRUCTIONS,
        tools=todo_tools(),
    )
