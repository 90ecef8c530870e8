"""The ``question-answer`` skill: stop and ask the human instead of guessing."""

from __future__ import annotations

from ..tools import Skill
from ..tools.question_answer import question_answer_tool

__all__ = ["question_answer"]

_INSTRUCTIONS = """
Ask with ask-questions when a wrong guess would waste the user's time or be hard to undo:
- information only the user has (credentials you are missing, a target environment, names,
  data that is not in the workspace);
- a real choice between options with different consequences (which database, paid or free
  service, delete or keep);
- confirmation before anything destructive or irreversible (deleting data, sending messages,
  spending money, deploying).
Do not ask what you can find out yourself by reading files, running a command or searching,
and do not ask for permission to do what the user already asked for. Small, reversible
details: pick a sensible default, go on, and mention the choice in your answer.
How to ask:
- Gather every open question first and send them all in ONE ask-questions call; the turn ends
  as soon as it returns, so a second call would never be seen.
- Make each question answerable on its own: give the context that matters and, where the
  options are known, list them as choices (mark the one you recommend).
- Do the work that does not depend on the answers before asking.
- When the answers arrive in the next message, continue the task from where you stopped;
  do not ask the same questions again.
"""


def question_answer() -> Skill:
    """Ask the human for missing information or decisions (with ``ask-questions``)."""
    return Skill(
        name="question-answer",
        description=(
            "Use when you need information, a decision or a confirmation that only the user "
            "can give: batches every pending question into one call and stops the turn."
        ),
        instructions=_INSTRUCTIONS,
        tools=[question_answer_tool()],
    )
