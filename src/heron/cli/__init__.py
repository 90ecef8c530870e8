"""The ``heron`` command line (Typer + Rich)."""

from ._app import app, main

__all__ = ["app", "main"]
