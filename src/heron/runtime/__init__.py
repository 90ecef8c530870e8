"""The Heron daemon: nodes as durable agent runs, served over a Unix socket and TCP.

``heron daemon`` runs it; :func:`run_daemon` is the same from Python.
"""

from ._config import RuntimeConfig, heron_home
from ._server import DaemonError, run_daemon

__all__ = ["DaemonError", "RuntimeConfig", "heron_home", "run_daemon"]
