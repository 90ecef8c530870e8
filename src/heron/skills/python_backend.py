"""The ``python-backend`` skill: building, running and debugging Python services."""

from __future__ import annotations

import os
from collections.abc import Sequence

from ..tools import Skill, Tool
from ..tools.bash import BashTools
from ._tools import project_skill

__all__ = ["python_backend"]

_DESCRIPTION = (
    "Use this skill when writing, running or debugging server-side Python: web APIs "
    "(FastAPI, Flask, Django), workers, CLIs, scheduled jobs and their database code."
)

_INSTRUCTIONS = """\
- Paths given to the fs-* tools are relative to the project root, and bash commands start
  there too. Look before you build: fs-list-directory and fs-read-file on pyproject.toml,
  requirements*.txt or setup.cfg tell you the Python version, framework and test runner.
- Work in a virtual environment inside the project: `python3 -m venv .venv`, then call
  `.venv/bin/python` and `.venv/bin/pip` explicitly (activation does not carry between
  bash-run calls). Record every new dependency in pyproject.toml or requirements.txt.
- Follow the code that is there: its layout, naming, framework and error style. Add type
  hints, validate input at the boundary (pydantic models or the framework's schemas) and
  return proper status codes with a clear message instead of a bare 500.
- Read configuration and secrets from environment variables; never hard-code credentials or
  commit a real .env file.
- Make small, exact changes with fs-edit-file; use fs-write-file for new files.
- Start servers with bash-start (for example `.venv/bin/uvicorn app:app --port 8000`), poll
  bash-read until the log says it is listening, exercise it with curl through bash-run, and
  bash-kill it when you are done. Never bash-run a command that does not return by itself.
- On an error, read the whole traceback: the last frame in the project's own code is usually
  the place to fix. Reproduce the failure with a test or a one-line command before changing
  code, and re-run it after.
- Write or extend pytest tests for new behaviour, run them with `.venv/bin/python -m pytest -q`,
  and run the project's linters and type checker if it has them configured.
"""


def python_backend(
    root: str | os.PathLike[str] = ".",
    *,
    files: Sequence[Tool] | None = None,
    bash: BashTools | None = None,
) -> Skill:
    """The ``python-backend`` skill: file tools confined to ``root``, bash tools starting there.

    Args:
        root: The project directory; file paths cannot leave it.
        files: The file tools to bundle (``filesystem_tools(root)``, or a catalog's
            ``.files``); equal new ones if omitted.
        bash: The bash tools to bundle (``bash_tools(root)``, or a catalog's ``.bash``:
            commands start in ``root``); new ones, with their own processes, if omitted.

    Shell commands are not sandboxed: they can reach whatever this process can.
    To share one set of bash tools with other skills of the agent, see :mod:`heron.skills`.
    """
    return project_skill("python-backend", _DESCRIPTION, _INSTRUCTIONS, root, files, bash)
