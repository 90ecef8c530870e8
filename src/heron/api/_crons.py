"""Crons: schedules that create a node from a template at each tick."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import StringConstraints

from ._common import RequestModel, WireModel
from ._nodes import NodeCreateRequest

__all__ = [
    "Cron",
    "CronCreateRequest",
    "CronFiring",
    "CronFiringPage",
    "CronFiringStatus",
    "CronPokeResult",
    "CronUpdateRequest",
]

CronFiringStatus: TypeAlias = Literal["claimed", "created", "failed"]
"""A firing's node: being created, created, or not created (``error`` says why)."""


class CronCreateRequest(RequestModel):
    """``POST /v1/crons``: a schedule, its timezone and the node each tick creates."""

    schedule: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    """A cron expression: 5 fields (``minute hour day month weekday``), 6 with a leading
    seconds field (``*/2 * * * * *``), or ``@hourly`` ``@daily`` ``@weekly`` ``@monthly``
    ``@yearly``."""
    template: NodeCreateRequest
    """The node create each firing sends (``prompt`` required; no ``node_id``: each
    firing names its node). Checked now as a create would be: a bad one is refused here."""
    timezone: Annotated[str, StringConstraints(min_length=1, max_length=64)] = "UTC"
    """The IANA timezone the schedule's wall-clock times are in (DST-correct)."""
    name: Annotated[str, StringConstraints(max_length=512)] | None = None
    """Display label (also the default name of the nodes it creates)."""
    paused: bool = False
    """Create it paused: it fires only on ``run`` until resumed."""


class CronUpdateRequest(RequestModel):
    """``PATCH /v1/crons/{id}``: the fields to change; fields left out (or ``null``) stay.

    The cron keeps its id, its firings and its count. A new schedule or timezone
    counts the next tick from now (a paused cron stays paused); a new template is
    checked as at create and replaces the old one whole, from the next firing on.
    """

    schedule: Annotated[str, StringConstraints(min_length=1, max_length=256)] | None = None
    """A new cron expression (as at create)."""
    timezone: Annotated[str, StringConstraints(min_length=1, max_length=64)] | None = None
    """A new IANA timezone."""
    template: NodeCreateRequest | None = None
    """A new node create body for its firings (replaces the old one whole)."""
    name: Annotated[str, StringConstraints(max_length=512)] | None = None
    """A new display label."""


class CronFiring(WireModel):
    """One firing of a cron: a tick (or a manual run) and the node it created."""

    cron_id: str
    """The cron that fired."""
    tick: datetime | None
    """The scheduled instant fired (``None`` for a manual run)."""
    node_id: str
    """The node the firing creates (its id is fixed when the tick is claimed)."""
    manual: bool
    """Whether ``run`` fired it rather than the schedule."""
    fired_at: datetime
    """When the daemon fired it."""
    status: CronFiringStatus
    """Whether its node was created."""
    error: str | None = None
    """Why the node could not be created (``status`` ``failed``)."""


class CronFiringPage(WireModel):
    """One page of ``GET /v1/crons/{id}/firings``, newest first."""

    items: list[CronFiring]
    """The firings of this page."""
    next_cursor: str | None
    """Pass as ``cursor`` for the next (older) page; ``None`` on the last page."""


class Cron(WireModel):
    """A cron as the daemon keeps it."""

    cron_id: str
    """Identifier (``cron_…``)."""
    name: str | None
    """Display label."""
    profile: str
    """The profile its nodes run under (the template's, else ``default``)."""
    schedule: str
    """The cron expression."""
    timezone: str
    """The IANA timezone of the schedule."""
    template: dict[str, Any]
    """The node create body each firing sends (as given)."""
    paused: bool
    """Whether the schedule is paused (``run`` still fires it)."""
    next_fire_at: datetime | None
    """The next scheduled tick (``None`` while paused)."""
    last_fired_at: datetime | None
    """When it last fired, on schedule or by ``run``."""
    last_node_id: str | None
    """The node its last firing created."""
    fire_count: int
    """How many times it has fired."""
    created_by: str | None
    """The node whose ``cron-create`` tool made it, if a node did."""
    created_at: datetime
    """When it was created."""
    updated_at: datetime
    """When it last changed (a firing, a pause ...)."""
    recent_firings: list[CronFiring]
    """Its latest firings, newest first (up to 10; ``GET /v1/crons/{id}/firings`` pages
    through all of them)."""


class CronPokeResult(WireModel):
    """What ``POST /v1/crons/poke`` fired."""

    fired: int
    """How many crons fired."""
    firings: list[CronFiring]
    """Those firings."""
