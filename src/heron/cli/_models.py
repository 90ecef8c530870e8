"""``heron models``: the API keys installed in the daemon, and its default model.

``heron models credentials install openai`` asks for the key at a hidden prompt, or
reads it from stdin when stdin is not a terminal (``... < key.txt``,
``pass openai | heron models credentials install openai``), or from an environment
variable named by ``--from-env``: never from the command line, where it would land in
the shell's history and the process list.
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from .. import api
from ._nodes import _fail, _print_json, _say, _when, _with_client
from ._table import Column, print_table

if TYPE_CHECKING:
    from ..client import Heron

__all__ = ["models_app"]

models_app = typer.Typer(
    help="Models: API keys installed in the daemon, and its default model.",
    no_args_is_help=True,
)
credentials_app = typer.Typer(
    help="API keys installed in the daemon (they win over its environment; never shown).",
    no_args_is_help=True,
)
config_app = typer.Typer(help="The daemon's default model.", no_args_is_help=True)
models_app.add_typer(credentials_app, name="credentials")
models_app.add_typer(config_app, name="config")

JsonOption = Annotated[bool, typer.Option("--json", help="Print the daemon's answer as JSON.")]


def _provider(value: str) -> str:
    if value not in api.CREDENTIAL_PROVIDERS:
        raise typer.BadParameter(f"{value!r} is none of {', '.join(api.CREDENTIAL_PROVIDERS)}")
    return value


ProviderArg = Annotated[
    str,
    typer.Argument(
        metavar="PROVIDER",
        parser=_provider,
        help=f"One of {', '.join(api.CREDENTIAL_PROVIDERS)}.",
        show_default=False,
    ),
]


def _source(state: api.ModelCredential) -> Text:
    if state.source == "installed":
        return Text("installed", style="green")
    if state.source == "environment":
        return Text("environment", style="cyan")
    return Text("none", style="dim")


@credentials_app.command("list")
def list_(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Each provider's key: installed, from the daemon's environment, or none (never the key)."""

    def go(client: Heron) -> None:
        states = client.models.credentials.list()
        if as_json:
            typer.echo(json.dumps([s.model_dump(mode="json") for s in states], indent=2))
            return
        columns = [
            Column("PROVIDER", whole=True),
            Column("KEY", whole=True),
            Column("BASE URL", wrap_min=16),
            Column("INSTALLED", drop=1, wrap_min=10),
        ]
        rows = [
            [
                state.provider,
                _source(state),
                state.base_url or "-",
                _when(state.installed_at) if state.installed_at else "-",
            ]
            for state in states
        ]
        print_table(columns, rows)

    _with_client(ctx, go)


def _read_key(ctx: typer.Context, provider: str, variable: str | None) -> str:
    """The key: from ``$variable``, else stdin when it is not a terminal, else a hidden prompt."""
    if variable is not None:
        key = os.environ.get(variable, "")
        source = f"the environment variable {variable}"
    elif not sys.stdin.isatty():
        key = sys.stdin.read()
        source = "stdin"
    else:
        key = typer.prompt(
            f"API key for {provider}", hide_input=True, default="", show_default=False
        )
        source = "the prompt"
    key = key.strip()
    if not key:
        _fail(ctx, f"no API key was given on {source}")
    if "\n" in key:
        _fail(ctx, f"{source} holds more than one line: give the key alone")
    return key


@credentials_app.command("install")
def install(
    ctx: typer.Context,
    provider: ProviderArg,
    base_url: Annotated[
        str | None,
        typer.Option(
            help="Send the provider's requests here instead (a proxy, a compatible server)."
        ),
    ] = None,
    from_env: Annotated[
        str | None,
        typer.Option(
            "--from-env",
            metavar="VARIABLE",
            help="Read the key from this environment variable (not from a prompt or stdin).",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Install (or replace) PROVIDER's API key in the daemon.

    The key is read at a hidden prompt, or from stdin when it is not a terminal, or from
    --from-env VARIABLE; never from the command line. It is stored readable by the
    daemon's user only and never shown again.
    """
    key = _read_key(ctx, provider, from_env)

    def go(client: Heron) -> None:
        state = client.models.credentials.install(provider, api_key=key, base_url=base_url)  # type: ignore[arg-type]
        if as_json:
            _print_json(state)
            return
        where = f" (requests go to {state.base_url})" if state.base_url else ""
        _say(f"installed the API key of {provider}{where}: nodes use it from their next turn")

    _with_client(ctx, go)


@credentials_app.command("remove")
def remove(ctx: typer.Context, provider: ProviderArg, as_json: JsonOption = False) -> None:
    """Remove PROVIDER's installed API key (the environment's, if any, applies again)."""

    def go(client: Heron) -> None:
        state = client.models.credentials.remove(provider)  # type: ignore[arg-type]
        if as_json:
            _print_json(state)
            return
        after = (
            "the key in the daemon's environment applies again"
            if state.source == "environment"
            else f"{provider} has no key now"
        )
        _say(f"removed the installed API key of {provider}: {after}")

    _with_client(ctx, go)


_SOURCES = {
    "config": "set with heron models config set",
    "environment": "HERON_PROVIDER",
    "builtin": "the embedded model: nothing set",
}


def _show_config(config: api.ModelConfig, as_json: bool) -> None:
    if as_json:
        _print_json(config)
        return
    _say(f"default model: {config.effective_default} ({_SOURCES[config.source]})")
    if config.ready:
        _say(f"ready: {config.detail}", "green")
    else:
        _say(f"not ready: {config.detail}", "yellow")


@config_app.command("show")
def show(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """The daemon's default model, where it comes from, and whether it is ready."""
    _with_client(ctx, lambda client: _show_config(client.models.config.retrieve(), as_json))


@config_app.command("set")
def set_(
    ctx: typer.Context,
    default_model: Annotated[
        str | None,
        typer.Argument(
            metavar="[MODEL]",
            help="The default model spec: openai:gpt-5, anthropic:claude-sonnet-5, local ...",
            show_default=False,
        ),
    ] = None,
    clear: Annotated[
        bool, typer.Option("--clear", help="Clear it: HERON_PROVIDER (else local) applies again.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Set the model nodes use when neither their create, kind nor profile names one.

    It is kept across daemon restarts and wins over HERON_PROVIDER. A model whose key
    is not installed yet is accepted (and shown as not ready).
    """
    if (default_model is None) == (not clear):
        raise typer.BadParameter("give a MODEL, or --clear (not both)")

    def go(client: Heron) -> None:
        _show_config(client.models.config.update(default_model=default_model), as_json)

    _with_client(ctx, go)
