"""Orchestration routes: hand the turn back (``…/yield``) and park until children settle
(``…/wait``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from fastapi import Body, FastAPI

from ... import api
from ..server import WITH_BODY, NodeIdPath

if TYPE_CHECKING:
    from ._service import Orchestration

__all__ = ["add_orchestration_routes"]


def add_orchestration_routes(app: FastAPI, orchestration: Orchestration) -> None:
    """Serve ``POST /v1/nodes/{id}/yield`` and ``POST /v1/nodes/{id}/wait``."""

    @app.post("/v1/nodes/{node_id}/yield", tags=["orchestration"], responses=WITH_BODY)
    async def yield_turn(
        node_id: NodeIdPath,
        body: Annotated[api.YieldRequest | None, Body()] = None,
    ) -> api.Node:
        """Hand the turn back while children work: a running node ends its run and goes
        ``dormant`` (not ``interrupted``); its children's outcomes wake it as messages.
        A node that is not running stays as it is. ``409 node_settled`` on a settled node."""
        return await orchestration.yield_turn(node_id, body)

    @app.post("/v1/nodes/{node_id}/wait", tags=["orchestration"], responses=WITH_BODY)
    async def wait(node_id: NodeIdPath, body: api.WaitRequest) -> api.WaitStatus:
        """Park the node until the named children (its own: ``422 not_a_child`` otherwise)
        settle; it then wakes with their outcomes in one message. A running node stops its
        turn to wait. With ``timeout_seconds`` it wakes then with what has settled."""
        return await orchestration.wait(node_id, body)
