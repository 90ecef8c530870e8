"""The ``present`` skill: hand a job's output back as files or one zip, without artifacts."""

from __future__ import annotations

import os
from collections.abc import Iterable

from ..tools import Skill
from ..tools.present import present_tools

__all__ = ["present"]

_INSTRUCTIONS = """
When the job produced files the user should receive, hand them back explicitly at the end.
- A few files (a report, a script, an image): call present-files with their paths.
- A project, a folder or many files: call present-zip, naming the archive after the project
  (for example "invoice-app.zip"). Use overwrite only when replacing your own earlier archive.
- Present finished work only: run and check it first. Do not present scratch files, logs or
  secrets; pass exclude patterns for anything of the kind the walk would otherwise pick up.
- Build artifacts (caches, virtual environments, node_modules, bytecode, .git) are left out
  automatically; if the user needs built output such as dist/, name that folder explicitly.
- Then tell the user, in a sentence or two, what each presented file or the archive contains
  and how to use it (the command to run, the file to open first). Quote the paths and sizes
  the tool reported; never invent them.
"""


def present(
    root: str | os.PathLike[str] = ".", hidden: Iterable[str | os.PathLike[str]] = ()
) -> Skill:
    """Hand output back from ``root`` as files or a zip (with the present tools);
    ``hidden`` paths inside ``root`` are never presented."""
    return Skill(
        name="present",
        description=(
            "Use when a job's output is files the user should receive: decides between "
            "individual files and one zip, and leaves build artifacts out."
        ),
        instructions=_INSTRUCTIONS,
        tools=present_tools(root, hidden=hidden),
    )
