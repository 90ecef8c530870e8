"""Every built-in tool, keyed by the name the model calls it by.

::

    async with catalog("./workspace") as tools:
        agent = SimpleAgent(provider=provider, tools=[tools["fs-read-file"], tools["bash-run"]])
        await agent.run("...")
    # leaving the block stops background processes and the browser, if any were started

Skills that bundle file, shell or browser tools take the catalog's own sets,
so the agent gets each tool once::

    async with catalog("./service") as tools:
        skill = python_backend("./service", files=tools.files, bash=tools.bash)
        agent = SimpleAgent(provider=provider, tools=list(tools.values()), skills=[skill])
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from .._core import UserError
from .._core.closing import AsyncClosing
from ._tool import Tool
from .bash import BashTools, bash_tools
from .browser import BrowserTools, browser_tools
from .fs import filesystem_tools
from .present import present_tools
from .question_answer import question_answer_tool
from .time import get_current_time
from .todo import todo_tools

__all__ = ["Catalog", "catalog"]

_F = TypeVar("_F")


@dataclass(frozen=True, kw_only=True, slots=True)
class _Setup:
    """What the tool families are built from."""

    root: Path
    """The directory the file tools work in."""


# One entry per family of built-in tools: each builds its tools from the setup.
_FAMILIES: dict[str, Callable[[_Setup], Iterable[Tool]]] = {
    "time": lambda setup: [get_current_time],
    "files": lambda setup: filesystem_tools(setup.root),
    "todo": lambda setup: todo_tools(),
    "ask": lambda setup: [question_answer_tool()],
    "present": lambda setup: present_tools(setup.root),
    "bash": lambda setup: bash_tools(setup.root),
    "browser": lambda setup: browser_tools(),
}


class Catalog(dict[str, Tool], AsyncClosing):
    """The built-in tools by name, owning what they start (shell processes, a browser).

    Nothing is started until a tool is used; :meth:`aclose` (or ``async with``)
    stops what was. :attr:`files`, :attr:`bash` and :attr:`browser` are the
    sets to hand to skills (``files=``, ``bash=``, ``browser=``), so that an
    agent given both the catalog and the skills has each tool once.
    """

    def __init__(self, tools: dict[str, Tool], families: Mapping[str, Iterable[Tool]]) -> None:
        super().__init__(tools)
        self._families = dict(families)
        self._closers = [f for f in families.values() if hasattr(f, "aclose")]

    @property
    def files(self) -> list[Tool]:
        """The six file tools (``filesystem_tools(root)``), for skills' ``files=``."""
        return list(self._family("files", list))

    @property
    def bash(self) -> BashTools:
        """The shell tools (``bash_tools(root)``), for skills' ``bash=``."""
        return self._family("bash", BashTools)

    @property
    def browser(self) -> BrowserTools:
        """The browser tools (``browser_tools()``), for skills' ``browser=``."""
        return self._family("browser", BrowserTools)

    def _family(self, name: str, kind: type[_F]) -> _F:
        found = self._families.get(name)
        if not isinstance(found, kind):  # a catalog built from other families
            raise UserError(f"this catalog has no {name} tools")
        return found

    async def aclose(self) -> None:
        """Stop background shell processes and the browser, if they were started."""
        closers, self._closers = self._closers, []
        for owner in closers:
            close = getattr(owner, "aclose", None)
            if close is not None:
                await close()


def catalog(root: str | os.PathLike[str] | None = None) -> Catalog:
    """Every built-in tool, fresh, keyed by its name.

    File, presenting and shell tools work in ``root`` (the current directory
    by default), which must be an existing directory. File paths cannot leave
    it; shell commands start there but are not sandboxed (a command can reach
    whatever the process can): serve ``heron.tools:catalog`` from a
    :class:`heron.mcp.Computer` for that. Pick the tools an agent needs by name, or hand
    it ``list(catalog(root).values())``; close it (``await tools.aclose()`` or
    ``async with``) when done. For skills, pass :attr:`Catalog.files`,
    :attr:`Catalog.bash` and :attr:`Catalog.browser`.
    """
    setup = _Setup(root=Path.cwd() if root is None else Path(root))
    return _collect(setup, _FAMILIES)


def _collect(setup: _Setup, families: Mapping[str, Callable[[_Setup], Iterable[Tool]]]) -> Catalog:
    tools: dict[str, Tool] = {}
    made: dict[str, Iterable[Tool]] = {}
    for family, build in families.items():
        group = made[family] = build(setup)
        for one in group:
            if one.name in tools:
                raise UserError(f"two built-in tools are named {one.name!r}")
            tools[one.name] = one
    return Catalog(tools, made)
