"""Orchestration: outcome delivery, handing the turn back (yield) and waiting on children."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal, TypeAlias

from pydantic import Field, StringConstraints

from ._common import NodeId, RequestModel, WireModel

__all__ = [
    "DeliveryAction",
    "OutcomeDelivery",
    "WaitRequest",
    "WaitStatus",
    "YieldRequest",
]

DeliveryAction: TypeAlias = Literal["message", "none"]
"""What happens to a child's outcome when it settles: ``message`` sends it to the
parent as a message (waking a dormant parent); ``none`` leaves the parent to collect
it (``wait-children``, ``GET …/outcome``)."""


class OutcomeDelivery(RequestModel):
    """``outcome_delivery`` on create: what to do with the node's outcome once it settles."""

    action: DeliveryAction
    """``message`` (to the parent, waking it if dormant) or ``none``."""
    payload: Annotated[str, StringConstraints(max_length=4096)] | None = None
    """A note delivered with the outcome (``message`` only), e.g. what it is for."""


class YieldRequest(RequestModel):
    """``POST /v1/nodes/{id}/yield`` (optional body)."""

    reason: Annotated[str, StringConstraints(max_length=512)] | None = None
    """Why the turn is handed back (kept on the node's record)."""


class WaitRequest(RequestModel):
    """``POST /v1/nodes/{id}/wait``: park the node until these children settle."""

    children: list[NodeId] = Field(min_length=1, max_length=256)
    """Ids of the node's own children to wait for."""
    timeout_seconds: Annotated[int, Field(ge=1, le=7 * 86400)] | None = None
    """Give up after this many seconds and wake the node with what has settled so far."""


class WaitStatus(WireModel):
    """The answer to ``POST …/wait``: what the node is now waiting for."""

    node_id: str
    """The waiting node."""
    status: str
    """The node's status after the call (``dormant`` unless the wait ended at once)."""
    pending: list[str]
    """Children still to settle (empty: every one had settled; the outcomes are on their way)."""
    settled: list[str]
    """Children that had already settled."""
    deadline_at: datetime | None
    """When the wait gives up, if it has a timeout."""
