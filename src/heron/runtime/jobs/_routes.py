"""The jobs routes: a node's background commands, listed and cancelled."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from fastapi import FastAPI, Path

from ... import api
from ..server import ACTION, READ, NodeIdPath

if TYPE_CHECKING:
    from ._service import Jobs

__all__ = ["add_jobs_routes"]

JobIdPath = Annotated[
    str,
    Path(
        description="The job's id, as `GET …/jobs` lists it (`bash-1` ...).",
        # Documented, but checked by the engine: a bad id answers 400 invalid_job_id.
        json_schema_extra={"pattern": api.ID_PATTERN},
    ),
]
"""A ``{job_id}`` path parameter."""


def add_jobs_routes(app: FastAPI, jobs: Jobs) -> None:
    """Serve ``GET /v1/nodes/{id}/jobs`` and ``POST /v1/nodes/{id}/jobs/{job}/cancel``."""

    @app.get("/v1/nodes/{node_id}/jobs", tags=["jobs"], responses=READ)
    async def list_jobs(node_id: NodeIdPath) -> list[api.Job]:
        """The node's background commands, oldest first (a plain array; never their
        output). Known only to this daemon process: empty again after a restart."""
        return await jobs.list(node_id)

    @app.post("/v1/nodes/{node_id}/jobs/{job_id}/cancel", tags=["jobs"], responses=ACTION)
    async def cancel_job(node_id: NodeIdPath, job_id: JobIdPath) -> api.Job:
        """Kill the job and everything it started (SIGTERM, then SIGKILL); 409 once ended."""
        return await jobs.cancel(node_id, job_id)
