"""The ``code-verification`` skill: proving code works before handing it back."""

from __future__ import annotations

import os
from collections.abc import Sequence

from ..tools import Skill, Tool
from ..tools.bash import BashTools
from ._tools import project_skill

__all__ = ["code_verification"]

_DESCRIPTION = (
    "Use this skill before you report any code change as finished: it says which checks to "
    "run (types, build, lint, tests) and how to tell a real failure from an environment problem."
)

_INSTRUCTIONS = """\
- Find the project's own checks before inventing any: read pyproject.toml, package.json
  scripts, Makefile, tox.ini, .ci/ or CI workflow files with fs-read-file or fs-glob, and run
  the same commands they run, from the project root, with bash-run.
- Run, in this order, whatever the project has: the type checker (mypy, pyright, tsc
  --noEmit), the build (npm run build, python -m build), the linter and formatter check, then
  the tests. Fix failures from the first step before moving on: later ones often follow.
- A check passes only when it exits with code 0. Read the exit code and the summary line,
  not just the last few lines of output.
- When a check fails, read the first error in full, find the cause in the code, fix it and
  run the same check again. Never weaken a test, skip it, or delete an assertion to get green.
- Tell real bugs from environment problems: a missing system package, no network, a port in
  use, no display or a missing binary are environment problems. Name them as such, work
  around them where you can (another port, a headless mode) and never "fix" them by
  changing correct code.
- Add a test for every bug you fix and for new behaviour when the project has tests.
- Use a timeout on long suites and run slow ones with bash-start and bash-wait, so a hung
  test cannot hang you.
- In your final answer, list every command you ran with its result (passed, failed and why,
  or could not run and why). Never claim a check passed that you did not run.
"""


def code_verification(
    root: str | os.PathLike[str] = ".",
    *,
    files: Sequence[Tool] | None = None,
    bash: BashTools | None = None,
) -> Skill:
    """The ``code-verification`` skill: file tools confined to ``root``, bash tools starting there.

    ``root``, ``files`` and ``bash`` work as for :func:`~heron.skills.python_backend`.
    """
    return project_skill("code-verification", _DESCRIPTION, _INSTRUCTIONS, root, files, bash)
