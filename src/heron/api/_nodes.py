"""Nodes: create parameters, the node record, outcomes and the node actions."""

from __future__ import annotations

import difflib
from datetime import datetime
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import AfterValidator, Field, StringConstraints, WithJsonSchema

from ._common import KindName, ModelSpec, NodeId, ProfileName, RequestModel, WireModel
from ._durations import Duration
from ._orchestration import OutcomeDelivery
from ._worktrees import NodeWorktree

__all__ = [
    "SCOPES",
    "CloseRequest",
    "DeclineRequest",
    "Declined",
    "MessageAccepted",
    "MessageRequest",
    "Node",
    "NodeConfigPatch",
    "NodeCreateRequest",
    "NodeFailure",
    "NodeMode",
    "NodeOutcome",
    "NodeResult",
    "NodeStatus",
    "OutcomeDetail",
    "OutcomePoll",
    "OutcomeReason",
    "PreviousOutcome",
    "ResultAccepted",
    "ResultSubmission",
    "RootLifecycle",
]

NodeStatus: TypeAlias = Literal[
    "running", "dormant", "interrupted", "completed", "failed", "cancelled"
]
"""Where a node is: working, waiting for a message, stopped mid-turn, or settled for good."""

RootLifecycle: TypeAlias = Literal["terminal", "resident"]
"""``terminal`` finishes and reaps; ``resident`` stays dormant for follow-up messages."""

NodeMode: TypeAlias = Literal["base", "orchestrator"]
"""Whether the node works hands-on or fans out to children."""

OutcomeReason: TypeAlias = Literal[
    "declined",
    "deadline_exceeded",
    "cancelled",
    "provider_error",
    "crashed",
    "no_result",
    "max_tokens",
    "invalid_result",
]
"""Why a node failed: ``declined`` (the agent refused), ``deadline_exceeded``,
``cancelled`` (closed), ``provider_error`` (the model service failed), ``crashed`` (the
run failed otherwise), ``no_result`` (it had to submit a result and ended without one or
a decline), ``max_tokens`` (its answer was cut off by the model's token limit before it
wrote any text; an answer cut off mid-way is a result whose ``stop_reason`` says so).
``invalid_result`` is never settled by the daemon: ``client.nodes.parse``
gives it to a result that passed the daemon's JSON-schema check but not the Python
class's own validation."""

Text = Annotated[str, StringConstraints(max_length=256 * 1024)]
"""Free text, up to 256 KiB."""

Directory = Annotated[
    str,
    StringConstraints(max_length=4096),
    # Documented, but checked by the daemon: another answers 422 invalid_cwd.
    Field(json_schema_extra={"pattern": "^/"}),
]
"""An absolute directory of the daemon's host (it must exist: ``422 invalid_cwd``)."""

Label = Annotated[str, StringConstraints(max_length=512)]
"""A short display string."""

SCOPES: tuple[str, ...] = ("act", "ask", "memory:read", "memory:write", "net", "schedule")
"""The scopes a node's ``scopes`` may name, each deciding some of its tools: ``act`` the
file and shell tools, ``ask`` asking a person, ``memory:read`` / ``memory:write`` the
memory tools, ``schedule`` the cron tools; ``net`` lets the node's commands reach the
network (without it each has only a loopback of its own). An empty list grants none."""


def _known_scope(value: str) -> str:
    if value not in SCOPES:
        close = difflib.get_close_matches(value, SCOPES, n=1, cutoff=0.5)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(
            f"unknown scope {value!r}{hint}; known scopes: {', '.join(SCOPES)} "
            "(an empty list means no scopes)"
        )
    return value


_WorktreeName = Annotated[
    str,
    StringConstraints(max_length=512),
    # Documented, but checked by the daemon: another answers 422 invalid_worktree_name.
    Field(
        json_schema_extra={
            "pattern": r"^(?!.*\.\.)(?!.*(?:\.|\.lock)$)[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"
        }
    ),
]
"""A worktree's name: an identifier git takes for a branch (no ``..``, not ending in
``.`` or ``.lock``)."""


Scope = Annotated[
    str,
    StringConstraints(min_length=1, max_length=256),
    AfterValidator(_known_scope),
    WithJsonSchema({"type": "string", "enum": list(SCOPES)}),
]
"""One entry of a node's scope allow-list: one of :data:`SCOPES`."""


class _DocumentedAs:
    """Documents a field as ``model``'s JSON schema, built only when a schema is asked for
    (building it at import would cost every client process pydantic's schema machinery)."""

    def __init__(self, model: type[WireModel]) -> None:
        self.model = model

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> dict[str, Any]:
        return self.model.model_json_schema(mode="validation")


_DeliveryObject = Annotated[dict[str, Any], _DocumentedAs(OutcomeDelivery)]
"""``outcome_delivery`` as the route reads it (an object, checked by the route itself, which
answers ``422 invalid_outcome_delivery``), documented as the :class:`OutcomeDelivery` it must be."""


class NodeCreateRequest(RequestModel):
    """``POST /v1/nodes``: every field is optional."""

    prompt: Text | None = None
    """The run's entire brief (the first message, unless ``no_kickoff``)."""
    kind: KindName | None = None
    """Persona; omitted for the profile's default."""
    model: ModelSpec | None = None
    """Durable model override: a provider spec such as ``openai:gpt-4o`` or ``local``."""
    profile: ProfileName | None = None
    """The store, memory and purview the run uses."""
    cwd: Directory | None = None
    """Where the request came from (an absolute directory)."""
    pin_cwd: Directory | None = None
    """Pin the node to this directory regardless of ``cwd``: it works there, takes no
    ``worktree`` (``422``), and its forks and children are pinned there too (a fork
    given another ``cwd`` is refused; give ``pin_cwd`` to pin a fork elsewhere)."""
    situational_context: Text | None = None
    """Ambient context the model sees but the visible prompt does not carry."""
    deadline: Duration | None = None
    """Wall clock from spawn (``1h30m``); expiry cancels the node with ``deadline_exceeded``."""
    output_schema: str | dict[str, Any] | None = None
    """A JSON schema (object or JSON string) the node's result must satisfy."""
    root: bool | None = None
    """No parent, no subscription; taken as ``true`` when neither ``parent`` nor ``root`` is set."""
    root_lifecycle: RootLifecycle = "terminal"
    """What happens to a root once its work is done."""
    mode: NodeMode = "base"
    """Hands-on, or fanning out to children."""
    name: Label | None = None
    """Display label."""
    description: Text | None = None
    """Display description."""
    parent: NodeId | None = None
    """The node this one is placed under (external callers leave it unset)."""
    creator: NodeId | None = None
    """The node that created this one (external callers leave it unset); it must exist
    (``404 node_not_found`` otherwise)."""
    scopes: list[Scope] | None = Field(default=None, max_length=64)
    """Per-run allow-list of :data:`SCOPES`; omitted to inherit every scope, ``[]`` for
    none (an unknown name is refused, listing the known ones)."""
    worktree: bool | _WorktreeName | None = None
    """Work in a managed git worktree of ``cwd``'s repository: ``true`` names it after the
    node, a string names it; on a new branch ``heron/<name>`` from ``HEAD``."""
    fork_from: NodeId | None = None
    """Start from a copy of this node's saved conversation; every setting this create
    leaves unset (model, kind, profile, cwd, scopes, mode, output schema, situational
    context, root lifecycle) is copied from it too."""
    no_kickoff: bool = False
    """Create the node without sending the first message: it waits, dormant, and reads the
    prompt first when a message (or a revive) wakes it."""
    node_id: NodeId | None = None
    """Spawn at this exact id; a collision answers ``409 node_id_exists``."""
    prefer_warm: bool = False
    """Serve from the warm pool when the launch tuple matches (the node says ``warm``).

    A miss creates the node cold and has the pool keep nodes ready for that tuple.
    Creates that cannot be served warm are created cold: with ``node_id`` (warm nodes
    have their ids), ``no_kickoff`` or no prompt, ``fork_from``, or ``worktree``."""
    outcome_delivery: _DeliveryObject | None = None
    """Arm outcome delivery at birth (``{action, payload?}``)."""


class OutcomeDetail(WireModel):
    """What is known about a failure other than a decline."""

    message: str
    """A human-readable account of the failure."""
    error_type: str | None = None
    """The class of the underlying error, when there was one."""


class Declined(WireModel):
    """An agent's honest refusal to produce the requested result."""

    reason: str
    """Why the agent declined."""
    code: str | None = None
    """A short code of the agent's choosing."""
    retryable: bool = False
    """Whether trying again (perhaps with more information) could succeed."""


class NodeResult(WireModel):
    """A node that finished its work."""

    kind: Literal["result"] = "result"
    """Discriminator."""
    structured_result: Any = None
    """The submitted result (valid against ``output_schema``), or ``None`` without a schema."""
    output_text: str | None = None
    """The node's last answer as text."""
    final_report_path: str | None = None
    """Where the final report was written on disk, if one was pushed."""
    stop_reason: str | None = None
    """Why the node's last turn ended: ``end_turn`` (the model finished its answer),
    ``max_tokens`` (cut off by the model's token limit: ``output_text`` is what it wrote
    until then), ``tool_stop`` or ``max_turns``; ``None`` for outcomes settled before it
    was recorded. A node cut off before writing anything fails instead (``max_tokens``)."""


class NodeFailure(WireModel):
    """A node that did not produce its result."""

    kind: Literal["failure"] = "failure"
    """Discriminator."""
    reason: OutcomeReason
    """Why."""
    declined: Declined | None = None
    """The agent's refusal, when ``reason`` is ``declined``."""
    detail: OutcomeDetail | None = None
    """What happened, for every other reason."""


NodeOutcome: TypeAlias = Annotated[NodeResult | NodeFailure, Field(discriminator="kind")]
"""How a node settled: a result or a failure (returned as a value, never raised)."""


class PreviousOutcome(WireModel):
    """An outcome a node had and that was taken back (revive, relaunch-root) or replaced
    (a resident root's answer, by a close or failure after it)."""

    outcome: NodeOutcome
    """The outcome as it was settled."""
    settled_at: datetime
    """When it had settled."""
    status: NodeStatus
    """The status the node had with it."""


class Node(WireModel):
    """A node as the daemon reports it."""

    node_id: str
    """Identifier."""
    status: NodeStatus
    """Where the node is now."""
    root: bool
    """Whether the node has no parent."""
    root_lifecycle: RootLifecycle
    """What happens once its work is done."""
    mode: NodeMode
    """Hands-on or orchestrating."""
    name: str | None
    """Display label."""
    description: str | None
    """Display description."""
    prompt: str | None
    """The visible first message."""
    kind: str | None
    """Persona."""
    model: str | None
    """Per-node model override (a provider spec), if any."""
    profile: str | None
    """Profile the node runs under."""
    cwd: str | None
    """The node's working directory."""
    pin_cwd: bool
    """Whether the working directory is pinned."""
    scopes: list[str] | None
    """Allow-list of scopes (``None``: every scope)."""
    parent: str | None
    """Parent node, if any."""
    creator: str | None
    """Creating node, if any."""
    has_output_schema: bool
    """Whether the node must finish by submitting a structured result."""
    created_at: datetime
    """When the node was created."""
    updated_at: datetime
    """When the node last changed."""
    deadline_at: datetime | None
    """When the node's deadline expires, if it has one."""
    settled_at: datetime | None
    """When the outcome settled, if it has."""
    runs: int
    """How many runs (kickoff and wake-ups) the node has started."""
    turns: int
    """Model turns taken so far."""
    input_tokens: int
    """Input tokens spent so far."""
    output_tokens: int
    """Output tokens spent so far."""
    worktree: NodeWorktree | None = None
    """The managed git worktree the node works in (``worktree`` on create), if it has one."""
    warm: bool = False
    """Whether its create was served by a pre-started node of the warm pool (``prefer_warm``)."""
    forked_from: str | None = None
    """The node this one was forked from (its conversation was copied), if any."""
    previous_outcomes: list[PreviousOutcome] = Field(default_factory=list)
    """Outcomes taken back by revive or relaunch-root, and a resident root's answer that a
    close or failure replaced, oldest first."""
    cron_id: str | None = None
    """The cron whose firing created it, if one did."""


class OutcomePoll(WireModel):
    """``GET /v1/nodes/{id}/outcome``: one long poll's answer."""

    node_id: str
    """The node."""
    state: Literal["pending", "settled"]
    """Whether the outcome is known (a resident root at work on a later message is
    ``pending`` until it answers it: its outcome is its latest answer)."""
    outcome: NodeOutcome | None
    """The outcome, once settled (``None`` while pending)."""
    node_status: NodeStatus
    """The node's status when the poll answered."""
    deadline_at: datetime | None
    """The node's deadline, if any."""


class MessageRequest(RequestModel):
    """``POST /v1/nodes/{id}/messages``: a follow-up for the node."""

    body: Annotated[str, StringConstraints(min_length=1, max_length=256 * 1024)]
    """The message text."""


class MessageAccepted(WireModel):
    """A message queued for a node."""

    node_id: str
    """The node."""
    message_id: int
    """The message's id: increasing, unique across the daemon."""
    delivery: Literal["woke", "queued"]
    """``woke``: a dormant node started a run for it; ``queued``: read at the next turn."""


class CloseRequest(RequestModel):
    """``POST /v1/nodes/{id}/close`` (optional body)."""

    reason: Label | None = None
    """Why the node is being closed, recorded on its outcome."""


class NodeConfigPatch(RequestModel):
    """``PATCH /v1/nodes/{id}/config``: fields to change; omitted fields stay."""

    model: ModelSpec | None = None
    """New model override (a provider spec); takes effect from the next turn."""
    name: Label | None = None
    """New display label."""
    description: Text | None = None
    """New display description."""
    deadline: Duration | None = None
    """New deadline, counted from now."""


class ResultSubmission(RequestModel):
    """``POST /v1/nodes/{id}/result``: the node's structured result."""

    result: Any
    """The result; must satisfy the node's ``output_schema``."""


class DeclineRequest(RequestModel):
    """What the ``decline`` tool sends: an honest refusal."""

    reason: Annotated[str, StringConstraints(min_length=1, max_length=4096)]
    """Why the agent declines."""
    code: Label | None = None
    """A short code of the agent's choosing."""
    retryable: bool = False
    """Whether trying again could succeed."""


class ResultAccepted(WireModel):
    """A result the daemon accepted; the node settles when its turn ends."""

    node_id: str
    """The node."""
    accepted: Literal[True] = True
    """Always true (an invalid result answers 422 instead)."""
