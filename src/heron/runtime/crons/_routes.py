"""Cron routes: ``/v1/crons…``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from fastapi import FastAPI, Path, Query

from ... import api
from ..server import PROFILE_PATTERN, errors

if TYPE_CHECKING:
    from ._service import Crons

__all__ = ["add_cron_routes"]

CronIdPath = Annotated[
    str,
    Path(
        description="The cron's id (`cron_…`).",
        # Documented, but checked by the crons: a bad id answers 400 invalid_cron_id.
        json_schema_extra={"pattern": api.ID_PATTERN},
    ),
]
"""A ``{cron_id}`` path parameter."""


def add_cron_routes(app: FastAPI, crons: Crons) -> None:
    """Serve the cron routes."""

    # Before /v1/crons/{cron_id}/...: "poke" is not a cron id.
    @app.post("/v1/crons/poke", tags=["crons"], responses=errors())
    async def poke_crons() -> api.CronPokeResult:
        """Fire what is due now and count every schedule again from the current clock
        (after the clock changed); says what fired."""
        return await crons.poke()

    @app.post("/v1/crons", status_code=201, tags=["crons"], responses=errors(400, 413, 415, 422))
    async def create_cron(body: api.CronCreateRequest) -> api.Cron:
        """Create a cron: each tick of ``schedule`` (in ``timezone``) creates a node from
        ``template``. ``422`` ``invalid_schedule``, ``invalid_timezone`` or
        ``invalid_template`` (checked as the node create would be)."""
        return await crons.create(body)

    @app.get("/v1/crons", tags=["crons"], responses=errors(400, 422))
    async def list_crons(
        profile: Annotated[
            str | None,
            Query(
                description="Only this profile's crons.",
                json_schema_extra={"pattern": PROFILE_PATTERN},
            ),
        ] = None,
        paused: Annotated[
            bool | None, Query(description="Only paused (true) or active (false) crons.")
        ] = None,
    ) -> list[api.Cron]:
        """Every cron, oldest first (a plain list)."""
        return await crons.list(profile=profile, paused=paused)

    @app.get("/v1/crons/{cron_id}", tags=["crons"], responses=errors(400, 404))
    async def get_cron(cron_id: CronIdPath) -> api.Cron:
        """One cron, with its latest firings."""
        return await crons.get(cron_id)

    @app.get("/v1/crons/{cron_id}/firings", tags=["crons"], responses=errors(400, 404, 422))
    async def list_cron_firings(
        cron_id: CronIdPath,
        limit: Annotated[int, Query(ge=1, le=200, description="At most this many (1-200).")] = 50,
        cursor: Annotated[
            str | None,
            Query(
                max_length=64,
                description="The previous page's next_cursor.",
                # Documented, but checked by the crons: another answers 400 invalid_cursor.
                json_schema_extra={"pattern": "^[0-9]{1,18}$"},
            ),
        ] = None,
    ) -> api.CronFiringPage:
        """The cron's firings, newest first, a page at a time (every one is kept)."""
        return await crons.firings(cron_id, limit=limit, cursor=cursor)

    @app.patch("/v1/crons/{cron_id}", tags=["crons"], responses=errors(400, 404, 413, 415, 422))
    async def update_cron(cron_id: CronIdPath, body: api.CronUpdateRequest) -> api.Cron:
        """Change a cron's schedule, timezone, template or name (fields left out stay); its
        id, firings and count are kept. A new schedule or timezone counts from now."""
        return await crons.update(cron_id, body)

    @app.post("/v1/crons/{cron_id}/pause", tags=["crons"], responses=errors(400, 404, 409))
    async def pause_cron(cron_id: CronIdPath) -> api.Cron:
        """Pause the schedule (``409 cron_paused`` if it is already); ``run`` still fires."""
        return await crons.pause(cron_id)

    @app.post("/v1/crons/{cron_id}/resume", tags=["crons"], responses=errors(400, 404, 409))
    async def resume_cron(cron_id: CronIdPath) -> api.Cron:
        """Resume the schedule from now: ticks missed while paused do not fire
        (``409 cron_not_paused`` if it is not paused)."""
        return await crons.resume(cron_id)

    @app.post("/v1/crons/{cron_id}/run", tags=["crons"], responses=errors(400, 404, 422))
    async def run_cron(cron_id: CronIdPath) -> api.CronFiring:
        """Fire the cron now (even paused; the schedule is untouched): its node's firing."""
        return await crons.run(cron_id)

    @app.delete("/v1/crons/{cron_id}", tags=["crons"], responses=errors(400, 404))
    async def delete_cron(cron_id: CronIdPath) -> api.Cron:
        """Delete the cron (the nodes it created stay); answers the cron as it was."""
        return await crons.delete(cron_id)
