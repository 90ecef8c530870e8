"""``heron ui``: open the daemon's web page, signed in."""

from __future__ import annotations

import webbrowser
from typing import Annotated

import typer

from ._nodes import _with_client

__all__ = ["ui"]


def ui(
    ctx: typer.Context,
    no_open: Annotated[
        bool, typer.Option("--no-open", help="Print the sign-in link; open no browser.")
    ] = False,
    port: Annotated[
        int | None,
        typer.Option(
            min=0,
            max=65535,
            help="The loopback port for the page if the daemon has no TCP listener yet "
            "(default: the port it had last time, else any free one).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Open the web canvas: every node live, the inbox, memory, crons and models.

    The daemon (started if none runs) serves the page on a loopback TCP listener; the
    link printed signs one browser in, once, within two minutes.
    """
    page = _with_client(ctx, lambda client: client.system.open_page(port=port), start=True)
    typer.echo(f"Heron's page: {page.url}")
    typer.echo(f"Sign in (one use, within two minutes): {page.login_url}")
    if not no_open and not webbrowser.open(page.login_url):
        typer.echo("No browser could be opened here: open the sign-in link yourself.", err=True)
