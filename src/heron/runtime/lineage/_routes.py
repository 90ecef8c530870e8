"""Lineage routes: fork, revive, revive-all, recycle, relaunch-root, promote and demote."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from fastapi import Body, FastAPI

from ... import api
from ..server import ACTION, WITH_BODY, NodeIdPath, errors

if TYPE_CHECKING:
    from ._service import Lineage

__all__ = ["add_lineage_routes"]

_MODEL_FAILED: dict[int | str, dict[str, Any]] = {
    502: {
        "model": api.ErrorResponse,
        "description": "The node's model failed or wrote nothing (`provider_error`, "
        "`summary_failed`, `empty_summary`)",
    },
    504: {
        "model": api.ErrorResponse,
        "description": "The node's model wrote no summary in time (`summary_timeout`)",
    },
}


_MODEL_UNUSABLE: dict[int | str, dict[str, Any]] = {
    422: {
        "model": api.ErrorResponse,
        "description": "The node's model cannot be used now (`invalid_model`: its API key "
        "was removed, its script file is gone)",
    },
}


def add_lineage_routes(app: FastAPI, lineage: Lineage) -> None:
    """Serve the lineage actions of ``/v1/nodes`` over ``lineage``."""

    # Declared before any /v1/nodes/{node_id} route could be taken for it.
    @app.post("/v1/nodes/revive-all", tags=["lineage"], responses=errors())
    async def revive_all() -> api.ReviveAllResult:
        """Revive every node that stopped involuntarily: interrupted other than by a
        request, or failed with ``provider_error`` or ``crashed`` in a way that could go
        differently (see ``ReviveAllResult``). Returns the revived nodes and any that
        could not be."""
        return await lineage.revive_all()

    @app.post("/v1/nodes/{node_id}/fork", status_code=201, tags=["lineage"], responses=WITH_BODY)
    async def fork(
        node_id: NodeIdPath,
        body: Annotated[api.ForkRequest | None, Body()] = None,
    ) -> api.Node:
        """A new node continuing from a copy of this node's saved conversation and
        settings (a running node's conversation as of its last finished run); the
        original is untouched. With a ``prompt`` the fork runs, else it waits dormant."""
        return await lineage.fork(node_id, body or api.ForkRequest())

    @app.post("/v1/nodes/{node_id}/revive", tags=["lineage"], responses=WITH_BODY)
    async def revive(
        node_id: NodeIdPath,
        body: Annotated[api.ReviveRequest | None, Body()] = None,
    ) -> api.Node:
        """Start a new run of a dormant, interrupted or failed node from its saved state
        (a failed node's outcome is archived in ``previous_outcomes``)."""
        return await lineage.revive(node_id, body.message if body is not None else None)

    @app.post(
        "/v1/nodes/{node_id}/recycle",
        tags=["lineage"],
        responses={**ACTION, **_MODEL_UNUSABLE, **_MODEL_FAILED},
    )
    async def recycle(node_id: NodeIdPath) -> api.Recycled:
        """Same node, fresh context: its model summarises the conversation, and the
        summary is all it remembers from its next run on. Refused while running."""
        return await lineage.recycle(node_id)

    @app.post(
        "/v1/nodes/{node_id}/relaunch-root",
        tags=["lineage"],
        responses={**ACTION, **_MODEL_UNUSABLE},
    )
    async def relaunch_root(node_id: NodeIdPath) -> api.Node:
        """Start this node's tree over: close everything below its root, and run the
        root again from its original prompt in a fresh conversation (unread messages
        follow the prompt; a forked root drops the conversation it copied). Returns the
        root. Meanwhile the root's messages and revives answer ``409 node_relaunching``."""
        return await lineage.relaunch_root(node_id)

    @app.post("/v1/nodes/{node_id}/promote", tags=["lineage"], responses=WITH_BODY)
    async def promote(
        node_id: NodeIdPath,
        body: Annotated[api.PromoteRequest | None, Body()] = None,
    ) -> api.Node:
        """Make the node an orchestrator from its next run (with an optional message)."""
        message = body.message if body is not None else None
        return await lineage.set_mode(node_id, "orchestrator", message)

    @app.post("/v1/nodes/{node_id}/demote", tags=["lineage"], responses=ACTION)
    async def demote(node_id: NodeIdPath) -> api.Node:
        """Make the node hands-on (``base``) again from its next run."""
        return await lineage.set_mode(node_id, "base")
