"""``heron profiles`` and ``heron kinds``: what a node runs under, and the personas it takes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

from .. import api
from ._nodes import JsonOption, _check_id, _console, _print_json, _say, _when, _with_client
from ._table import Cell, Column, print_table
from ._view import _one_line

if TYPE_CHECKING:
    from ..client import Heron

__all__ = ["kinds_app", "profiles_app"]

profiles_app = typer.Typer(
    help="Profiles: the store, defaults and purview a node runs under (list, get, ensure).",
    no_args_is_help=True,
)
kinds_app = typer.Typer(
    help="Kinds: the personas a node can take (instruction, tools, skills, model).",
    no_args_is_help=True,
)

NameArg = Annotated[str, typer.Argument(metavar="NAME", help="The name.", show_default=False)]


def _profile_lines(profile: api.Profile) -> list[tuple[str, str]]:
    rows: list[tuple[str, str | None]] = [
        ("name", profile.name),
        ("description", profile.description),
        ("default kind", profile.default_kind or "general (none set)"),
        ("default model", profile.default_model or "its kind's, else the daemon's (none set)"),
        ("store", profile.store_path),
        ("created", _when(profile.created_at)),
        ("updated", _when(profile.updated_at)),
    ]
    return [(label, value) for label, value in rows if value is not None]


def _show_profile(profile: api.Profile) -> None:
    lines = _profile_lines(profile)
    width = max(len(label) for label, _ in lines)
    for label, value in lines:
        _say(f"{label:<{width}}  {value}")


@profiles_app.command("list")
def list_profiles(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """List the profiles, by name: default kind and model, description."""

    def go(client: Heron) -> None:
        profiles = client.profiles.list()
        if as_json:
            _print_json(profiles)
            return
        columns = [
            Column("NAME", whole=True),
            Column("DEFAULT KIND", wrap_min=10, drop=2),
            Column("DEFAULT MODEL", wrap_min=12, drop=1),
            Column("DESCRIPTION", wrap_min=16),
        ]
        rows: list[list[Cell]] = [
            [
                profile.name,
                profile.default_kind or "-",
                profile.default_model or "-",
                _one_line(profile.description or "", 200) or "-",
            ]
            for profile in profiles
        ]
        print_table(columns, rows)

    _with_client(ctx, go)


@profiles_app.command("get")
def get_profile(ctx: typer.Context, name: NameArg, as_json: JsonOption = False) -> None:
    """Show one profile (``default`` always exists)."""
    _check_id(ctx, name, "profile name")

    def go(client: Heron) -> None:
        profile = client.profiles.retrieve(name)
        if as_json:
            _print_json(profile)
        else:
            _show_profile(profile)

    _with_client(ctx, go)


_CLEAR = "-"
"""The value that clears a setting (``--default-model -``)."""


@profiles_app.command("ensure")
def ensure_profile(
    ctx: typer.Context,
    name: NameArg,
    description: Annotated[
        str | None, typer.Option(help="What the profile is for ('-' clears it).")
    ] = None,
    default_kind: Annotated[
        str | None,
        typer.Option(help="The kind its nodes take by default ('-' clears it; heron kinds list)."),
    ] = None,
    default_model: Annotated[
        str | None,
        typer.Option(help="The model its nodes use by default, e.g. openai:gpt-4o ('-' clears)."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Create the profile, or set the options given on it (the others keep their value).

    Running it twice changes nothing: name the profile on create (heron nodes create
    --profile NAME ...).
    """
    _check_id(ctx, name, "profile name")
    given = (
        ("description", description),
        ("default_kind", default_kind),
        ("default_model", default_model),
    )
    fields: dict[str, Any] = {
        key: (None if value == _CLEAR else value) for key, value in given if value is not None
    }

    def go(client: Heron) -> None:
        profile = client.profiles.ensure(name, **fields)
        if as_json:
            _print_json(profile)
            return
        _say(f"profile {profile.name} {'created' if profile.created else 'ensured'}")
        _show_profile(profile)

    _with_client(ctx, go, start=True)


def _kinds(client: Heron) -> api.KindList:
    return api.KindList.model_validate(client.request("GET", "/v1/kinds"))


@kinds_app.command("list")
def list_kinds(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """List the kinds a node can take (--kind on create), and broken kind files."""

    def go(client: Heron) -> None:
        listing = _kinds(client)
        if as_json:
            _print_json(listing)
            return
        columns = [
            Column("NAME", whole=True),
            Column("SOURCE", whole=True, drop=2),
            Column("MODEL", wrap_min=10, drop=1),
            Column("DESCRIPTION", wrap_min=16),
        ]
        rows: list[list[Cell]] = [
            [
                kind.name,
                kind.source + (" (overrides built-in)" if kind.overrides_builtin else ""),
                kind.model or "-",
                _one_line(kind.description, 200) or "-",
            ]
            for kind in listing.kinds
        ]
        print_table(columns, rows)
        console = _console()
        for problem in listing.problems:
            line = Text(f"broken kind file {problem.path}: {problem.message}", style="red")
            console.print(line, soft_wrap=True)

    _with_client(ctx, go)


@kinds_app.command("get")
def get_kind(ctx: typer.Context, name: NameArg, as_json: JsonOption = False) -> None:
    """Show one kind: what it is for, its model, tools, skills and instruction."""
    _check_id(ctx, name, "kind name")

    def go(client: Heron) -> None:
        kind = api.Kind.model_validate(client.request("GET", f"/v1/kinds/{name}"))
        if as_json:
            _print_json(kind)
            return
        rows: list[tuple[str, str | None]] = [
            ("name", kind.name),
            ("description", kind.description),
            ("source", kind.path if kind.path else kind.source),
            ("model", kind.model or "the profile's, else the daemon's"),
            ("tools", ", ".join(kind.tools) if kind.tools is not None else "every tool allowed"),
            ("skills", ", ".join(kind.skills) or None),
        ]
        shown = [(label, value) for label, value in rows if value]
        width = max(len(label) for label, _ in shown)
        for label, value in shown:
            _say(f"{label:<{width}}  {value}")
        _say("")
        console = _console()
        console.print(Text("instruction", style="bold"))
        console.print(Text(kind.instruction.rstrip()), soft_wrap=True)

    _with_client(ctx, go)
