"""Reports: what a node tells the people watching it, by tier."""

from __future__ import annotations

from datetime import datetime
from typing import Literal, TypeAlias

from ._common import WireModel

__all__ = ["Report", "ReportTier"]

ReportTier: TypeAlias = Literal["progress", "milestone", "final"]
"""How much a report matters: a step along the way, a milestone reached, or the final word."""


class Report(WireModel):
    """One report a node pushed (``push-report``), as ``GET /v1/nodes/{id}/reports`` lists it."""

    report_id: int
    """Identifier: increasing, unique across the daemon."""
    node_id: str
    """The node that pushed it."""
    tier: ReportTier
    """How much it matters."""
    title: str | None
    """A one-line headline, if the node gave one."""
    body: str
    """The report itself (Markdown)."""
    path: str | None
    """Where the report was also written on disk (a final report), if anywhere."""
    created_at: datetime
    """When it was pushed."""
