"""System routes: health and status."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from ._common import WireModel

__all__ = ["Health", "Listener", "SystemStatus"]


class Health(WireModel):
    """``GET /healthz``."""

    ok: Literal[True] = True
    """Always true when the daemon answers."""
    version: str
    """Heron's version."""


class Listener(WireModel):
    """One address the daemon listens on."""

    kind: Literal["unix", "tcp"]
    """Unix socket or TCP."""
    address: str
    """Socket path, or ``host:port``."""
    auth: Literal["filesystem", "bearer"]
    """How callers authenticate there."""


class SystemStatus(WireModel):
    """``GET /v1/status``."""

    version: str
    """Heron's version."""
    started_at: datetime
    """When the daemon started."""
    uptime_seconds: float
    """Seconds since it started."""
    pid: int
    """The daemon's process id."""
    nodes: dict[str, int]
    """Node counts by status."""
    database: str
    """The database in use (``sqlite`` or ``postgresql``), without credentials."""
    listeners: list[Listener]
    """Where the daemon listens."""
    provider: str
    """The default provider spec nodes run on."""
