"""``httpx``, imported without its command-line client.

httpx's ``__init__`` imports ``httpx._main``, its ``httpx`` command, whenever click
and rich are installed (Heron's command line installs both): click, rich's console,
progress bars and tables and pygments, about 40 ms that a program using the client
never needs. The first import of httpx in a process goes through here: ``httpx._main``
is held back while httpx loads, and ``httpx.main`` becomes a name that imports it on
first use, so ``httpx.main`` and ``from httpx import main`` still give the real command.
If httpx was imported before (by the program, or a library), it is left as it is.
"""

from __future__ import annotations

import sys
from typing import Any


def _import_without_cli() -> None:
    if "httpx" in sys.modules or "httpx._main" in sys.modules:
        return
    sys.modules["httpx._main"] = None  # type: ignore[assignment]  # its import fails, fast
    try:
        import httpx
    finally:
        if sys.modules.get("httpx._main", "") is None:
            del sys.modules["httpx._main"]
    namespace = vars(httpx)
    # The stand-in httpx defined when its CLI would not import (it says to install it).
    stand_in = namespace.pop("main", None)
    previous = namespace.get("__getattr__")  # a later httpx may have lazy names of its own

    def __getattr__(name: str) -> Any:
        if name != "main":
            if previous is not None:
                return previous(name)
            raise AttributeError(f"module 'httpx' has no attribute {name!r}")
        try:
            from httpx._main import main
        except ImportError:  # click or rich missing: httpx's own stand-in says so
            main = stand_in
        namespace["main"] = main
        return main

    namespace["__getattr__"] = __getattr__


_import_without_cli()

import httpx  # noqa: E402  (loaded above; this binds the name for the client's modules)

__all__ = ["httpx"]
