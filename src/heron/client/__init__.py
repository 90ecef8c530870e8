"""The typed client of the Heron daemon: ``Heron`` (blocking) and ``AsyncHeron``.

Depends on :mod:`heron.api` (the wire models) and nothing else of Heron.
"""

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
from ._options import Cancel, RequestOptions
from ._params import (
    ForkParams,
    NodeConfigParams,
    NodeCreateParams,
    ParseParams,
    ProfileEnsureParams,
)
from ._parsed import ParsedFailure, ParsedOutcome, ParsedResult
from ._system import AuthStatus

__all__ = [
    "APIConnectionError",
    "APIConnectionTimeoutError",
    "APIError",
    "APIUserAbortError",
    "AsyncHeron",
    "AuthStatus",
    "AuthenticationError",
    "BadRequestError",
    "Cancel",
    "ConflictError",
    "ForkParams",
    "Heron",
    "InternalServerError",
    "NodeConfigParams",
    "NodeCreateParams",
    "NotFoundError",
    "ParseParams",
    "ParsedFailure",
    "ParsedOutcome",
    "ParsedResult",
    "PermissionDeniedError",
    "ProfileEnsureParams",
    "RateLimitError",
    "RequestOptions",
    "UnprocessableEntityError",
]
