"""The daemon's HTTP server: the FastAPI app, middleware, routing and the process."""

import typing

from ..._core.lazy import attach as _attach

if typing.TYPE_CHECKING:
    from ._durations import parse_duration
    from ._errors import ApiError, DaemonError
    from ._routing import (
        ACTION,
        MAX_INTEGER,
        PROFILE_PATTERN,
        READ,
        WITH_BODY,
        NodeIdPath,
        Wait,
        errors,
        stopping,
    )
    from ._server import run_daemon

if not typing.TYPE_CHECKING:  # type checkers see the imports above, and no catch-all
    __getattr__, __dir__ = _attach(
        __name__,
        {
            "._durations": ("parse_duration",),
            "._errors": ("ApiError", "DaemonError"),
            "._routing": (
                "ACTION",
                "MAX_INTEGER",
                "NodeIdPath",
                "PROFILE_PATTERN",
                "READ",
                "WITH_BODY",
                "Wait",
                "errors",
                "stopping",
            ),
            "._server": ("run_daemon",),
        },
    )

__all__ = [
    "ACTION",
    "MAX_INTEGER",
    "PROFILE_PATTERN",
    "READ",
    "WITH_BODY",
    "ApiError",
    "DaemonError",
    "NodeIdPath",
    "Wait",
    "errors",
    "parse_duration",
    "run_daemon",
    "stopping",
]
