"""Bounds of a run that callers show before any agent exists (the command line's defaults)."""

__all__ = ["DEFAULT_MAX_TURNS"]

DEFAULT_MAX_TURNS = 25
"""Model turns one run may take before it stops with ``stop_reason="max_turns"``."""
