"""Every exception the Heron SDK raises.

::

    HeronError                      base of everything below
    ├── UserError                   misuse: bad arguments or configuration
    │   └── ScriptExhaustedError    a ScriptedProvider ran out of steps
    ├── ProviderError               a model provider failed (status, code, retryable)
    ├── ToolError                   raised inside a tool: reported to the model as an error
    └── RunError                    a run ended without what was asked; carries ``result``
        └── OutputValidationError   structured output still invalid after the retries

Agent-side outcomes that are not failures (the turn limit, a stop tool) are
returned on :class:`heron.RunResult` as ``stop_reason`` values, not raised;
only a run that was asked for a typed ``output_type`` and ends that way
raises :class:`RunError`, since it cannot return the value it promised.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .result import RunResult

__all__ = [
    "HeronError",
    "OutputValidationError",
    "ProviderError",
    "RunError",
    "ScriptExhaustedError",
    "ToolError",
    "UserError",
]


class HeronError(Exception):
    """Base class of every Heron SDK error."""


class UserError(HeronError):
    """The SDK was used wrongly: a bad argument, a missing capability, a wrong call site."""


class ScriptExhaustedError(UserError):
    """A :class:`heron.testing.ScriptedProvider` was asked for more turns than scripted."""


class ProviderError(HeronError):
    """A model provider failed to answer.

    ``status`` is the HTTP status when there was one, ``code`` the vendor's error
    code, and ``retryable`` whether trying again later may succeed.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str | None = None,
        retryable: bool = False,
        provider: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        """Human-readable description."""
        self.status = status
        """HTTP status code, if the failure came from an HTTP response."""
        self.code = code
        """The vendor's error code, if any."""
        self.retryable = retryable
        """Whether the same request may succeed later."""
        self.provider = provider
        """Name of the provider that failed."""

    def __str__(self) -> str:
        where = f"{self.provider}: " if self.provider else ""
        status = f" (status {self.status})" if self.status is not None else ""
        return f"{where}{self.message}{status}"


class ToolError(HeronError):
    """Raise inside a tool to fail the call with just this message (no traceback).

    The message reaches the model as the tool's error result and the run goes on.
    """


class RunError(HeronError):
    """A run ended without producing what was asked.

    ``result`` holds the run as far as it went (``stop_reason == "error"``).
    """

    def __init__(self, message: str, *, result: RunResult[Any] | None = None) -> None:
        super().__init__(message)
        self.result = result
        """The partial run, for inspection."""


class OutputValidationError(RunError):
    """The model's structured output failed validation on every allowed attempt."""

    def __init__(
        self, message: str, *, errors: Any = None, result: RunResult[Any] | None = None
    ) -> None:
        super().__init__(message, result=result)
        self.errors = errors
        """The last validation errors."""
