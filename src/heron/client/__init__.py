"""The typed client of the Heron daemon: ``Heron`` (blocking) and ``AsyncHeron``.

Depends on :mod:`heron.api` (the wire models) and nothing else of Heron.
"""

from ._activity import (
    ActivityStatus,
    ActivityStep,
    Describe,
    describe_tool_default,
    follow_activity,
)
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
from ._stream_flow import Reconnect
from ._system import AuthStatus

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
    "UnprocessableEntityError",
    "describe_tool_default",
    "follow_activity",
]
