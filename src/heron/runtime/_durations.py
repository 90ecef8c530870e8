"""Durations on the wire: ``1h30m``, ``45s``, ``2h``, ``7d``."""

from __future__ import annotations

import re

__all__ = ["parse_duration"]

_PART = re.compile(r"(\d+)\s*([dhms])")
_UNIT = {"d": 86400, "h": 3600, "m": 60, "s": 1}
MAX_SECONDS = 366 * 24 * 3600


def parse_duration(text: str) -> int:
    """Seconds in ``text`` (``1h30m`` → 5400); ``ValueError`` saying why if it is not one."""
    compact = re.sub(r"\s+", "", text)
    parts = _PART.findall(compact)
    if not compact or "".join(n + u for n, u in parts) != compact:
        raise ValueError(f"not a duration: {text!r} (use forms like 1h30m, 45s, 2h, 7d)")
    seconds = sum(int(n) * _UNIT[u] for n, u in parts)
    if seconds <= 0:
        raise ValueError(f"a duration must be positive, got {text!r}")
    if seconds > MAX_SECONDS:
        raise ValueError(f"a duration must be at most a year, got {text!r}")
    return seconds
