"""The ``schedule`` scope's tools: ``cron-create``, ``cron-list``, ``cron-delete``, acting for
the node's profile, each making or deleting call keyed on its tool call."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import ValidationError

from ... import api
from ..._core import ToolError
from ...tools import Tool, ToolContext
from ..nodes import NodeRow, call_key, narrowed_scopes
from ..profiles import DEFAULT_PROFILE, given_model
from ..server import ApiError
from ._schedule import parse_schedule

if TYPE_CHECKING:
    from ._service import Crons

__all__ = ["CronCreateTool", "CronDeleteTool", "CronListTool", "cron_tools"]


class _CronTool(Tool):
    """A tool acting for one node (and its profile) in one run."""

    arguments: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}
    """The tool's input schema."""

    def __init__(self, crons: Crons, node_id: str, run: int) -> None:
        super().__init__(input_schema=self.arguments)
        self._engine = crons.engine
        self._crons = crons
        self._node_id = node_id
        self._run = run

    async def _node(self) -> NodeRow:
        return await self._engine.row(self._node_id)

    def _key(self) -> str:
        """This call's key, the same when DBOS runs it again (hashed: ids may be long)."""
        return hashlib.sha256(f"{self._node_id}:{call_key(self._run)}".encode()).hexdigest()


def _profile(node: NodeRow) -> str:
    return str(node["profile"] or DEFAULT_PROFILE)


def _has_seconds(expression: object) -> bool:
    """Whether ``expression`` parses with a leading seconds field (a bad one is left to
    the create, which says what is wrong with it)."""
    if not isinstance(expression, str):
        return False
    try:
        return parse_schedule(expression).seconds
    except ValueError:
        return False


def _line(cron: api.Cron) -> str:
    label = f" {cron.name!r}" if cron.name else ""
    when = "paused" if cron.paused else f"next {cron.next_fire_at:%Y-%m-%d %H:%M:%S}Z"
    return f"{cron.cron_id}{label}: `{cron.schedule}` ({cron.timezone}), {when}"


class CronCreateTool(_CronTool):
    """``cron-create``: schedule a task that runs as a new node at every tick."""

    name = "cron-create"
    description = (
        "Schedule a recurring task: at every tick of `schedule` (a cron expression: "
        "`minute hour day month weekday`, e.g. `0 9 * * mon-fri`, at most once a minute; "
        "or @hourly/@daily/@weekly/@monthly) in `timezone` (IANA, default UTC), "
        "a new agent run starts on `prompt` (its entire brief) in your profile."
    )
    arguments: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "schedule": {"type": "string", "minLength": 1, "maxLength": 256},
            "prompt": {"type": "string", "minLength": 1, "description": "Each run's task."},
            "timezone": {"type": "string", "description": "IANA name, e.g. Europe/Berlin."},
            "name": {"type": "string", "maxLength": 512},
            "kind": {"type": "string", "maxLength": 512, "description": "A persona."},
            "model": {"type": "string", "maxLength": 512, "description": "Another model."},
            "scopes": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "description": "Narrow the runs' scopes (within yours).",
            },
            "deadline": {"type": "string", "description": "Each run's limit, e.g. `10m`."},
        },
        "required": ["schedule", "prompt"],
        "additionalProperties": False,
    }

    async def execute(self, arguments: dict[str, Any], context: ToolContext) -> str:
        key = self._key()
        made = await self._crons.store.cron_by_key(self._node_id, key)
        if made is not None:  # this very call ran before a restart
            return f"Created cron {made['cron_id']}."
        if _has_seconds(arguments["schedule"]):
            # Each tick starts a model run: a node's mistake must not cost one a second.
            raise ToolError(
                "a cron made by a node fires at most once a minute: give 5 fields "
                "(minute hour day month weekday), not a seconds field"
            )
        node = await self._node()
        scopes = narrowed_scopes(arguments.get("scopes"), node["scopes"], "a cron's runs")
        try:
            request = api.CronCreateRequest(
                schedule=arguments["schedule"],
                timezone=arguments.get("timezone") or "UTC",
                name=arguments.get("name"),
                template=api.NodeCreateRequest(
                    prompt=arguments["prompt"],
                    name=arguments.get("name"),
                    kind=arguments.get("kind"),
                    model=arguments.get("model") or given_model(node),
                    profile=_profile(node),
                    cwd=node["cwd"],
                    scopes=scopes,
                    deadline=arguments.get("deadline"),
                ),
            )
            cron = await self._crons.create(
                request, cron_id=f"cron_{key[:16]}", created_by=self._node_id, call_key=key
            )
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()
            )
            raise ToolError(f"cannot create that cron: {problems}") from None
        except ApiError as exc:
            raise ToolError(f"cannot create that cron: {exc.message}") from None
        return f"Created cron {_line(cron)}."


class CronListTool(_CronTool):
    """``cron-list``: the crons of the node's profile."""

    name = "cron-list"
    description = "List the scheduled tasks (crons) of your profile."

    async def execute(self, arguments: dict[str, Any], context: ToolContext) -> str:
        profile = _profile(await self._node())
        crons = await self._crons.list(profile=profile, paused=None)
        if not crons:
            return f"No crons in profile {profile}."
        return "\n".join(_line(cron) for cron in crons)


class CronDeleteTool(_CronTool):
    """``cron-delete``: delete one of the profile's crons (the runs it made stay)."""

    name = "cron-delete"
    description = "Delete a scheduled task (cron) of your profile by its id (see cron-list)."
    arguments: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"cron_id": {"type": "string", "minLength": 1, "maxLength": 128}},
        "required": ["cron_id"],
        "additionalProperties": False,
    }

    async def execute(self, arguments: dict[str, Any], context: ToolContext) -> str:
        cron_id, key = arguments["cron_id"], self._key()
        profile = _profile(await self._node())
        row = await self._crons.store.cron(cron_id) if api.is_valid_id(cron_id) else None
        if row is None or row["profile"] != profile:
            gone = await self._crons.store.deleted_cron(cron_id) if row is None else None
            if gone is not None and gone["deleted_by"] == key:  # this call, before a restart
                return f"Deleted cron {cron_id}."
            raise ToolError(f"no cron {cron_id!r} in profile {profile} (cron-list shows them)")
        try:
            await self._crons.delete(cron_id, by=key)
        except ApiError as exc:  # deleted meanwhile
            raise ToolError(exc.message) from None
        return f"Deleted cron {cron_id}."


def cron_tools(crons: Crons, node_id: str, run: int) -> list[Tool]:
    """The ``schedule`` tools of a node's run."""
    return [
        CronCreateTool(crons, node_id, run),
        CronListTool(crons, node_id, run),
        CronDeleteTool(crons, node_id, run),
    ]
