"""The worktree routes: remove a node's managed git worktree, keeping or dropping its branch."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastapi import FastAPI

from ... import api
from ..server import ACTION, NodeIdPath

if TYPE_CHECKING:
    from ._service import Worktrees

__all__ = ["add_worktrees_routes"]


def add_worktrees_routes(app: FastAPI, worktrees: Worktrees) -> None:
    """Serve ``POST /v1/nodes/{id}/worktree/close`` and ``…/worktree/abandon``."""

    @app.post("/v1/nodes/{node_id}/worktree/close", tags=["worktrees"], responses=ACTION)
    async def close_worktree(node_id: NodeIdPath) -> api.Node:
        """Remove the node's worktree and keep its branch (merges nothing); 409
        ``worktree_dirty`` with uncommitted changes, ``node_running`` while it runs."""
        return await worktrees.close(node_id)

    @app.post("/v1/nodes/{node_id}/worktree/abandon", tags=["worktrees"], responses=ACTION)
    async def abandon_worktree(node_id: NodeIdPath) -> api.Node:
        """Remove the node's worktree, discarding its changes, and delete its branch;
        409 ``node_running`` while it runs."""
        return await worktrees.abandon(node_id)
