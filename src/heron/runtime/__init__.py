"""The Heron daemon: nodes as durable agent runs, served over a Unix socket and TCP.

``heron daemon`` runs it; :func:`run_daemon` is the same from Python.
"""

import typing

from .._core.lazy import attach as _attach

if typing.TYPE_CHECKING:
    from ._config import RuntimeConfig, heron_home
    from .server._server import DaemonError, run_daemon

# The server (FastAPI, DBOS, SQLAlchemy) loads when it is asked for: `heron daemon status`
# and `stop` need only the configuration.
if not typing.TYPE_CHECKING:  # type checkers see the imports above, and no catch-all
    __getattr__, __dir__ = _attach(
        __name__,
        {
            "._config": ("RuntimeConfig", "heron_home"),
            ".server._server": ("DaemonError", "run_daemon"),
        },
    )

__all__ = ["DaemonError", "RuntimeConfig", "heron_home", "run_daemon"]
