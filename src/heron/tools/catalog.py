"""Every built-in tool, keyed by the name the model calls it by.

::

    async with catalog("./workspace") as tools:
        agent = SimpleAgent(provider=provider, tools=[tools["fs-read-file"], tools["bash-run"]])
        await agent.run("...")
    # leaving the block stops background processes and the browser, if any were started
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from .._core import UserError
from ._tool import Tool
from .bash import bash_tools
from .browser import browser_tools
from .fs import filesystem_tools
from .present import present_tools
from .question_answer import question_answer_tool
from .time import get_current_time
from .todo import todo_tools

__all__ = ["Catalog", "catalog"]


@dataclass(frozen=True, kw_only=True, slots=True)
class _Setup:
    """What the tool families are built from."""

    root: Path
    """The directory the file tools work in."""


# One line per family of built-in tools: each builds its tools from the setup.
_FAMILIES: tuple[Callable[[_Setup], Iterable[Tool]], ...] = (
    lambda setup: [get_current_time],
    lambda setup: filesystem_tools(setup.root),
    lambda setup: todo_tools(),
    lambda setup: [question_answer_tool()],
    lambda setup: present_tools(setup.root),
    lambda setup: bash_tools(setup.root),
    lambda setup: browser_tools(),
)


class Catalog(dict[str, Tool]):
    """The built-in tools by name, owning what they start (shell processes, a browser).

    Nothing is started until a tool is used; :meth:`aclose` (or ``async with``)
    stops what was.
    """

    def __init__(self, tools: dict[str, Tool], closers: Sequence[object]) -> None:
        super().__init__(tools)
        self._closers = list(closers)

    async def aclose(self) -> None:
        """Stop background shell processes and the browser, if they were started."""
        closers, self._closers = self._closers, []
        for owner in closers:
            close = getattr(owner, "aclose", None)
            if close is not None:
                await close()

    async def __aenter__(self) -> Catalog:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def catalog(root: str | os.PathLike[str] | None = None) -> Catalog:
    """Every built-in tool, fresh, keyed by its name.

    Tools that work on files or run commands are confined to ``root`` (the
    current directory by default), which must be an existing directory. Pick
    the ones an agent needs by name, or hand it ``list(catalog(root).values())``;
    close it (``await tools.aclose()`` or ``async with``) when done.
    """
    setup = _Setup(root=Path.cwd() if root is None else Path(root))
    return _collect(setup, _FAMILIES)


def _collect(setup: _Setup, families: Sequence[Callable[[_Setup], Iterable[Tool]]]) -> Catalog:
    tools: dict[str, Tool] = {}
    closers: list[object] = []
    for family in families:
        group = family(setup)
        if hasattr(group, "aclose"):
            closers.append(group)
        for made in group:
            if made.name in tools:
                raise UserError(f"two built-in tools are named {made.name!r}")
            tools[made.name] = made
    return Catalog(tools, closers)
