"""The core node routes: create, read, poll, message, interrupt, close, configure, result."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Annotated

from fastapi import Body, FastAPI, Query, Response

from ... import api
from ..._core.version import __version__
from ..server import ACTION, READ, WITH_BODY, NodeIdPath, Wait, errors, stopping
from ._engine import Engine

__all__ = ["MAX_LIST_LIMIT", "NEXT_CURSOR", "add_node_routes"]

_NODE_CURSOR = r"^[0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?:[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"
"""A ``GET /v1/nodes`` cursor as the listing gives it: a creation time, ``:``, a node id."""

MAX_LIST_LIMIT = 1000
"""The largest ``limit`` of ``GET /v1/nodes``."""

NEXT_CURSOR = "Heron-Next-Cursor"
"""The header of a ``GET /v1/nodes?limit=`` page naming the cursor of the next page."""


def add_node_routes(app: FastAPI, engine: Engine) -> None:
    """Serve ``/healthz``, ``/v1/status`` and the core ``/v1/nodes`` routes over ``engine``."""
    daemon_stopping = stopping(app)

    @app.get("/healthz", tags=["system"], responses=errors())
    async def healthz() -> api.Health:
        """Liveness: answers as soon as the daemon serves requests."""
        return api.Health(version=__version__)

    @app.get("/v1/status", tags=["system"], responses=errors())
    async def status() -> api.SystemStatus:
        """Version, uptime, node counts by status, database and listeners."""
        return await engine.status()

    @app.post("/v1/nodes", status_code=201, tags=["nodes"], responses=WITH_BODY)
    async def create_node(
        request: Annotated[api.NodeCreateRequest, Body()] = api.NodeCreateRequest(),  # noqa: B008
    ) -> api.Node:
        """Create a node; it is already running when this returns."""
        return await engine.create(request)

    @app.get("/v1/nodes", tags=["nodes"], responses=errors(400, 422))
    async def list_nodes(
        response: Response,
        status: Annotated[list[api.NodeStatus] | None, Query()] = None,
        root: bool | None = None,
        limit: Annotated[int | None, Query(ge=1, le=MAX_LIST_LIMIT)] = None,
        after: Annotated[
            str | None,
            Query(
                min_length=1,
                max_length=256,
                # Documented, but checked by the listing: another answers 400 invalid_cursor.
                json_schema_extra={"pattern": _NODE_CURSOR},
            ),
        ] = None,
    ) -> list[api.Node]:
        """Every node, oldest first (a plain array), optionally by status and root.

        With ``limit``, at most that many; when more match, the ``Heron-Next-Cursor``
        header carries the cursor to pass as ``after`` for the next page (no header: the
        last page). A cursor stays valid when its node is pruned."""
        nodes, cursor = await engine.nodes(
            status=list(status) if status else None, root=root, limit=limit, after=after
        )
        if cursor is not None:
            response.headers[NEXT_CURSOR] = cursor
        return nodes

    @app.get("/v1/nodes/{node_id}", tags=["nodes"], responses=READ)
    async def get_node(node_id: NodeIdPath) -> api.Node:
        """One node."""
        return await engine.node(node_id)

    @app.get("/v1/nodes/{node_id}/outcome", tags=["nodes"], responses=errors(400, 404, 422))
    async def outcome(node_id: NodeIdPath, wait: Wait = 0) -> api.OutcomePoll:
        """One long poll: answers when the node settles or after ``wait`` seconds (at
        once when the daemon stops)."""
        if wait == 0 or daemon_stopping.is_set():
            return await engine.outcome(node_id, 0)
        poll = asyncio.ensure_future(engine.outcome(node_id, wait))
        halt = asyncio.ensure_future(daemon_stopping.wait())
        try:
            await asyncio.wait((poll, halt), return_when=asyncio.FIRST_COMPLETED)
        finally:
            halt.cancel()
            if not poll.done():
                poll.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await poll
        return poll.result() if not poll.cancelled() else await engine.outcome(node_id, 0)

    @app.post("/v1/nodes/{node_id}/messages", status_code=202, tags=["nodes"], responses=WITH_BODY)
    async def message(node_id: NodeIdPath, body: api.MessageRequest) -> api.MessageAccepted:
        """Send a follow-up: a dormant node wakes; a running one reads it next turn."""
        return await engine.message(node_id, body.body)

    @app.post("/v1/nodes/{node_id}/interrupt", tags=["nodes"], responses=ACTION)
    async def interrupt(node_id: NodeIdPath) -> api.Node:
        """Stop the current turn and keep the node."""
        return await engine.interrupt(node_id)

    @app.post("/v1/nodes/{node_id}/close", tags=["nodes"], responses=WITH_BODY)
    async def close(
        node_id: NodeIdPath,
        body: Annotated[api.CloseRequest | None, Body()] = None,
    ) -> api.Node:
        """Cancel the node and the subtree it owns (terminal)."""
        return await engine.close(node_id, body.reason if body is not None else None)

    @app.patch("/v1/nodes/{node_id}/config", tags=["nodes"], responses=WITH_BODY)
    async def update_config(node_id: NodeIdPath, patch: api.NodeConfigPatch) -> api.Node:
        """Change the node's model, name, description or deadline."""
        return await engine.update_config(node_id, patch)

    @app.post("/v1/nodes/{node_id}/result", tags=["nodes"], responses=WITH_BODY)
    async def submit_result(node_id: NodeIdPath, body: api.ResultSubmission) -> api.ResultAccepted:
        """The node's structured result (what its ``submit-result`` tool sends)."""
        return await engine.submit_result(node_id, body.result)
