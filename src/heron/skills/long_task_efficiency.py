"""The ``long-task-efficiency`` skill: staying quick and economical over a long job."""

from __future__ import annotations

from ..tools import Skill

__all__ = ["long_task_efficiency"]

_DESCRIPTION = (
    "Use this skill when a job will take many turns or tool calls (a large refactor, a "
    "long build-and-fix loop, a broad investigation) and you need to get through all of it "
    "without wasting turns, tokens or time."
)

_INSTRUCTIONS = """\
- Batch independent tool calls: when several reads, searches or commands do not depend on
  each other, request them in the same turn instead of one per turn.
- Search before you read: locate the relevant lines with a glob or grep first, then read only
  those ranges instead of whole large files.
- Do not re-read what you already have. Files you wrote or read earlier are still valid unless
  something changed them since.
- Make each edit complete: change everything a fix needs in one pass rather than nudging a
  file many times.
- Keep command output short: filter with grep, head or tail and prefer quiet flags, so results
  stay useful and do not flood the context.
- Run the narrowest check that answers the current question (one test, one file) while you
  iterate; run the full suite once at the end.
- Checkpoint as you go: after each finished step, note in a sentence what is done and what is
  next, so a summarised context still lets you continue without starting over.
- Start long-running processes (servers, watchers, builds) in the background and read their
  output when you need it, instead of blocking a turn on them.
- Efficiency never means dropping scope: every part of the request still gets done.
"""


def long_task_efficiency() -> Skill:
    """The ``long-task-efficiency`` skill: working habits only, no tools of its own."""
    return Skill(
        name="long-task-efficiency",
        description=_DESCRIPTION,
        instructions=_INSTRUCTIONS,
    )
