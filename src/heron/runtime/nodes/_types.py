"""The shape of a node's row: its columns, its ``extra`` keys, and the field lists features share.

``heron_nodes.extra`` holds what features record on a node that no query filters on
(a fork's original, the wait it is parked on, how its outcome was delivered ...):
:class:`NodeExtra` declares every key any feature writes, so a reader sees them all
in one place and the type checker catches a misspelt one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal, NotRequired, Required, TypedDict, cast

from ... import api

__all__ = [
    "INHERITED",
    "LAUNCH_FIELDS",
    "RUN_SETUP",
    "CronMark",
    "DeliveryClaim",
    "EndRecord",
    "FailureDetail",
    "NodeExtra",
    "NodeRow",
    "Outcome",
    "PreviousOutcome",
    "RunEnd",
    "RunPlan",
    "StopRecord",
    "Waiting",
    "WorktreeRecord",
    "Yielded",
    "as_outcome",
    "copy_fields",
    "fields_of",
]

RUN_SETUP = (
    "model",
    "kind",
    "profile",
    "cwd",
    "pin_cwd",
    "scopes",
    "mode",
    "output_schema",
    "situational_context",
)
"""The columns a node's run is set up from (its model, persona, workspace, tools and output
contract): what a fork copies from its original and what a warm node must match."""

INHERITED = (*RUN_SETUP, "root_lifecycle")
"""Row columns a fork copies from its original unless its create sets them: how its runs
are set up, and whether it stays resident (``model``: the one the original was given, see
``profiles.given_model``)."""

LAUNCH_FIELDS = (*RUN_SETUP, "root", "parent", "creator")
"""The row fields a run is prepared from before its prompt is known: a warm node serves a
create only if they all match. (A field the workflow's ``begin`` reads belongs here.) Its
setup, and where it sits in the tree (which tools it gets to reach its parent, children
and creator)."""


class WorktreeRecord(TypedDict):
    """The managed git worktree a node works in (``extra["worktree"]`` once made)."""

    name: str
    path: str
    branch: str
    repository: str
    base_commit: str
    workdir: str
    """Where the node works: ``cwd``'s place inside the worktree."""
    state: api.WorktreeState
    """``active`` while the node works in it, then ``closed`` or ``abandoned``."""
    head_commit: str | None


class FailureDetail(TypedDict):
    """What went wrong, in a failure outcome."""

    message: str
    error_type: str | None


class Outcome(TypedDict, total=False):
    """A settled outcome as stored (``heron_outcomes.outcome``) and published: the JSON of
    ``api.NodeResult`` (``kind`` ``result``) or ``api.NodeFailure`` (``failure``)."""

    kind: Required[Literal["result", "failure"]]
    structured_result: Any
    """A result's value matching the node's output schema, if it has one."""
    output_text: str | None
    final_report_path: str | None
    stop_reason: str | None
    reason: str | None
    """A failure's ``api.OutcomeReason``."""
    declined: dict[str, Any] | None
    """A decline's reason, code and whether retrying may help."""
    detail: FailureDetail | None


class StopRecord(TypedDict):
    """How a run's conversation ended (``_runs.Stop`` as the end step records it)."""

    kind: str
    reason: str | None
    message: str | None
    error_type: str | None
    reply: str | None
    asked: bool
    stop_reason: str | None


class RunPlan(TypedDict):
    """What a run is prepared from, as its ``begin`` step records it (a run resumed across
    an upgrade replays a plan recorded then: the keys added later may be missing)."""

    warm: NotRequired[bool]
    kind: NotRequired[str | None]
    profile: NotRequired[str | None]
    model: str | None
    state: Any
    scopes: list[str] | None
    output_schema: dict[str, Any] | None
    situational_context: str | None
    cwd: str | None
    """The worktree's directory while the node works in one, else its ``cwd``."""
    branch: NotRequired[str | None]
    mode: NotRequired[str]
    prompt: str
    """What the run starts from: the messages it claimed, or ``Continue.``."""


RunEnd = TypedDict(
    "RunEnd",
    {
        "continue": bool,
        "prompt": str,
        "nudges": int,
        "status": str,
        "settled": bool,
        "outcome": Outcome | None,
    },
    total=False,
)
"""What the run's end step decided: ``continue`` with a new ``prompt`` (and ``nudges``
so far), or its end: the ``status``, and the ``outcome`` if it ``settled`` one."""


class PreviousOutcome(TypedDict):
    """An outcome taken back (revive, relaunch) or replaced, kept on the node."""

    outcome: Outcome
    settled_at: float
    status: api.NodeStatus


class DeliveryClaim(TypedDict):
    """Who delivered the node's outcome of one settlement to its parent (once)."""

    settled_at: float | None
    """The settlement claimed (``None``: a close's claim bound to the next one)."""
    how: str
    """``closed``, ``message``, ``wait-children`` (a call) or ``wait`` (a parked wait)."""
    by: str | None
    """The tool call that took it, if a call did."""


class Waiting(TypedDict):
    """The ``wait-children`` call a node is parked on."""

    children: list[str]
    token: str
    deadline_at: float


class Yielded(TypedDict):
    """Why and when a node handed its turn back."""

    reason: str
    at: float


class CronMark(TypedDict):
    """The cron firing that created a node."""

    cron_id: str
    tick: float | None
    manual: bool


class EndRecord(TypedDict):
    """A run's end as the end step decided it, kept so the step, run again, returns it."""

    key: list[int]
    """``[run, step]``."""
    value: RunEnd


class StopRequest(TypedDict):
    """An interrupt or close sent to the daemon running the node (see ``_commands``)."""

    run: int
    """The run it stops (a later run of the node ignores it)."""
    stop: dict[str, Any]
    """The :class:`~._runs.Stop`, as its fields."""


class NodeExtra(TypedDict, total=False):
    """``heron_nodes.extra``: every key a feature writes (each only when it applies)."""

    worktree: bool | str | WorktreeRecord | None
    """The worktree asked for on create (``True`` or a name), then the one made."""
    worktree_from: str
    """A fork's: the branch of its original's worktree, which its own branches from."""
    prefer_warm: bool | None
    outcome_delivery: dict[str, Any] | None
    """What to do with the outcome once it settles (as the create gave it)."""
    deadline_seconds: float | None
    """The create's deadline span, so relaunch-root can count it again."""
    model_given: str | None
    """The model the create (or a PATCH) named, as opposed to its kind's or profile's."""
    forked_from: str
    served_warm: bool
    cron: CronMark
    previous_outcomes: list[PreviousOutcome]
    delivered: DeliveryClaim
    waiting: Waiting
    yielded: Yielded
    interrupted_by: str
    """Who stopped it: ``request`` (a client) or the daemon's reason."""
    ended: EndRecord
    stop_request: StopRequest
    """A stop for the run going in another daemon (see ``_commands``)."""
    recycles: int
    recycled_at: float
    relaunches: int
    relaunched_at: float


class NodeRow(TypedDict):
    """A row of ``heron_nodes``."""

    node_id: str
    status: api.NodeStatus
    root: bool
    root_lifecycle: api.RootLifecycle
    mode: api.NodeMode
    name: str | None
    description: str | None
    prompt: str | None
    kind: str | None
    model: str | None
    profile: str | None
    cwd: str | None
    pin_cwd: bool
    scopes: list[str] | None
    parent: str | None
    creator: str | None
    output_schema: dict[str, Any] | None
    situational_context: str | None
    extra: NodeExtra
    created_at: float
    updated_at: float
    deadline_at: float | None
    settled_at: float | None
    runs: int
    turns: int
    input_tokens: int
    output_tokens: int
    state: Any
    """The agent's saved conversation between runs (``heron.agents.AgentState`` as JSON)."""
    pending_result: Any
    """A structured result accepted mid-turn, until the turn ends."""
    events_reserved: int | None
    step_mark: str | None
    warm: str | None
    """A warm-pool node's launch key until a create takes it; ``None`` for every real node."""


def fields_of(row: NodeRow, names: Iterable[str]) -> dict[str, Any]:
    """The row's values of the columns ``names`` (one of the field lists above)."""
    values: dict[str, Any] = cast(dict[str, Any], row)
    return {name: values[name] for name in names}


def copy_fields(target: NodeRow, source: NodeRow, names: Iterable[str]) -> None:
    """Set ``target``'s columns ``names`` to ``source``'s values."""
    cast(dict[str, Any], target).update(fields_of(source, names))


def as_outcome(value: Mapping[str, Any]) -> Outcome:
    """An outcome as read from ``heron_outcomes`` (JSON the daemon wrote), typed."""
    return cast(Outcome, dict(value))
