"""The canvas: the graph of a daemon's nodes as a person's UI shows it (``/v1/canvas``)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BeforeValidator, Field, StringConstraints

from ._common import NodeId, RequestModel, WireModel
from ._durations import Duration
from ._nodes import NodeMode, NodeStatus

__all__ = [
    "MAX_HISTORY_LIMIT",
    "AttentionCounts",
    "AttentionCountsRequest",
    "AttentionItem",
    "AttentionReason",
    "CanvasCard",
    "CanvasEdge",
    "CanvasSnapshot",
    "HistoryGrepMatch",
    "HistoryGrepRequest",
    "HistoryGrepResult",
    "HistoryMessage",
    "HistoryPage",
    "HistorySearchHit",
    "HistorySearchRequest",
    "HistorySearchResult",
    "HistoryStats",
    "HistoryStatsRequest",
    "HistoryToolCall",
    "PruneRequest",
    "PruneResult",
    "PruneSkip",
    "RosterEntry",
    "SettledStatus",
]

AttentionReason: TypeAlias = Literal[
    "asking", "interrupted", "failed", "deadline_exceeded", "waiting"
]
"""Why a node needs a person, most urgent first: an open human request; stopped
mid-turn; failed; cancelled by its deadline; a resident root dormant after answering."""

SettledStatus: TypeAlias = Literal["completed", "failed", "cancelled"]
"""A status a node never leaves (what prune may delete)."""

NodeIds = Annotated[list[NodeId], Field(max_length=1000)]
"""Up to 1000 node ids."""

Label = Annotated[str, StringConstraints(max_length=512)]
"""A short string (a profile name, a duration)."""


class AttentionItem(WireModel):
    """One thing a person should look at."""

    node_id: str | None
    """The node concerned (``None``: a human request filed from outside any node)."""
    reason: AttentionReason
    """Why it needs a person."""
    since: datetime
    """Since when (the request filed, the node settled or stopped)."""
    summary: str
    """One line saying what it is about (a request's title, a failure's message ...)."""
    request_id: str | None = None
    """The open human request, for ``asking``."""
    profile: str = "default"
    """The profile of the node (or request)."""
    name: str | None = None
    """The node's display name, if it has one."""


class AttentionCountsRequest(RequestModel):
    """``POST /v1/canvas/attention-counts``: which items to count (all when empty)."""

    node_ids: NodeIds | None = None
    """Only items of these nodes."""
    profile: Label | None = None
    """Only items of this profile."""


class AttentionCounts(WireModel):
    """How many attention items there are, by reason and by node."""

    total: int
    """Every item counted."""
    by_reason: dict[str, int]
    """Items per reason (every reason present, zeros included)."""
    by_node: dict[str, dict[str, int]]
    """Per node id: items per reason (only reasons it has); requests filed from outside
    any node are counted under ``""``."""


class CanvasCard(WireModel):
    """One node as the canvas draws it: compact, without its prompt or conversation."""

    node_id: str
    """Identifier."""
    name: str | None
    """Display label."""
    kind: str | None
    """Persona (``None``: the profile's default)."""
    mode: NodeMode
    """Hands-on, or fanning out to children."""
    status: NodeStatus
    """Where the node is now."""
    root: bool
    """Whether it has no parent."""
    parent: str | None
    """The node it is placed under."""
    creator: str | None
    """The node that created it."""
    profile: str
    """Its profile (``default`` when none was named)."""
    created_at: datetime
    """When it was created."""
    updated_at: datetime
    """When its row last changed."""
    turns: int
    """Model turns so far."""
    input_tokens: int
    """Tokens read so far."""
    output_tokens: int
    """Tokens generated so far."""
    outcome_kind: Literal["result", "failure"] | None
    """How it settled (``None``: no outcome yet)."""
    outcome_reason: str | None
    """Why it failed, for a failure."""


class CanvasEdge(WireModel):
    """A line between two cards."""

    source: str
    """The upper node (parent or creator)."""
    target: str
    """The lower node."""
    kind: Literal["parent", "creator"]
    """``parent``: ``target`` is placed under ``source``; ``creator``: ``source`` created
    ``target`` but is not its parent."""


class CanvasSnapshot(WireModel):
    """``GET /v1/canvas/snapshot``: one consistent read of the whole canvas."""

    taken_at: datetime
    """When it was read."""
    nodes: list[CanvasCard]
    """Every node, oldest first (warm-pool nodes left out)."""
    edges: list[CanvasEdge]
    """Parent and creator lines between them."""
    counts: dict[str, int]
    """Nodes per status."""
    attention: list[AttentionItem]
    """What needs a person, most urgent first."""
    event_sequences: dict[str, int]
    """Per node: the number of its last event when the cards were read. Follow its
    stream after this number (``Last-Event-ID``) and nothing is missed."""


class RosterEntry(WireModel):
    """A live node and what it is doing now."""

    node_id: str
    """Identifier."""
    name: str | None
    """Display label."""
    status: Literal["running", "dormant", "interrupted"]
    """Where it is."""
    profile: str
    """Its profile."""
    parent: str | None
    """The node it is placed under."""
    run: int
    """Its current (or last) run's number."""
    run_active: bool
    """Whether a run of it is in progress in this daemon now."""
    since: datetime
    """When its row last changed (status, turn, message)."""
    last_event_type: str | None
    """Its last logged event's type (``None``: none yet)."""
    last_event_at: datetime | None
    """When that event happened."""
    open_jobs: int
    """Its background shell commands still running."""
    live_children: int
    """Its children not settled yet."""
    turns: int
    """Model turns so far."""
    deadline_at: datetime | None
    """When its deadline cancels it, if it has one."""


class PruneRequest(RequestModel):
    """``POST /v1/canvas/prune``: which settled nodes to delete."""

    older_than: Duration | None = None
    """Only nodes settled longer ago than this (``7d``); the default when no
    ``node_ids`` are named is ``7d``, with them any age."""
    statuses: list[SettledStatus] | None = Field(default=None, min_length=1)
    """Only nodes with one of these statuses (default: every settled status)."""
    node_ids: NodeIds | None = None
    """Only these nodes (resident roots are pruned only when named here)."""
    dry_run: bool = False
    """Say what would be pruned and delete nothing."""


class PruneSkip(WireModel):
    """A node prune left alone, and why."""

    node_id: str
    """The node."""
    reason: Literal[
        "not_found",
        "live",
        "live_descendant",
        "live_parent",
        "resident_root",
        "not_matching",
    ]
    """``not_found``: no such node; ``live``: not settled; ``live_descendant``: a node
    below it is not settled; ``live_parent``: its parent is not settled (it may still
    read the outcome); ``resident_root``: a resident root not named in ``node_ids``;
    ``not_matching``: named, but outside ``statuses`` or ``older_than``."""


class PruneResult(WireModel):
    """What ``POST /v1/canvas/prune`` deleted (or, on a dry run, would delete)."""

    pruned: list[str]
    """Node ids deleted with everything of theirs, descendants included."""
    skipped: list[PruneSkip]
    """Nodes matched or named but left alone."""
    dry_run: bool
    """Whether nothing was deleted."""


class HistoryToolCall(WireModel):
    """A tool call an assistant message made."""

    id: str
    """The call's id (a tool message's ``tool_call_id`` answers it)."""
    name: str
    """The tool."""
    arguments: dict[str, Any]
    """What it was called with."""


class HistoryMessage(WireModel):
    """One message of a node's transcript."""

    index: int
    """Its position in the transcript (0 first)."""
    role: Literal["system", "user", "assistant", "tool"]
    """Who wrote it."""
    text: str
    """Its text (image parts shown as ``[image]``)."""
    tool_calls: list[HistoryToolCall] = Field(default_factory=list)
    """For assistant messages: the tools it called."""
    tool_call_id: str | None = None
    """For tool messages: the call answered."""
    tool_name: str | None = None
    """For tool messages: the tool that answered."""
    is_error: bool = False
    """For tool messages: whether the tool failed."""


class HistoryPage(WireModel):
    """``GET /v1/canvas/history/read``: a page of one node's transcript."""

    node_id: str
    """The node."""
    total: int
    """Messages in the whole transcript."""
    messages: list[HistoryMessage]
    """The page, in order."""
    next_offset: int | None
    """Where the next page starts (``None``: this was the last)."""
    event_sequence: int = 0
    """The node's last event whose effect is in these messages: stream its events after
    this number (``GET /v1/nodes/{id}/events?after=``) to see only what is new, the text
    being written from its start included."""


MAX_HISTORY_LIMIT = 500
"""The most hits, matches or messages one history request returns."""

Limit = Annotated[int, Field(ge=1, le=MAX_HISTORY_LIMIT)]
"""How many to return (1-500)."""


class HistorySearchRequest(RequestModel):
    """``POST /v1/canvas/history/search``: words to find in transcripts."""

    query: Annotated[str, StringConstraints(min_length=1, max_length=1000)]
    """Words (case-insensitive, whole words); messages holding more of them, rarer ones
    (held by fewer transcripts) and the whole phrase rank higher."""
    node_ids: NodeIds | None = None
    """Only these nodes' transcripts."""
    profile: Label | None = None
    """Only nodes of this profile."""
    limit: Limit = 20
    """At most this many hits."""


class HistorySearchHit(WireModel):
    """A message matching a search."""

    node_id: str
    """The node."""
    index: int
    """The message's position in the node's transcript."""
    role: str
    """Who wrote it."""
    snippet: str
    """The text around the first match."""
    score: float
    """Its rank (higher first)."""


class HistorySearchResult(WireModel):
    """The ranked hits of a search."""

    hits: list[HistorySearchHit]
    """Best first."""
    nodes_scanned: int
    """Transcripts read (the database first leaves out those holding none of the
    words, unless a word is not plain ASCII)."""
    truncated: bool
    """Whether the scan stopped at its limits (nodes or bytes) before reading every
    transcript, or more hits were found than returned."""


class HistoryGrepRequest(RequestModel):
    """``POST /v1/canvas/history/grep``: a regular expression over transcripts' lines."""

    pattern: Annotated[str, StringConstraints(min_length=1, max_length=1000)]
    """A Python regular expression (the ``regex`` package's syntax)."""
    node_ids: NodeIds | None = None
    """Only these nodes' transcripts."""
    profile: Label | None = None
    """Only nodes of this profile."""
    ignore_case: bool = False
    """Match letters regardless of case."""
    context: Annotated[int, Field(ge=0, le=10)] = 0
    """Lines of the same message shown before and after each match."""
    limit: Limit = 100
    """At most this many matches."""


class HistoryGrepMatch(WireModel):
    """One matching line."""

    node_id: str
    """The node."""
    index: int
    """The message's position in the node's transcript."""
    role: str
    """Who wrote the message."""
    line: int
    """The line's number within the message (1 first)."""
    text: str
    """The line."""
    before: list[str]
    """Lines before it (``context``)."""
    after: list[str]
    """Lines after it (``context``)."""


class HistoryGrepResult(WireModel):
    """The matches of a grep, in transcript order."""

    matches: list[HistoryGrepMatch]
    """Node by node (most recently active first), message by message."""
    nodes_scanned: int
    """Transcripts read (for a pattern that is a plain word, the database first leaves
    out those not holding it)."""
    truncated: bool
    """Whether the scan stopped early: the limits, ``limit`` matches, or the time."""
    timed_out: bool
    """Whether matching ran out of time (a pattern that backtracks too much)."""


def _date_time_text(value: Any) -> Any:
    """Refuse a number for a date-time (non-strict pydantic reads one as Unix time)."""
    if not isinstance(value, str | datetime):
        raise ValueError("give an ISO 8601 date-time such as 2026-01-31T12:00:00Z")
    return value


DateTime = Annotated[datetime, BeforeValidator(_date_time_text), Field(strict=False)]
"""An ISO 8601 date-time (JSON text; a number is refused)."""


class HistoryStatsRequest(RequestModel):
    """``POST /v1/canvas/history/stats``: which transcripts to count."""

    node_ids: NodeIds | None = None
    """Only these nodes."""
    profile: Label | None = None
    """Only nodes of this profile."""
    since: DateTime | None = None
    """Only nodes active (updated) at or after this time."""


class HistoryStats(WireModel):
    """What the transcripts hold, counted."""

    nodes: int
    """Nodes counted."""
    messages: int
    """Messages in their transcripts."""
    messages_by_role: dict[str, int]
    """Messages per role."""
    tool_calls: int
    """Tool calls made."""
    tool_calls_by_tool: dict[str, int]
    """Tool calls per tool name."""
    tool_errors: int
    """Tool results that were errors."""
    turns: int
    """Model turns (from the nodes' counters)."""
    input_tokens: int
    """Tokens read."""
    output_tokens: int
    """Tokens generated."""
    truncated: bool
    """Whether the scan stopped at its limits before counting every node."""
