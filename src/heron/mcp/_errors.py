"""Errors of the MCP layer."""

from __future__ import annotations

from .._core import HeronError

__all__ = ["ComputerError", "MCPConnectionError"]


class MCPConnectionError(HeronError):
    """An MCP server could not be reached, refused us, or dropped the link mid-call."""


class ComputerError(HeronError):
    """A sandbox (:class:`heron.mcp.Computer`) could not be started or reached."""
