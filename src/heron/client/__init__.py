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

__all__ = [
    "APIConnectionError",
    "APIConnectionTimeoutError",
    "APIError",
    "APIUserAbortError",
    "AsyncHeron",
    "AuthenticationError",
    "BadRequestError",
    "Cancel",
    "ConflictError",
    "Heron",
    "InternalServerError",
    "NotFoundError",
    "PermissionDeniedError",
    "RateLimitError",
    "RequestOptions",
    "UnprocessableEntityError",
]
