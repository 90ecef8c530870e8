"""Names of a package that are imported on first use (PEP 562).

A package's ``__init__`` lists which submodule defines each public name and
binds the two functions :func:`attach` returns to its own ``__getattr__`` and
``__dir__``; type checkers see the same names through imports under
``if TYPE_CHECKING:``. ``import heron.client`` thus costs what the client
needs, not the SDK, and ``from heron.agents import SimpleAgent`` loads the
agent loop without the daemon-side helpers of the same package.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["attach"]


def attach(
    package: str, submodules: Mapping[str, Iterable[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``.

    ``submodules`` maps a relative module name (``"._agent"``) to the names
    it defines; a name is imported the first time it is asked for, then kept
    in the package's namespace so the next access is a plain lookup.
    """
    lazy = {name: module for module, names in submodules.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = lazy.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        vars(sys.modules[package])[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *lazy})

    return __getattr__, __dir__
