"""``heron ui``: open the daemon's web page, signed in."""

from __future__ import annotations

import webbrowser
from typing import TYPE_CHECKING, Annotated
from urllib.parse import urlsplit, urlunsplit

import typer

from ._nodes import _with_client

if TYPE_CHECKING:
    from ..api import PageOpen
    from ..client import Heron

__all__ = ["ui"]


def _seen_from(address: str, base_url: str) -> str:
    """``address`` (the daemon's own view of its page: ``127.0.0.1`` for a wildcard
    listener) as a client reaching the daemon at ``base_url`` over TCP must open it:
    the same listener (port) on the host the client uses."""
    page, client = urlsplit(address), urlsplit(base_url)
    client_port = client.port or (443 if client.scheme == "https" else 80)
    if not client.hostname or page.port != client_port:
        return address  # another listener: only the daemon's host knows it
    return urlunsplit((client.scheme, client.netloc, page.path, page.query, page.fragment))


def _open(client: Heron, port: int | None) -> PageOpen:
    page = client.system.open_page(port=port)
    if client.settings.socket_path is not None:
        return page  # a daemon on this machine: its loopback address is right here
    base = client.settings.base_url
    return page.model_copy(
        update={"url": _seen_from(page.url, base), "login_url": _seen_from(page.login_url, base)}
    )


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
    page = _with_client(ctx, lambda client: _open(client, port), start=True)
    typer.echo(f"Heron's page: {page.url}")
    typer.echo(f"Sign in (one use, within two minutes): {page.login_url}")
    if not no_open and not webbrowser.open(page.login_url):
        typer.echo("No browser could be opened here: open the sign-in link yourself.", err=True)
