"""Keeping tool paths inside a root directory given when the tools were made."""

from __future__ import annotations

import os
from pathlib import Path

from .._core import ToolError, UserError

__all__ = ["confined", "relative_name", "resolve_root"]


def resolve_root(root: str | os.PathLike[str]) -> Path:
    """``root`` as an absolute, symlink-free path; a :class:`UserError` unless it is a folder."""
    path = Path(root).expanduser().resolve()
    if not path.is_dir():
        raise UserError(f"tool root {str(root)!r} is not an existing directory")
    return path


def confined(root: Path, path: str) -> Path:
    """The real location of ``path`` (relative to ``root``, or absolute), or a :class:`ToolError`.

    Symlinks are followed before the check, so a link pointing out of ``root``
    is refused just like ``..`` or an absolute path elsewhere.
    """
    if "\x00" in path:
        raise ToolError(f"path {path!r} contains a NUL character")
    target = (root / path.strip()).resolve()  # an absolute `path` replaces root here
    if not target.is_relative_to(root):
        raise ToolError(f"path {path!r} is outside the root directory {str(root)!r}")
    return target


def relative_name(root: Path, path: Path) -> str:
    """``path`` as the model names it: relative to ``root``, with forward slashes."""
    return path.relative_to(root).as_posix() or "."
