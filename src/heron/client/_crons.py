"""``client.crons``: schedules on the daemon that create a node from a template at each tick."""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import Any

from .. import api
from ._flow import Flow
from ._options import RequestOptions
from ._params import NodeCreateParams, create_body
from ._resource import M, Resource, check_id, endpoint

__all__ = ["Crons"]


def _path(cron_id: str, action: str = "") -> str:
    return f"/v1/crons/{check_id(cron_id, 'cron id')}{action}"


class Crons(Resource[M]):
    """``client.crons``: create, read, update, pause, resume, run and delete crons.

    A cron's ``schedule`` is a cron expression (5 fields, 6 with a leading seconds
    field, or ``@hourly`` ``@daily`` ``@weekly`` ``@monthly`` ``@yearly``) in an IANA
    ``timezone``; each tick creates a node from its ``template`` (a node create).
    """

    @endpoint
    def create(
        self,
        schedule: str,
        template: NodeCreateParams | api.NodeCreateRequest | Mapping[str, Any],
        *,
        timezone: str = "UTC",
        name: str | None = None,
        paused: bool = False,
        options: RequestOptions | None = None,
    ) -> Flow[api.Cron]:
        """``POST /v1/crons``: a cron creating a node from ``template`` at every tick.

        The template is checked now as a node create would be: a bad one raises
        ``UnprocessableEntityError`` (``invalid_template``), as do a bad expression
        (``invalid_schedule``) and an unknown timezone (``invalid_timezone``).

        Example::

            client.crons.create("0 9 * * mon-fri", {"prompt": "Triage new issues."},
                                timezone="Europe/Berlin", name="triage")
        """
        body: dict[str, Any] = {
            "schedule": schedule,
            "template": create_body(template, {}),
            "timezone": timezone,
            "paused": paused,
        }
        if name is not None:
            body["name"] = name
        return self._call("POST", "/v1/crons", api.Cron, body=body, options=options)

    @endpoint
    def update(
        self,
        cron_id: str,
        *,
        schedule: str | None = None,
        timezone: str | None = None,
        template: NodeCreateParams | api.NodeCreateRequest | Mapping[str, Any] | None = None,
        name: str | None = None,
        options: RequestOptions | None = None,
    ) -> Flow[api.Cron]:
        """``PATCH /v1/crons/{id}``: change the schedule, timezone, template or name
        (``None``: unchanged); the cron keeps its id and firings. A new schedule or
        timezone counts the next tick from now; a new template replaces the old one
        whole and is checked as at :meth:`create` (``UnprocessableEntityError``).

        Example::

            client.crons.update(cron_id, schedule="0 8 * * mon-fri", timezone="Europe/Paris")
        """
        path = _path(cron_id)
        body: dict[str, Any] = {}
        if schedule is not None:
            body["schedule"] = schedule
        if timezone is not None:
            body["timezone"] = timezone
        if template is not None:
            body["template"] = create_body(template, {})
        if name is not None:
            body["name"] = name
        return self._call("PATCH", path, api.Cron, body=body, options=options)

    @endpoint
    def retrieve(self, cron_id: str, *, options: RequestOptions | None = None) -> Flow[api.Cron]:
        """``GET /v1/crons/{id}``: the cron, with its latest firings."""
        return self._call("GET", _path(cron_id), api.Cron, options=options)

    @endpoint
    def list(
        self,
        *,
        profile: str | None = None,
        paused: bool | None = None,
        options: RequestOptions | None = None,
    ) -> Flow[builtins.list[api.Cron]]:
        """``GET /v1/crons``: every cron, oldest first (a plain list); ``profile`` keeps
        that profile's, ``paused`` only paused (``True``) or active (``False``) ones."""
        if profile is not None:
            check_id(profile, "profile name")
        query = {"profile": profile, "paused": paused}
        return self._call("GET", "/v1/crons", builtins.list[api.Cron], query=query, options=options)

    @endpoint
    def firings(
        self,
        cron_id: str,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        options: RequestOptions | None = None,
    ) -> Flow[api.CronFiringPage]:
        """``GET /v1/crons/{id}/firings``: a page of its firings, newest first; ``limit``
        (1-200, default 50 by the daemon), ``cursor`` the previous page's
        ``next_cursor`` (``None`` on the last page)."""
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 200
        ):
            raise ValueError(f"limit must be a whole number from 1 to 200, got {limit!r}")
        query = {"limit": limit, "cursor": cursor}
        path = _path(cron_id, "/firings")
        return self._call("GET", path, api.CronFiringPage, query=query, options=options)

    @endpoint
    def pause(self, cron_id: str, *, options: RequestOptions | None = None) -> Flow[api.Cron]:
        """``POST /v1/crons/{id}/pause``: stop the schedule (``ConflictError``
        ``cron_paused`` if it is already); :meth:`run` still fires it."""
        return self._call("POST", _path(cron_id, "/pause"), api.Cron, options=options)

    @endpoint
    def resume(self, cron_id: str, *, options: RequestOptions | None = None) -> Flow[api.Cron]:
        """``POST /v1/crons/{id}/resume``: restart the schedule from now (ticks missed while
        paused do not fire; ``ConflictError`` ``cron_not_paused`` if it is not paused)."""
        return self._call("POST", _path(cron_id, "/resume"), api.Cron, options=options)

    @endpoint
    def run(self, cron_id: str, *, options: RequestOptions | None = None) -> Flow[api.CronFiring]:
        """``POST /v1/crons/{id}/run``: fire now (even paused); the firing, whose
        ``node_id`` is the node created."""
        return self._call("POST", _path(cron_id, "/run"), api.CronFiring, options=options)

    @endpoint
    def delete(self, cron_id: str, *, options: RequestOptions | None = None) -> Flow[api.Cron]:
        """``DELETE /v1/crons/{id}``: delete the cron (its nodes stay); the cron as it was."""
        return self._call("DELETE", _path(cron_id), api.Cron, options=options)

    @endpoint
    def poke(self, *, options: RequestOptions | None = None) -> Flow[api.CronPokeResult]:
        """``POST /v1/crons/poke``: fire what is due now and count every schedule again
        from the current clock (after the clock changed); what fired."""
        return self._call("POST", "/v1/crons/poke", api.CronPokeResult, options=options)
