"""``heron crons``: schedules on the daemon that create a node from a template at each tick."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .. import api
from ._nodes import JsonOption, _check_id, _fail, _print_json, _say, _when, _with_client, duration
from ._table import Column, print_table

if TYPE_CHECKING:
    from ..client import Heron

__all__ = ["crons_app"]

crons_app = typer.Typer(
    help="Crons: schedules that create a node from a template at each tick.",
    no_args_is_help=True,
)

CronIdArg = Annotated[str, typer.Argument(metavar="ID", help="The cron's id.", show_default=False)]


def _print_list(crons: Sequence[api.Cron]) -> None:
    data = [cron.model_dump(mode="json") for cron in crons]
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False))


def _state(cron: api.Cron) -> str:
    return "paused" if cron.paused else f"next {_when(cron.next_fire_at)}"


def _cron_lines(cron: api.Cron) -> list[tuple[str, str]]:
    """The fields ``get`` shows, as (label, value) pairs; unset ones are left out."""
    template = cron.template
    rows: list[tuple[str, str | None]] = [
        ("id", cron.cron_id),
        ("name", cron.name),
        ("schedule", f"{cron.schedule} ({cron.timezone})"),
        ("state", _state(cron)),
        ("profile", cron.profile),
        ("prompt", str(template.get("prompt", ""))[:200]),
        ("model", template.get("model")),
        ("kind", template.get("kind")),
        ("cwd", template.get("cwd")),
        ("created by", cron.created_by),
        ("created", _when(cron.created_at)),
        ("fired", f"{cron.fire_count} times, last {_when(cron.last_fired_at)}"),
        ("last node", cron.last_node_id),
    ]
    return [(label, value) for label, value in rows if value is not None]


def _firing_line(firing: api.CronFiring) -> str:
    when = "run by hand" if firing.manual else f"tick {_when(firing.tick)}"
    error = f": {firing.error}" if firing.error else ""
    return f"{_when(firing.fired_at)}  {when}  {firing.node_id}  {firing.status}{error}"


def _show(
    ctx: typer.Context,
    action: Callable[[Heron], api.Cron],
    done: str,
    as_json: bool,
    *,
    start: bool = False,
) -> None:
    def go(client: Heron) -> None:
        cron = action(client)
        if as_json:
            _print_json(cron)
        else:
            _say(f"{done} cron {cron.cron_id} ({_state(cron)})")

    _with_client(ctx, go, start=start)


@crons_app.command("list")
def list_(
    ctx: typer.Context,
    profile: Annotated[str | None, typer.Option(help="Only this profile's crons.")] = None,
    paused: Annotated[
        bool | None, typer.Option("--paused/--active", help="Only paused, or only active, crons.")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """List the crons, oldest first: id, name, schedule, next tick, firings."""
    if profile is not None:
        _check_id(ctx, profile, "profile name")

    def go(client: Heron) -> None:
        crons = client.crons.list(profile=profile, paused=paused)
        if as_json:
            _print_list(crons)
            return
        if not crons:
            _say("no crons")
            return
        columns = [
            Column("ID", whole=True),
            Column("NAME", drop=1, wrap_min=12),
            Column("SCHEDULE", wrap_min=12),
            Column("STATE", wrap_min=12, drop=2),
            Column("FIRED", whole=True, justify="right"),
        ]
        rows = [
            [
                cron.cron_id,
                cron.name or "-",
                f"{cron.schedule} ({cron.timezone})",
                _state(cron),
                str(cron.fire_count),
            ]
            for cron in crons
        ]
        print_table(columns, rows)

    _with_client(ctx, go)


@crons_app.command("create")
def create(
    ctx: typer.Context,
    schedule: Annotated[
        str, typer.Argument(help="Cron expression, e.g. '0 9 * * mon-fri' or @daily.")
    ],
    prompt: Annotated[str, typer.Argument(help="Each node's brief: its first message.")],
    timezone: Annotated[str, typer.Option("--timezone", "--tz", help="IANA timezone.")] = "UTC",
    name: Annotated[str | None, typer.Option(help="Display label.")] = None,
    model: Annotated[str | None, typer.Option(help="Model (provider spec).")] = None,
    kind: Annotated[str | None, typer.Option(help="Persona.")] = None,
    profile: Annotated[str | None, typer.Option(help="Profile its nodes run under.")] = None,
    cwd: Annotated[
        Path | None,
        typer.Option(help="Working directory (default: the current one).", show_default=False),
    ] = None,
    scope: Annotated[
        list[str] | None,
        typer.Option("--scope", help="Allow only this scope (repeat for more); default: all."),
    ] = None,
    deadline: Annotated[
        str | None,
        typer.Option(
            parser=duration, metavar="DURATION", help="Each node's wall clock (1d, 2h, 30m)."
        ),
    ] = None,
    paused: Annotated[bool, typer.Option("--paused", help="Create it paused.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Create a cron: at every tick of SCHEDULE a node starts on PROMPT.

    SCHEDULE has 5 fields (minute hour day month weekday), 6 with a leading seconds
    field, or is @hourly, @daily, @weekly, @monthly or @yearly.
    """
    if not prompt.strip():
        _fail(ctx, "the prompt is empty")
    template: dict[str, Any] = {
        "prompt": prompt,
        "cwd": os.fspath((cwd or Path.cwd()).expanduser().resolve()),
        "model": model,
        "kind": kind,
        "profile": profile,
        "scopes": scope or None,
        "deadline": deadline,
    }
    template = {key: value for key, value in template.items() if value is not None}

    def make(client: Heron) -> api.Cron:
        return client.crons.create(schedule, template, timezone=timezone, name=name, paused=paused)

    # Like `heron nodes create`, it sets work going: a cold socket gets a daemon.
    _show(ctx, make, "created", as_json, start=True)


@crons_app.command("update")
def update(
    ctx: typer.Context,
    cron_id: CronIdArg,
    schedule: Annotated[
        str | None, typer.Option(help="New cron expression (counts from now).")
    ] = None,
    timezone: Annotated[
        str | None, typer.Option("--timezone", "--tz", help="New IANA timezone.")
    ] = None,
    name: Annotated[str | None, typer.Option(help="New display label.")] = None,
    prompt: Annotated[str | None, typer.Option(help="New brief for its nodes.")] = None,
    model: Annotated[str | None, typer.Option(help="New model (provider spec).")] = None,
    kind: Annotated[str | None, typer.Option(help="New persona.")] = None,
    deadline: Annotated[
        str | None,
        typer.Option(
            parser=duration, metavar="DURATION", help="New wall clock per node (1d, 2h, 30m)."
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Change a cron (its id and firings stay): schedule, timezone, name, or its
    template's prompt, model, kind or deadline (the rest of the template stays)."""
    _check_id(ctx, cron_id, "cron id")
    changes = {"prompt": prompt, "model": model, "kind": kind, "deadline": deadline}
    changes = {key: value for key, value in changes.items() if value is not None}
    if not changes and schedule is None and timezone is None and name is None:
        _fail(ctx, "nothing to change: give --schedule, --tz, --name, --prompt, --model ...")
    if prompt is not None and not prompt.strip():
        _fail(ctx, "the prompt is empty")

    def change(client: Heron) -> api.Cron:
        template = None
        if changes:  # the template is replaced whole: start from the current one
            template = {**client.crons.retrieve(cron_id).template, **changes}
        return client.crons.update(
            cron_id, schedule=schedule, timezone=timezone, template=template, name=name
        )

    _show(ctx, change, "updated", as_json)


@crons_app.command("get")
def get(ctx: typer.Context, cron_id: CronIdArg, as_json: JsonOption = False) -> None:
    """Show one cron and its latest firings."""
    _check_id(ctx, cron_id, "cron id")

    def go(client: Heron) -> None:
        cron = client.crons.retrieve(cron_id)
        if as_json:
            _print_json(cron)
            return
        lines = _cron_lines(cron)
        width = max(len(label) for label, _ in lines)
        for label, value in lines:
            _say(f"{label:<{width}}  {value}")
        if cron.recent_firings:
            _say("latest firings:", "bold")
            for firing in cron.recent_firings:
                _say(f"  {_firing_line(firing)}", "red" if firing.status == "failed" else None)

    _with_client(ctx, go)


@crons_app.command("firings")
def firings(
    ctx: typer.Context,
    cron_id: CronIdArg,
    limit: Annotated[int, typer.Option(min=1, max=200, help="At most this many.")] = 20,
    cursor: Annotated[str | None, typer.Option(help="Go on from a previous page.")] = None,
    as_json: JsonOption = False,
) -> None:
    """List a cron's firings, newest first (every one is kept)."""
    _check_id(ctx, cron_id, "cron id")

    def go(client: Heron) -> None:
        page = client.crons.firings(cron_id, limit=limit, cursor=cursor)
        if as_json:
            _print_json(page)
            return
        if not page.items:
            _say("no firings")
        for firing in page.items:
            _say(_firing_line(firing), "red" if firing.status == "failed" else None)
        if page.next_cursor is not None:
            _say(f"older: heron crons firings {cron_id} --cursor {page.next_cursor}", "dim")

    _with_client(ctx, go)


@crons_app.command("pause")
def pause(ctx: typer.Context, cron_id: CronIdArg, as_json: JsonOption = False) -> None:
    """Pause a cron's schedule (run still fires it)."""
    _check_id(ctx, cron_id, "cron id")
    _show(ctx, lambda client: client.crons.pause(cron_id), "paused", as_json)


@crons_app.command("resume")
def resume(ctx: typer.Context, cron_id: CronIdArg, as_json: JsonOption = False) -> None:
    """Resume a paused cron from now (ticks missed while paused do not fire)."""
    _check_id(ctx, cron_id, "cron id")
    _show(ctx, lambda client: client.crons.resume(cron_id), "resumed", as_json)


@crons_app.command("delete")
def delete(ctx: typer.Context, cron_id: CronIdArg, as_json: JsonOption = False) -> None:
    """Delete a cron (the nodes it created stay)."""
    _check_id(ctx, cron_id, "cron id")

    def go(client: Heron) -> None:
        cron = client.crons.delete(cron_id)
        if as_json:
            _print_json(cron)
        else:
            _say(f"deleted cron {cron.cron_id}")

    _with_client(ctx, go)


@crons_app.command("run")
def run(ctx: typer.Context, cron_id: CronIdArg, as_json: JsonOption = False) -> None:
    """Fire a cron now (even paused): prints the node it created."""
    _check_id(ctx, cron_id, "cron id")

    def go(client: Heron) -> None:
        firing = client.crons.run(cron_id)
        if as_json:
            _print_json(firing)
            return
        _say(f"fired cron {cron_id}: created node {firing.node_id}")
        _say(f"watch it: heron nodes watch {firing.node_id}", "dim")

    _with_client(ctx, go, start=True)


@crons_app.command("poke")
def poke(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Fire what is due now and count every schedule again from the current clock."""

    def go(client: Heron) -> None:
        result = client.crons.poke()
        if as_json:
            _print_json(result)
            return
        _say(f"{result.fired} cron{'' if result.fired == 1 else 's'} fired")
        for firing in result.firings:
            _say(f"  {firing.cron_id}: {_firing_line(firing)}")

    _with_client(ctx, go)
