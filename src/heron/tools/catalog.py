"""Every built-in tool, keyed by the name the model calls it by.

::

    tools = catalog("./workspace")
    agent = SimpleAgent(provider=provider, tools=[tools["fs-read-file"], tools["fs-grep"]])
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .._core import UserError
from ._tool import Tool
from .fs import filesystem_tools
from .time import get_current_time

__all__ = ["catalog"]


@dataclass(frozen=True, kw_only=True, slots=True)
class _Setup:
    """What the tool families are built from."""

    root: Path
    """The directory the file tools work in."""


# One line per family of built-in tools: each builds its tools from the setup.
_FAMILIES: tuple[Callable[[_Setup], Iterable[Tool]], ...] = (
    lambda setup: [get_current_time],
    lambda setup: filesystem_tools(setup.root),
)


def catalog(root: str | os.PathLike[str] | None = None) -> dict[str, Tool]:
    """Every built-in tool, fresh, keyed by its name.

    Tools that work on files are confined to ``root`` (the current directory
    by default), which must be an existing directory. Pick the ones an agent
    needs by name, or hand it ``list(catalog(root).values())``.
    """
    setup = _Setup(root=Path.cwd() if root is None else Path(root))
    return _collect(setup, _FAMILIES)


def _collect(
    setup: _Setup, families: Sequence[Callable[[_Setup], Iterable[Tool]]]
) -> dict[str, Tool]:
    tools: dict[str, Tool] = {}
    for family in families:
        for made in family(setup):
            if made.name in tools:
                raise UserError(f"two built-in tools are named {made.name!r}")
            tools[made.name] = made
    return tools
