"""Worktrees: a managed ``git worktree`` a node works in, on a branch of its own."""

from __future__ import annotations

from typing import Literal, TypeAlias

from ._common import WireModel

__all__ = ["NodeWorktree", "WorktreeState"]

WorktreeState: TypeAlias = Literal["active", "closed", "abandoned"]
"""In use; removed with its branch kept (``…/worktree/close``); or removed with its
branch deleted (``…/worktree/abandon``)."""


class NodeWorktree(WireModel):
    """The git worktree made for a node (``worktree`` on create), as ``api.Node`` shows it."""

    name: str
    """Its name: the one given on create, or the node's id for ``worktree: true``."""
    path: str
    """The worktree's top directory (``$HERON_HOME/worktrees/<name>``)."""
    branch: str
    """The branch it has checked out, made for it: ``heron/<name>``."""
    repository: str
    """The top directory of the checkout it was made from (the node's ``cwd``'s repository)."""
    base_commit: str
    """The commit the branch started from (that checkout's ``HEAD`` at create)."""
    workdir: str
    """Where the node's file and shell tools work: ``path`` plus ``cwd``'s subdirectory."""
    state: WorktreeState
    """Active, closed or abandoned; once removed, the node works in its ``cwd`` again."""
    head_commit: str | None
    """The branch's tip when the worktree was removed (``None`` while active)."""
