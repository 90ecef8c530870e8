"""The daemon: the kernel and the registered features put together as an app and a process.

The one place that names every feature (``FEATURES``, in the order the kernel makes,
starts and stops them).
"""

import typing

from ..._core.lazy import attach as _attach

if typing.TYPE_CHECKING:
    from ._app import build_app, wrap
    from ._features import FEATURES, SCHEMAS
    from ._server import run_daemon, serve

if not typing.TYPE_CHECKING:  # type checkers see the imports above, and no catch-all
    __getattr__, __dir__ = _attach(
        __name__,
        {
            "._app": ("build_app", "wrap"),
            "._features": ("FEATURES", "SCHEMAS"),
            "._server": ("run_daemon", "serve"),
        },
    )

__all__ = ["FEATURES", "SCHEMAS", "build_app", "run_daemon", "serve", "wrap"]
