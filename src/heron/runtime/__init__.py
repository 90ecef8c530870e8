"""The Heron daemon: nodes as durable agent runs, served over a Unix socket and TCP.

``heron daemon`` runs it; :func:`run_daemon` is the same from Python. The daemon's files
and its TCP settings (:func:`heron_home`, :func:`load_connect`, :func:`save_connect`) and
the control of one running on this machine (:func:`daemon_pid`, :func:`get_json`,
:func:`wait_healthy`, :func:`stop_daemon`) need no server code.
"""

import typing

from .._core.lazy import attach as _attach

if typing.TYPE_CHECKING:
    from ._config import (
        ConnectInfo,
        RuntimeConfig,
        heron_home,
        load_connect,
        parse_listen,
        save_connect,
    )
    from ._local import daemon_pid, get_json, stop_daemon, wait_healthy
    from .daemon import run_daemon
    from .server import DaemonError

# The server (FastAPI, DBOS, SQLAlchemy) loads when it is asked for: `heron daemon status`
# and `stop` need only the configuration.
if not typing.TYPE_CHECKING:  # type checkers see the imports above, and no catch-all
    __getattr__, __dir__ = _attach(
        __name__,
        {
            "._config": (
                "ConnectInfo",
                "RuntimeConfig",
                "heron_home",
                "load_connect",
                "parse_listen",
                "save_connect",
            ),
            "._local": ("daemon_pid", "get_json", "stop_daemon", "wait_healthy"),
            ".daemon": ("run_daemon",),
            ".server": ("DaemonError",),
        },
    )

__all__ = [
    "ConnectInfo",
    "DaemonError",
    "RuntimeConfig",
    "daemon_pid",
    "get_json",
    "heron_home",
    "load_connect",
    "parse_listen",
    "run_daemon",
    "save_connect",
    "stop_daemon",
    "wait_healthy",
]
