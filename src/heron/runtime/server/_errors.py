"""The daemon's one error type: an HTTP status, a stable code and a message."""

from __future__ import annotations

from typing import Any

__all__ = ["ApiError", "DaemonError"]


class DaemonError(Exception):
    """The daemon cannot start (another one runs, an address is taken, no API key ...)."""


class ApiError(Exception):
    """A request the daemon refuses: answered as ``{"error": {code, message, details}}``."""

    def __init__(self, status: int, code: str, message: str, details: Any = None) -> None:
        super().__init__(message)
        self.status = status
        """The HTTP status (4xx for the caller's mistakes)."""
        self.code = code
        """A stable, machine-readable code."""
        self.message = message
        """A human-readable explanation."""
        self.details = details
        """Structured extra information, if any."""
