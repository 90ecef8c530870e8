"""Durations as people write them, on the wire and on the command line: ``1h30m``,
``45s``, ``2h``, ``7d``. One parser for the daemon, the API models and the CLI."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, Field, StringConstraints

__all__ = ["MAX_DURATION_SECONDS", "Duration", "duration_seconds", "parse_duration"]

_PART = re.compile(r"(\d+)\s*([dhms])")
_UNIT = {"d": 86400, "h": 3600, "m": 60, "s": 1}
MAX_DURATION_SECONDS = 366 * 24 * 3600
"""The longest duration accepted: a year (a leap one)."""

_FORMS = "a number and a unit, d (days), h (hours), m (minutes) or s (seconds): 7d, 2h, 1h30m, 45s"


def duration_seconds(text: str) -> int:
    """Seconds in ``text`` (``1h30m`` → 5400), any size; ``ValueError`` in words if it is
    not written as a duration."""
    compact = re.sub(r"\s+", "", text)
    parts = _PART.findall(compact)
    if not compact or "".join(n + u for n, u in parts) != compact:
        raise ValueError(f"{text!r} is not a duration: write {_FORMS}")
    return sum(int(n) * _UNIT[u] for n, u in parts)


def parse_duration(text: str) -> int:
    """Seconds in ``text``, more than none and at most a year; ``ValueError`` saying why."""
    seconds = duration_seconds(text)
    if seconds <= 0:
        raise ValueError(f"a duration must be longer than nothing, got {text!r}")
    if seconds > MAX_DURATION_SECONDS:
        raise ValueError(f"a duration must be at most a year (366d), got {text!r}")
    return seconds


def _written_as_one(text: str) -> str:
    duration_seconds(text)  # its size is the daemon's to judge (a code of its own)
    return text


Duration = Annotated[
    str,
    StringConstraints(max_length=64),
    AfterValidator(_written_as_one),
    Field(
        examples=["1h30m", "45s", "7d"],
        description=f"A span of time: {_FORMS}.",
        # What the parser takes (spaces anywhere); its size is checked by the daemon.
        json_schema_extra={"pattern": r"^\s*(?:(?:\d\s*)+[dhms]\s*)+$"},
    ),
]
"""A span of time such as ``1h30m``, ``90s``, ``2h`` or ``7d`` (checked in words)."""
