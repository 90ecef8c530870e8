"""The typed client of the Heron daemon: ``Heron`` (blocking) and ``AsyncHeron``.

Depends on :mod:`heron.api` (the wire models) and ``heron._core``, nothing else of Heron.
"""

# Names resolve on first use (PEP 562): ``from heron.client import Heron`` loads the client,
# not the stream, activity or parsing helpers it does not use.
import typing

from .._core.lazy import attach as _attach

if typing.TYPE_CHECKING:
    from ._activity import (
        ActivityStatus,
        ActivityStep,
        Describe,
        describe_tool_default,
        follow_activity,
    )
    from ._autostart import start_daemon
    from ._canvas import Dashboard
    from ._client import AsyncHeron, Heron
    from ._errors import (
        APIConnectionError,
        APIConnectionTimeoutError,
        APIError,
        APIUserAbortError,
        AuthenticationError,
        BadRequestError,
        ConflictError,
        InternalServerError,
        NotFoundError,
        PermissionDeniedError,
        RateLimitError,
        UnprocessableEntityError,
    )
    from ._memory import MemoryList, MemoryUpdateParams
    from ._node_stream import AsyncNodeStream, Listener, NodeStream
    from ._nodes import NodeList
    from ._options import Cancel, RequestOptions
    from ._params import (
        ForkParams,
        NodeConfigParams,
        NodeCreateParams,
        ParseParams,
        ProfileEnsureParams,
    )
    from ._parsed import ParsedFailure, ParsedOutcome, ParsedResult
    from ._resource import check_id
    from ._settings import Settings
    from ._stream_flow import Reconnect
    from ._system import AuthStatus

if not typing.TYPE_CHECKING:  # type checkers see the imports above, and no catch-all
    __getattr__, __dir__ = _attach(
        __name__,
        {
            "._activity": (
                "ActivityStatus",
                "ActivityStep",
                "Describe",
                "describe_tool_default",
                "follow_activity",
            ),
            "._autostart": ("start_daemon",),
            "._canvas": ("Dashboard",),
            "._client": ("AsyncHeron", "Heron"),
            "._errors": (
                "APIConnectionError",
                "APIConnectionTimeoutError",
                "APIError",
                "APIUserAbortError",
                "AuthenticationError",
                "BadRequestError",
                "ConflictError",
                "InternalServerError",
                "NotFoundError",
                "PermissionDeniedError",
                "RateLimitError",
                "UnprocessableEntityError",
            ),
            "._memory": ("MemoryList", "MemoryUpdateParams"),
            "._node_stream": ("AsyncNodeStream", "Listener", "NodeStream"),
            "._nodes": ("NodeList",),
            "._options": ("Cancel", "RequestOptions"),
            "._params": (
                "ForkParams",
                "NodeConfigParams",
                "NodeCreateParams",
                "ParseParams",
                "ProfileEnsureParams",
            ),
            "._parsed": ("ParsedFailure", "ParsedOutcome", "ParsedResult"),
            "._resource": ("check_id",),
            "._settings": ("Settings",),
            "._stream_flow": ("Reconnect",),
            "._system": ("AuthStatus",),
        },
    )

__all__ = [
    "APIConnectionError",
    "APIConnectionTimeoutError",
    "APIError",
    "APIUserAbortError",
    "ActivityStatus",
    "ActivityStep",
    "AsyncHeron",
    "AsyncNodeStream",
    "AuthStatus",
    "AuthenticationError",
    "BadRequestError",
    "Cancel",
    "ConflictError",
    "Dashboard",
    "Describe",
    "ForkParams",
    "Heron",
    "InternalServerError",
    "Listener",
    "MemoryList",
    "MemoryUpdateParams",
    "NodeConfigParams",
    "NodeCreateParams",
    "NodeList",
    "NodeStream",
    "NotFoundError",
    "ParseParams",
    "ParsedFailure",
    "ParsedOutcome",
    "ParsedResult",
    "PermissionDeniedError",
    "ProfileEnsureParams",
    "RateLimitError",
    "Reconnect",
    "RequestOptions",
    "Settings",
    "UnprocessableEntityError",
    "check_id",
    "describe_tool_default",
    "follow_activity",
    "start_daemon",
]
