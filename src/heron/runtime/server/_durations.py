"""Durations on the wire: ``1h30m``, ``45s``, ``2h``, ``7d`` (the parser lives in
:func:`heron.api.parse_duration`, shared with the API models and the CLI)."""

from __future__ import annotations

from ...api import MAX_DURATION_SECONDS as MAX_SECONDS
from ...api import parse_duration

__all__ = ["MAX_SECONDS", "parse_duration"]
