"""Managed git worktrees: a node working on a branch of its own.

Other packages use these names (loaded on first use, so importing a module of this
package never imports the others first)."""

import typing

from ..._core.lazy import attach as _attach

if typing.TYPE_CHECKING:
    from ._service import Worktrees, active_worktree, to_worktree

if not typing.TYPE_CHECKING:  # type checkers see the imports above, and no catch-all
    __getattr__, __dir__ = _attach(
        __name__,
        {
            "._service": ("Worktrees", "active_worktree", "to_worktree"),
        },
    )

__all__ = ["Worktrees", "active_worktree", "to_worktree"]
