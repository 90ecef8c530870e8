"""Node lineage: forking a conversation, reviving, recycling, relaunching, changing mode."""

from __future__ import annotations

from pydantic import Field

from ._common import ErrorBody, ModelSpec, NodeId, RequestModel, WireModel
from ._durations import Duration
from ._nodes import Label, Node, Text

__all__ = [
    "ForkRequest",
    "PromoteRequest",
    "Recycled",
    "ReviveAllResult",
    "ReviveFailure",
    "ReviveRequest",
]


class ForkRequest(RequestModel):
    """``POST /v1/nodes/{id}/fork`` (optional body): how the fork differs from its original.

    Everything not given here is copied from the original: its conversation, model,
    kind, profile, cwd, scopes, mode, output schema, situational context, root
    lifecycle and place in the tree (the same parent). An explicit ``cwd`` is shared
    (the same directory); an original without one has its own folder copied for the
    fork. A node under a settled parent cannot be forked (``409 parent_settled``).
    """

    prompt: Text | None = None
    """A first message for the fork: it runs at once. Without one the fork waits, dormant."""
    name: Label | None = None
    """The fork's display label."""
    description: Text | None = None
    """The fork's display description."""
    model: ModelSpec | None = None
    """A different model for the fork (a provider spec)."""
    deadline: Duration | None = None
    """A deadline for the fork, counted from now (the original's is not copied)."""
    node_id: NodeId | None = None
    """Fork to this exact id; a collision answers ``409 node_id_exists``."""
    no_kickoff: bool = False
    """Keep the fork dormant even with a ``prompt`` (recorded, not sent)."""


class ReviveRequest(RequestModel):
    """``POST /v1/nodes/{id}/revive`` (optional body)."""

    message: Text | None = Field(default=None, min_length=1, pattern=r"\S")
    """A message the revived run reads first (not blank); without one the node is told
    to continue."""


class ReviveFailure(WireModel):
    """A node ``revive-all`` chose but could not revive."""

    node_id: str
    """The node."""
    error: ErrorBody
    """Why: the error ``POST …/revive`` would have answered, or ``revive_failed`` for
    a fault of the daemon's own (the other nodes are revived regardless)."""


class ReviveAllResult(WireModel):
    """``POST /v1/nodes/revive-all``: what was revived.

    Chosen are the nodes that stopped involuntarily: ``interrupted`` nodes that no
    API request interrupted, and ``failed`` ones whose outcome reason is
    ``provider_error`` or ``crashed`` — except failures that would repeat as they
    are (``detail.error_type`` ``NoResultSubmitted``: the agent ended without its
    result; ``RunNotStarted``: the run could not start). A decline is the agent's
    own answer and is left alone; nodes under a settled parent are skipped.
    """

    revived: list[Node]
    """The revived nodes (now running), oldest first."""
    failed: list[ReviveFailure]
    """Chosen nodes that could not be revived (a model that no longer loads, say)."""


class Recycled(WireModel):
    """``POST /v1/nodes/{id}/recycle``: the node, now with a fresh context."""

    node: Node
    """The node (same id; its next run starts from the summary)."""
    summary: str
    """The summary the node's model wrote; the node's memory from now on."""


class PromoteRequest(RequestModel):
    """``POST /v1/nodes/{id}/promote`` (optional body)."""

    message: Text | None = Field(default=None, min_length=1)
    """A message sent with the promotion (say, the work to fan out): a dormant node
    wakes to read it, already an orchestrator."""
