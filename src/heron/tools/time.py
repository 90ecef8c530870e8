"""The ``get-current-time`` tool: the current date and time, in any IANA timezone."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .._core import ToolError
from ._tool import tool

__all__ = ["get_current_time"]


@tool(name="get-current-time")
def get_current_time(timezone: str = "UTC") -> str:
    """Get the current date, day and time (now, today), optionally in an IANA timezone.

    Args:
        timezone: An IANA timezone name such as Europe/Paris or Asia/Tokyo; UTC by default.
    """
    name = timezone.strip() or "UTC"
    try:
        zone = UTC if name.upper() == "UTC" else ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a folder, a huge name
        raise ToolError(
            f"unknown timezone {timezone!r}: use an IANA name such as Europe/Paris"
        ) from None
    now = datetime.now(zone).replace(microsecond=0)
    return f"{now.isoformat()} ({now:%A}, {name if zone is not UTC else 'UTC'})"
