"""The ``heron`` command line (Typer + Rich)."""

import sys
import typing

if typing.TYPE_CHECKING:
    from ._app import app


def main() -> None:
    """Entry point of the ``heron`` console script."""
    if sys.argv[1:] == ["--version"]:
        # Answered before Typer and the commands load: scripts and installers call it often.
        from .._core.version import __version__

        print(f"heron {__version__}")
        return
    from ._app import main as run

    run()


if not typing.TYPE_CHECKING:  # type checkers see the import above

    def __getattr__(name: str) -> typing.Any:
        if name != "app":
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        from ._app import app

        return app


__all__ = ["app", "main"]
