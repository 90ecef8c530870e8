"""Crons: a schedule in an IANA timezone that creates a node from a template at each tick.

A due tick is claimed in one transaction before its node is made, so a tick never makes
two nodes (ARCHITECTURE.md, crons)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import secrets
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ... import api
from ..nodes import Feature, Kernel, NodeExtra, RunTools, maybe_when, new_row, when
from ..profiles import check_profile_name
from ..server import ApiError
from ._routes import add_cron_routes
from ._schedule import Schedule, parse_schedule, parse_timezone
from ._store import CronRow, CronStore, FiringRow
from ._tables import CRONS_SCHEMA

if TYPE_CHECKING:
    from fastapi import FastAPI

    from ...tools import Tool


__all__ = ["MAX_SLEEP", "RECENT_FIRINGS", "Crons", "check_cron_id", "tick_node_id"]

log = logging.getLogger("heron.runtime")

MAX_SLEEP = 30.0
"""The longest the scheduler sleeps without looking at the crons again (seconds)."""

RECENT_FIRINGS = 10
"""How many of its latest firings a cron shows."""


def check_cron_id(cron_id: str) -> str:
    """``cron_id`` if it is a well-formed id, else ``400 invalid_cron_id``."""
    if not api.is_valid_id(cron_id):
        raise ApiError(400, "invalid_cron_id", f"not a valid cron id: {cron_id!r}")
    return cron_id


def tick_node_id(cron_id: str, tick: float) -> str:
    """The id of the node a tick creates (``cron_….20261130T170000``): fixed by the tick,
    so a creation tried again after a crash finds the node it made."""
    return f"{cron_id}.{datetime.fromtimestamp(tick, UTC):%Y%m%dT%H%M%S}"


def _template_error(exc: ApiError) -> ApiError:
    return ApiError(
        422,
        "invalid_template",
        f"the template is not a valid node create: {exc.message}",
        {"code": exc.code, "details": exc.details},
    )


class Crons(Feature):
    """Keeps, schedules and fires crons."""

    schema = CRONS_SCHEMA

    def __init__(self, engine: Kernel) -> None:
        self.engine = engine
        self.store = CronStore(engine.db)
        """The crons' rows and their firings."""
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._interrupted = False
        # Claims run one at a time in this daemon: on SQLite a claim's read comes before
        # its write lock (pysqlite begins at the first write), so a poke racing the
        # scheduler would both claim a tick, and one would fail on the unique index.
        # (On PostgreSQL the claim's row lock keeps other daemons out.)
        self._claiming = asyncio.Lock()

    # -- lifecycle -------------------------------------------------------------

    def routes(self, app: FastAPI) -> None:
        """Serve the cron routes."""
        add_cron_routes(app, self)

    def tools(self, run: RunTools) -> list[Tool]:
        """The ``schedule`` scope's tools: ``cron-create``, ``cron-list``, ``cron-delete``."""
        from ._tools import cron_tools  # (it imports this module)

        return cron_tools(self, run.node_id, run.run)

    async def start(self) -> None:
        """Create the nodes of firings a crash left without one, then start scheduling
        (last of the features: its firings create nodes on a running engine). A worker
        fires none: its front does (their nodes' runs come to the workers)."""
        if self.engine.config.role == "worker":
            return
        await self.repair()
        self._task = asyncio.create_task(self._loop(), name="heron-crons")

    async def stop(self) -> None:
        """Stop scheduling (a firing being created is cut off: the next start repairs it);
        first of the features: no firing creates a node in a stopping engine."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def wake(self) -> None:
        """Have the scheduler look at the crons now."""
        self._wake.set()

    async def _loop(self) -> None:
        while True:
            self._wake.clear()  # before looking: a wake-up during the look is kept
            earliest: float | None = None
            try:
                if self._interrupted:  # a firing cut short by a failure below
                    await self.repair()
                    self._interrupted = False
                await self.fire_due()
                earliest = await self.store.earliest_fire()
            except Exception:  # the database away for a moment: look again later
                log.exception("the cron scheduler failed; retrying")
                self._interrupted = True
            delay = MAX_SLEEP if earliest is None else earliest - time.time()
            # A hair late: waking before the tick (clocks differ) would only sleep again.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), min(max(delay, 0.0), MAX_SLEEP) + 0.002)

    # -- firing ----------------------------------------------------------------

    async def fire_due(self) -> list[FiringRow]:
        """Claim and fire every due tick (one per cron: missed ticks coalesce); the firings.

        Every due tick is claimed first, then their nodes are made side by side: one
        slow create does not make the other crons late.
        """
        now = time.time()
        store = self.store
        fired: list[FiringRow] = []
        async with self._claiming:
            for cron_id in await store.due_crons(now):
                firing = await store.claim_tick(
                    cron_id, now, _plan, functools.partial(tick_node_id, cron_id)
                )
                if firing is not None:
                    fired.append(firing)
        results = await asyncio.gather(*map(self._make, fired), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result  # the firing stays claimed: repaired on the next pass
        return fired

    async def _make(self, firing: FiringRow) -> None:
        cron = await self.store.cron(firing["cron_id"])
        if cron is not None:
            await self._create_node(cron, firing)
        else:  # deleted since the claim
            await self.store.finish_firing(
                firing["firing_id"], "failed", "the cron was deleted before its node was made"
            )

    async def repair(self) -> int:
        """Create the node of every firing left ``claimed`` (a crash came between the claim
        and the create); how many were looked at."""
        pending = await self.store.claimed_firings()
        for firing in pending:
            log.info("cron %s: creating the node of an interrupted firing", firing["cron_id"])
            try:
                await self._make(firing)
            except Exception:  # it stays claimed: the scheduler tries again
                log.exception("cron %s: its firing's node could not be made", firing["cron_id"])
                self._interrupted = True
        return len(pending)

    async def _create_node(self, cron: CronRow, firing: FiringRow) -> ApiError | None:
        """Create the firing's node and record how it went; the refusal, if refused."""
        store = self.store
        template = dict(cron["template"])
        if template.get("name") is None:
            template["name"] = cron["name"] or f"cron {cron['cron_id']}"
        extra: NodeExtra = {
            "cron": {"cron_id": cron["cron_id"], "tick": firing["tick"], "manual": firing["manual"]}
        }
        try:
            request = api.NodeCreateRequest.model_validate(
                {**template, "node_id": firing["node_id"]}
            )
            await self.engine.create(request, extra=extra)
        except ValidationError as exc:  # a template an older Heron accepted
            error = ApiError(422, "invalid_template", f"the template is no longer valid: {exc}")
        except ApiError as exc:
            error = exc
            if exc.code == "node_id_exists":  # made before a crash (or by another daemon)
                node = await self.engine.store.node(firing["node_id"])
                made = node is not None and (node["extra"] or {}).get("cron", {}).get("cron_id")
                if made == cron["cron_id"]:
                    await store.finish_firing(firing["firing_id"], "created")
                    return None
        else:
            await store.finish_firing(firing["firing_id"], "created")
            return None
        log.warning("cron %s could not create its node: %s", cron["cron_id"], error.message)
        await store.finish_firing(firing["firing_id"], "failed", f"{error.code}: {error.message}")
        return error

    # -- the routes ------------------------------------------------------------

    async def create(
        self,
        request: api.CronCreateRequest,
        *,
        cron_id: str | None = None,
        created_by: str | None = None,
        call_key: str | None = None,
    ) -> api.Cron:
        """Check and keep a new cron (``422`` ``invalid_schedule``, ``invalid_timezone``,
        ``invalid_template``); ``created_by``/``call_key``: the node tool call making it."""
        schedule, zone = _parse(request.schedule, request.timezone)
        template, profile = await self.check_template(request.template)
        now = time.time()
        row: CronRow = {
            "cron_id": cron_id or f"cron_{secrets.token_hex(8)}",
            "name": request.name,
            "profile": profile,
            "schedule": schedule.expression,
            "timezone": request.timezone,
            "template": template,
            "paused": request.paused,
            "next_fire_at": None if request.paused else schedule.next_after(now, zone),
            "last_fired_at": None,
            "last_node_id": None,
            "fire_count": 0,
            "created_by": created_by,
            "call_key": call_key,
            "created_at": now,
            "updated_at": now,
            "deleted_at": None,
            "deleted_by": None,
        }
        await self.store.insert_cron(row)
        self.wake()
        return to_cron(row, [])

    async def check_template(self, template: api.NodeCreateRequest) -> tuple[dict[str, Any], str]:
        """The template as kept, and its profile; ``422 invalid_template`` for one a create
        would refuse (its own code in ``details``)."""
        if template.node_id is not None:
            raise ApiError(
                422, "invalid_template", "a template names no node_id: each firing names its node"
            )
        if not (template.prompt and template.prompt.strip()):
            raise ApiError(
                422, "invalid_template", "a template needs a prompt: each firing's brief"
            )
        engine = self.engine
        try:  # what a create checks before it makes anything, on a row made as it would
            if template.root and template.parent is not None:
                raise ApiError(422, "invalid_request", "a root node has no parent")
            for feature in engine.features:  # outcome delivery
                feature.check_create(template)
            row, _ = new_row(template)  # output schema, cwd, deadline
            for feature in engine.features:  # a fork: the original's profile, kind, model
                await feature.derive(row, template)
            if template.parent is not None:
                await engine.row(template.parent)
            for feature in engine.features:  # profile, kind, and the model they imply
                await feature.complete(row)
            if row["model"] is not None:
                await engine.prepare_model(row["model"])
        except ApiError as exc:
            raise _template_error(exc) from None
        return template.model_dump(mode="json", exclude_unset=True), str(row["profile"])

    async def update(self, cron_id: str, request: api.CronUpdateRequest) -> api.Cron:
        """Change the cron's schedule, timezone, template or name, keeping its id and
        history (``422`` as at create); a new schedule or timezone counts from now."""
        current = await self._row(cron_id)
        expression = request.schedule or current["schedule"]
        timezone = request.timezone or current["timezone"]
        schedule, zone = _parse(expression, timezone)
        values: dict[str, Any] = {"schedule": schedule.expression, "timezone": timezone}
        if request.name is not None:
            values["name"] = request.name
        if request.template is not None:
            values["template"], values["profile"] = await self.check_template(request.template)
        retimed = (schedule.expression, timezone) != (current["schedule"], current["timezone"])

        def check(row: CronRow) -> dict[str, Any]:
            if retimed and not row["paused"]:
                return {**values, "next_fire_at": schedule.next_after(time.time(), zone)}
            return values

        row = await self._update(cron_id, check)
        self.wake()
        return await self._shown(row)

    async def get(self, cron_id: str) -> api.Cron:
        """The cron and its latest firings (``404 cron_not_found``)."""
        row = await self._row(cron_id)
        return await self._shown(row)

    async def firings(self, cron_id: str, *, limit: int, cursor: str | None) -> api.CronFiringPage:
        """A page of the cron's firings, newest first (``400 invalid_cursor`` for a cursor
        this list did not give)."""
        before = None
        if cursor is not None:
            if not (cursor.isascii() and cursor.isdigit() and len(cursor) <= 18):
                raise ApiError(400, "invalid_cursor", f"not a cursor this list gave: {cursor!r}")
            before = int(cursor)
        await self._row(cron_id)
        rows = await self.store.firings(cron_id, limit=limit + 1, before=before)
        more = len(rows) > limit
        rows = rows[:limit]
        return api.CronFiringPage(
            items=[to_firing(r) for r in rows],
            next_cursor=str(rows[-1]["firing_id"]) if more else None,
        )

    async def list(self, *, profile: str | None, paused: bool | None) -> list[api.Cron]:
        """Every cron, oldest first, optionally only a profile's and paused (or active) ones."""
        if profile is not None:
            check_profile_name(profile)
        rows = await self.store.list_crons(profile=profile, paused=paused)
        return [await self._shown(row) for row in rows]

    async def pause(self, cron_id: str) -> api.Cron:
        """Stop the schedule (``409 cron_paused`` if it is already)."""

        def check(row: CronRow) -> dict[str, Any]:
            if row["paused"]:
                raise ApiError(409, "cron_paused", f"cron {cron_id!r} is paused already")
            return {"paused": True, "next_fire_at": None}

        return await self._shown(await self._update(cron_id, check))

    async def resume(self, cron_id: str) -> api.Cron:
        """Restart the schedule from now: the ticks missed while paused do not fire
        (``409 cron_not_paused`` if it is not paused)."""

        def check(row: CronRow) -> dict[str, Any]:
            if not row["paused"]:
                raise ApiError(409, "cron_not_paused", f"cron {cron_id!r} is not paused")
            schedule, zone = _parse(row["schedule"], row["timezone"])
            return {"paused": False, "next_fire_at": schedule.next_after(time.time(), zone)}

        row = await self._update(cron_id, check)
        self.wake()
        return await self._shown(row)

    async def run(self, cron_id: str) -> api.CronFiring:
        """Fire the cron now (paused or not; the schedule is untouched); the firing."""
        cron = await self._row(cron_id)
        node_id = f"{cron_id}.run-{secrets.token_hex(4)}"
        firing = await self.store.add_manual_firing(cron_id, node_id)
        if firing is None:
            raise _not_found(cron_id)
        error = await self._create_node(cron, firing)
        if error is not None:
            raise ApiError(
                error.status if error.status != 409 else 422,
                "invalid_template",
                f"the cron's template no longer creates a node: {error.message}",
                {"code": error.code, "details": error.details},
            )
        return to_firing({**firing, "status": "created"})

    async def delete(self, cron_id: str, *, by: str | None = None) -> api.Cron:
        """Delete the cron (its nodes stay); the cron as it was. ``by``: the deleting call."""
        row = await self._update(
            cron_id, lambda _: {"deleted_at": time.time(), "deleted_by": by, "next_fire_at": None}
        )
        return to_cron({**row, "next_fire_at": None}, [])

    async def poke(self) -> api.CronPokeResult:
        """Fire what is due now, and count every schedule again from the clock as it is now
        (after the clock was set back, a cron waits for its next tick from now, not from
        the time it was computed at; a tick that fired already never fires twice)."""
        fired = await self.fire_due()
        now = time.time()
        for row in await self.store.list_crons(paused=False):

            def check(current: CronRow) -> dict[str, Any]:
                if current["paused"] or current["next_fire_at"] is None:
                    return {}
                schedule, zone = _parse(current["schedule"], current["timezone"])
                return {
                    "next_fire_at": min(current["next_fire_at"], schedule.next_after(now, zone))
                }

            await self.store.update_cron(row["cron_id"], check)
        self.wake()
        return api.CronPokeResult(fired=len(fired), firings=[to_firing(f) for f in fired])

    # -- helpers ---------------------------------------------------------------

    async def _row(self, cron_id: str) -> CronRow:
        row = await self.store.cron(check_cron_id(cron_id))
        if row is None:
            raise _not_found(cron_id)
        return row

    async def _update(self, cron_id: str, check: Any) -> CronRow:
        row = await self.store.update_cron(check_cron_id(cron_id), check)
        if row is None:
            raise _not_found(cron_id)
        return row

    async def _shown(self, row: CronRow) -> api.Cron:
        firings = await self.store.firings(row["cron_id"], limit=RECENT_FIRINGS)
        return to_cron(row, firings)


def _not_found(cron_id: str) -> ApiError:
    return ApiError(404, "cron_not_found", f"no cron {cron_id!r}")


def _parse(expression: str, timezone: str) -> tuple[Schedule, Any]:
    """The schedule and the zone; ``422 invalid_schedule`` / ``invalid_timezone``."""
    try:
        schedule = parse_schedule(expression)
    except ValueError as exc:
        raise ApiError(422, "invalid_schedule", str(exc)) from None
    try:
        zone = parse_timezone(timezone)
    except ValueError as exc:
        raise ApiError(422, "invalid_timezone", str(exc)) from None
    return schedule, zone


def _plan(row: CronRow, now: float) -> tuple[float | None, float | None]:
    """The tick a due cron fires now (the latest at or before ``now``: missed ticks
    coalesce) and the one it waits for next."""
    try:
        schedule, zone = _parse(row["schedule"], row["timezone"])
        tick = schedule.latest_until(now, zone)
        following = schedule.next_after(now, zone)
    except (ApiError, ValueError) as exc:  # stored before this Heron refused it
        log.error("cron %s cannot be scheduled any more: %s", row["cron_id"], exc)
        return None, None
    due = row["next_fire_at"]  # (set: a cron waiting for no tick is never due)
    if tick is not None and due is not None and tick < due:
        tick = None  # no tick since the one it waited for (the clock was set back)
    return tick, following


def to_firing(row: FiringRow) -> api.CronFiring:
    """A row of ``heron_cron_firings`` on the wire."""
    return api.CronFiring(
        cron_id=row["cron_id"],
        tick=maybe_when(row["tick"]),
        node_id=row["node_id"],
        manual=row["manual"],
        fired_at=when(row["fired_at"]),
        status=row["status"],
        error=row["error"],
    )


def to_cron(row: CronRow, firings: list[FiringRow]) -> api.Cron:
    """A row of ``heron_crons`` (and its latest firings, newest first) on the wire."""
    return api.Cron(
        cron_id=row["cron_id"],
        name=row["name"],
        profile=row["profile"],
        schedule=row["schedule"],
        timezone=row["timezone"],
        template=row["template"],
        paused=row["paused"],
        next_fire_at=None if row["paused"] else maybe_when(row["next_fire_at"]),
        last_fired_at=maybe_when(row["last_fired_at"]),
        last_node_id=row["last_node_id"],
        fire_count=row["fire_count"],
        created_by=row["created_by"],
        created_at=when(row["created_at"]),
        updated_at=when(row["updated_at"]),
        recent_firings=[to_firing(f) for f in firings],
    )
