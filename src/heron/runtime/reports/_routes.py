"""Report routes: ``GET /v1/nodes/{id}/reports``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from fastapi import FastAPI, Query

from ... import api
from ..server import NodeIdPath, errors

if TYPE_CHECKING:
    from ._service import Reports

__all__ = ["add_report_routes"]

DEFAULT_LIMIT = 50
"""Reports listed when no ``limit`` is given."""


def add_report_routes(app: FastAPI, service: Reports) -> None:
    """Serve ``GET /v1/nodes/{id}/reports``."""

    @app.get("/v1/nodes/{node_id}/reports", tags=["reports"], responses=errors(400, 404, 422))
    async def reports(
        node_id: NodeIdPath,
        limit: Annotated[
            int, Query(ge=1, le=1000, description="At most this many (1-1000).")
        ] = DEFAULT_LIMIT,
        tier: Annotated[api.ReportTier | None, Query(description="Only this tier.")] = None,
    ) -> list[api.Report]:
        """The reports the node pushed, newest first."""
        return await service.list(node_id, limit=limit, tier=tier)
