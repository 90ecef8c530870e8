"""What every route shares: HTTP middleware, routing helpers, the error type and the log.

The app and the process that serve the routes are the daemon's (``heron.runtime.daemon``);
nothing here knows a node, an event or a feature.
"""

import typing

from ..._core.lazy import attach as _attach

if typing.TYPE_CHECKING:
    from ._durations import parse_duration
    from ._errors import ApiError, DaemonError
    from ._http import (
        CSRF_HEADER,
        BearerAuth,
        BodyLimit,
        BodyTooLarge,
        BrowserSessions,
        NotUnicode,
        UnicodeRoute,
    )
    from ._logging import configure_logging
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

if not typing.TYPE_CHECKING:  # type checkers see the imports above, and no catch-all
    __getattr__, __dir__ = _attach(
        __name__,
        {
            "._durations": ("parse_duration",),
            "._errors": ("ApiError", "DaemonError"),
            "._http": (
                "CSRF_HEADER",
                "BearerAuth",
                "BodyLimit",
                "BrowserSessions",
                "BodyTooLarge",
                "NotUnicode",
                "UnicodeRoute",
            ),
            "._logging": ("configure_logging",),
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
        },
    )

__all__ = [
    "ACTION",
    "CSRF_HEADER",
    "MAX_INTEGER",
    "PROFILE_PATTERN",
    "READ",
    "WITH_BODY",
    "ApiError",
    "BearerAuth",
    "BodyLimit",
    "BodyTooLarge",
    "BrowserSessions",
    "DaemonError",
    "NodeIdPath",
    "NotUnicode",
    "UnicodeRoute",
    "Wait",
    "configure_logging",
    "errors",
    "parse_duration",
    "stopping",
]
