"""Errors the client raises.

Agent-side outcomes (a failed run, a decline, a deadline) are *returned* as
:data:`heron.api.NodeOutcome` values, never raised. Exceptions are for the layer
underneath: the daemon refused the request, or it could not be reached::

    APIError                       status, code, message, details, headers
    ├── BadRequestError            400
    ├── AuthenticationError        401
    ├── PermissionDeniedError      403
    ├── NotFoundError              404
    ├── ConflictError              409
    ├── UnprocessableEntityError   422
    ├── RateLimitError             429
    ├── InternalServerError        5xx
    ├── APIConnectionError         no answer (status 0): refused, reset, daemon not running
    │   └── APIConnectionTimeoutError   the request timed out
    └── APIUserAbortError          the caller cancelled the request

Branch on ``code``: it is the stable, machine-readable identity of an error
(``node_id_exists``, ``node_not_found``, ``daemon_unavailable``, ``stream_dropped``).
A success whose body is not what the route returns (a proxy's page, another server)
is a plain ``APIError`` with code ``invalid_response`` and the validation errors as
``details``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = [
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
    "error_from_response",
]


class APIError(Exception):
    """The daemon answered with an error, or could not be reached."""

    status: int
    """The HTTP status (0 when no response arrived)."""
    code: str
    """A stable, machine-readable error code."""
    message: str
    """A human-readable explanation."""
    details: Any
    """Extra structured information the daemon sent (validation errors, limits), if any."""
    headers: Mapping[str, str]
    """The response's headers (empty when no response arrived)."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.headers = dict(headers or {})

    def __str__(self) -> str:
        prefix = f"{self.status} " if self.status else ""
        problems = _problems(self.details)
        return f"{prefix}{self.code}: {self.message}{f' ({problems})' if problems else ''}"

    def __repr__(self) -> str:
        name = type(self).__name__
        return f"{name}(status={self.status}, code={self.code!r}, message={self.message!r})"


class BadRequestError(APIError):
    """400: the request was malformed (an invalid id in the path, a bad query value)."""


class AuthenticationError(APIError):
    """401: the TCP listener wants a valid bearer token."""


class PermissionDeniedError(APIError):
    """403: the caller may not do this."""


class NotFoundError(APIError):
    """404: no such node (or route, profile, job ...)."""


class ConflictError(APIError):
    """409: the request clashes with the resource's state (``node_id_exists``, ``node_settled``,
    ``node_dormant``)."""


class UnprocessableEntityError(APIError):
    """422: the body was understood but refused (``invalid_request``, ``unknown_profile``)."""


class RateLimitError(APIError):
    """429: too many requests; retried for ``GET``/``HEAD``/``DELETE`` honouring ``Retry-After``."""


class InternalServerError(APIError):
    """5xx: the daemon failed (retried for ``GET``/``HEAD``/``DELETE``)."""


class APIConnectionError(APIError):
    """No response: the connection was refused or reset, or no daemon listens there.

    ``code`` says which: ``daemon_unavailable`` (nothing answers on the Unix socket
    and no daemon could be started there: not retried), ``connection_error`` (refused
    over TCP, reset, cut mid-answer: retried for ``GET``/``HEAD``/``DELETE``), or
    ``timeout`` (:class:`APIConnectionTimeoutError`).
    """

    def __init__(self, message: str, code: str = "connection_error", details: Any = None) -> None:
        super().__init__(0, code, message, details)


class APIConnectionTimeoutError(APIConnectionError):
    """The request got no (complete) response within its ``timeout``."""

    def __init__(self, message: str = "the request timed out") -> None:
        super().__init__(message, code="timeout")


class APIUserAbortError(APIError):
    """The caller cancelled the request (a :class:`~heron.client.Cancel`, or ``stream.abort()``)."""

    def __init__(self, message: str = "the request was cancelled") -> None:
        super().__init__(0, "aborted", message)


_SHOWN_PROBLEMS = 3
"""How many of a refusal's problems ``str(error)`` names."""


def _problems(details: Any) -> str:
    """The fields a refusal names, from its ``details`` (``prompt: Input should be a valid
    string; scopes.0: ...``): a 422's validation errors (``{loc, msg}``) or problem
    strings; ``""`` for other details."""
    if not isinstance(details, list):
        return ""
    shown: list[str] = []
    for item in details:
        if isinstance(item, Mapping) and "msg" in item:
            loc = [str(part) for part in item.get("loc") or ()]
            if loc[:1] in (["body"], ["query"], ["path"]):  # where, not which field
                loc = loc[1:] or loc
            shown.append(f"{'.'.join(loc) or 'body'}: {item['msg']}")
        elif isinstance(item, str):
            shown.append(item)
        else:
            return ""
    more = len(shown) - _SHOWN_PROBLEMS
    text = "; ".join(shown[:_SHOWN_PROBLEMS])
    return f"{text}; and {more} more" if more > 0 else text


_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    422: UnprocessableEntityError,
    429: RateLimitError,
}


def error_from_response(status: int, body: bytes, headers: Mapping[str, str]) -> APIError:
    """The :class:`APIError` subclass for an error response.

    The daemon answers ``{"error": {"code", "message", "details"}}``; anything else
    (a proxy's HTML page, an empty body) still becomes an error with a generic
    code and the start of the body as its message.
    """
    cls = _BY_STATUS.get(status) or (InternalServerError if status >= 500 else APIError)
    code, message, details = f"http_{status}", "", None
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        code = error["code"]
        message = str(error.get("message") or "")
        details = error.get("details")
    else:
        message = body[:500].decode("utf-8", "replace").strip()
    return cls(status, code, message or f"HTTP {status}", details, headers)
