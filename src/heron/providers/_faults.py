"""Turning what the vendor SDKs raise into :class:`ProviderError` faults."""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import ModuleType
from typing import Any

import httpx2
import pydantic

from .._core import ProviderError
from ._retry import Fault, parse_retry_after

__all__ = ["classify_sdk_error", "malformed", "retryable_status", "truncated"]

# Error types a vendor may send in a 200 stream (no status to go by) that mean "try again".
_RETRYABLE_TYPES = frozenset(
    ("overloaded_error", "api_error", "rate_limit_error", "server_error", "timeout_error")
)


# Error codes that no retry can fix, whatever the status (OpenAI sends a 429
# for an exhausted quota, which only a billing change ends).
_FINAL_CODES = frozenset(("insufficient_quota",))


def retryable_status(status: int) -> bool:
    """Whether an HTTP status is worth retrying: timeouts, conflicts, rate limits, 5xx."""
    return status in (408, 409, 429) or status >= 500


def truncated(provider: str, detail: str = "") -> ProviderError:
    """The error for a stream that ended before the response was complete."""
    more = f": {detail}" if detail else ""
    return ProviderError(
        f"the response stream ended before the response was complete{more}",
        code="truncated_stream",
        retryable=True,
        provider=provider,
    )


def malformed(provider: str, detail: str) -> ProviderError:
    """The error for a response Heron could not make sense of."""
    return ProviderError(
        f"malformed response from the model server: {detail}",
        code="malformed_response",
        retryable=False,
        provider=provider,
    )


def classify_sdk_error(exc: Exception, *, provider: str, sdk: ModuleType) -> Fault | None:
    """Classify an exception raised by the ``openai`` or ``anthropic`` SDK (same shapes)."""
    if isinstance(exc, ProviderError):
        return Fault(error=exc)
    if isinstance(exc, sdk.APITimeoutError | httpx2.TimeoutException):
        return Fault(
            error=ProviderError(
                "request timed out", code="timeout", retryable=True, provider=provider
            )
        )
    if isinstance(exc, sdk.APIConnectionError | httpx2.TransportError):
        cause = exc.__cause__ or exc
        return Fault(
            error=ProviderError(
                f"connection failed: {cause}",
                code="connection_error",
                retryable=True,
                provider=provider,
            )
        )
    if isinstance(exc, sdk.APIStatusError) and exc.status_code >= 400:
        code, message = _describe(exc.body, exc.message)
        status = int(exc.status_code)
        return Fault(
            error=ProviderError(
                message,
                status=status,
                code=code,
                retryable=retryable_status(status) and code not in _FINAL_CODES,
                provider=provider,
            ),
            retry_after=parse_retry_after(exc.response.headers),
        )
    if isinstance(exc, sdk.APIError):
        # An error event inside a stream that had started with 200 OK.
        code, message = _describe(exc.body, exc.message)
        return Fault(
            error=ProviderError(
                message, code=code, retryable=code in _RETRYABLE_TYPES, provider=provider
            )
        )
    if isinstance(exc, pydantic.ValidationError | json.JSONDecodeError):
        return Fault(error=malformed(provider, str(exc).splitlines()[0]))
    return None


def _describe(body: object, fallback: str) -> tuple[str | None, str]:
    """The vendor's error code and message from an error body, in either vendor's shape."""
    if isinstance(body, Mapping):
        inner: Any = body.get("error", body)
        if isinstance(inner, Mapping):
            code = inner.get("code") or inner.get("type")
            message = inner.get("message") or fallback
            return (str(code) if code is not None else None), str(message)
    return None, fallback
