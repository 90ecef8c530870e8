"""Node statuses every part of the daemon agrees on (a leaf module: it imports nothing)."""

from __future__ import annotations

__all__ = ["SETTLED"]

SETTLED = frozenset({"completed", "failed", "cancelled"})
"""Statuses a node never leaves (short of revive and relaunch-root)."""
