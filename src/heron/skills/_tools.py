"""The tool sets catalog skills bundle: a project's files and shell, or a browser.

File tools made for the same root are equal, so skills that each make their
own share an agent. Bash and browser tools hold state (processes, a running
Chromium): two calls of their factory make two different sets, and an agent
registers each tool name once, so skills meant to work together take the sets
to share as arguments (``bash=``, ``browser=``; a :class:`~heron.tools.Catalog`
offers its own as ``.bash`` and ``.browser``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from .._core import UserError
from ..tools import Skill, Tool
from ..tools.bash import BashTools, bash_tools
from ..tools.browser import BrowserTools, browser_tools
from ..tools.fs import FileTool, filesystem_tools

__all__ = ["browsing_skill", "project_skill"]


_FILE_TOOLS = frozenset(
    ["fs-read-file", "fs-write-file", "fs-list-directory", "fs-edit-file", "fs-glob", "fs-grep"]
)


def project_skill(
    name: str,
    description: str,
    instructions: str,
    root: str | os.PathLike[str],
    files: Sequence[Tool] | None,
    bash: BashTools | None,
) -> Skill:
    """A skill working on the project in ``root``, with its file and bash tools."""
    tools = _project_tools(root, files, bash)
    return Skill(name=name, description=description, instructions=instructions, tools=tools)


def browsing_skill(
    name: str, description: str, instructions: str, browser: BrowserTools | None
) -> Skill:
    """A skill using ``browser``, or a browser of its own when it is ``None``."""
    tools = _browser_tools(browser)
    return Skill(name=name, description=description, instructions=instructions, tools=tools)


def _project_tools(
    root: str | os.PathLike[str], files: Sequence[Tool] | None, bash: BashTools | None
) -> list[Tool]:
    """``files`` and ``bash`` for the project in ``root``, each made afresh when ``None``."""
    if files is None:
        files = filesystem_tools(root)
    elif isinstance(files, Tool) or {getattr(t, "name", None) for t in files} != _FILE_TOOLS:
        raise UserError("files must be the tools filesystem_tools(root) returned")
    # The instructions promise paths relative to, and commands starting in, the root.
    wanted = Path(root).expanduser().resolve()
    for given in files:
        if isinstance(given, FileTool) and given.setup[0] != wanted:
            raise UserError(
                f"the file tools work in {str(given.setup[0])!r}, not in the root {str(wanted)!r}"
            )
    if bash is None:
        return [*files, *bash_tools(root)]
    if not isinstance(bash, BashTools):
        raise UserError(f"bash must be the result of bash_tools(), not {type(bash).__name__}")
    if bash.cwd != wanted:
        raise UserError(f"the bash tools run in {str(bash.cwd)!r}, not in the root {str(wanted)!r}")
    return [*files, *bash]


def _browser_tools(browser: BrowserTools | None) -> list[Tool]:
    if browser is None:
        return list(browser_tools())
    if not isinstance(browser, BrowserTools):
        raise UserError(
            f"browser must be the result of browser_tools(), not {type(browser).__name__}"
        )
    return list(browser)
