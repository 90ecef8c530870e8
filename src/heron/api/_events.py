"""Node events: what ``GET /v1/nodes/{id}/events`` streams, one model per SSE event type.

An SSE record names its type in its ``event:`` line and carries the rest as
``data:`` JSON. :func:`parse_event` turns the two into one typed model; every
model but :class:`StreamError` carries ``node_id`` and ``sequence_number``.
"""

from __future__ import annotations

import functools
import json
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import Field, TypeAdapter

from ._common import WireModel
from ._human import HumanRequest
from ._nodes import NodeOutcome, NodeStatus
from ._reports import Report

__all__ = [
    "HumanRequestFiled",
    "HumanRequestResolved",
    "NodeEvent",
    "NodeEventBase",
    "NodeSettled",
    "NodeStatusChanged",
    "OutputTextDelta",
    "OutputTextDone",
    "ReportPushed",
    "StreamError",
    "StreamErrorBody",
    "StreamErrorCode",
    "StreamErrorDetails",
    "StreamStatus",
    "ToolCallCompleted",
    "ToolCallStarted",
    "TurnCompleted",
    "TurnStarted",
    "parse_event",
]


class NodeEventBase(WireModel):
    """What every node event carries."""

    node_id: str
    """The node it belongs to."""
    sequence_number: int = Field(ge=1)
    """Its position in the node's sequence (resume after it: ``?after=``, ``Last-Event-ID``)."""


class OutputTextDelta(NodeEventBase):
    """A piece of assistant text as it is produced."""

    type: Literal["node.output_text.delta"] = "node.output_text.delta"
    """The SSE event type."""
    delta: str
    """The new text (for a client joining mid-message: all the text so far)."""


class OutputTextDone(NodeEventBase):
    """An assistant message is complete."""

    type: Literal["node.output_text.done"] = "node.output_text.done"
    """The SSE event type."""
    text: str
    """The whole message."""


class ToolCallStarted(NodeEventBase):
    """The node started a tool call."""

    type: Literal["node.tool_call.started"] = "node.tool_call.started"
    """The SSE event type."""
    tool_call_id: str
    """The call's id (pairs it with its ``completed`` event)."""
    tool: str
    """The tool's name."""
    summary: str
    """The arguments' shape (``object with 2 fields``, ``null`` ...), never their values."""


class ToolCallCompleted(NodeEventBase):
    """A tool call finished."""

    type: Literal["node.tool_call.completed"] = "node.tool_call.completed"
    """The SSE event type."""
    tool_call_id: str
    """The call's id."""
    tool: str
    """The tool's name."""
    status: Literal["ok", "error"]
    """Whether the tool succeeded."""
    summary: str
    """The arguments' shape, as in ``started`` (never values or tool output)."""
    error: str | None = None
    """Why it failed, for ``submit-result`` only (the daemon's check of the node's
    result); ``None`` otherwise."""


class TurnStarted(NodeEventBase):
    """A model turn began."""

    type: Literal["node.turn.started"] = "node.turn.started"
    """The SSE event type."""


class TurnCompleted(NodeEventBase):
    """A model turn finished."""

    type: Literal["node.turn.completed"] = "node.turn.completed"
    """The SSE event type."""


class ReportPushed(NodeEventBase):
    """The node pushed a report."""

    type: Literal["node.report.pushed"] = "node.report.pushed"
    """The SSE event type."""
    report: Report
    """The report."""


class HumanRequestFiled(NodeEventBase):
    """A request for a person's answer was filed for the node (it asked, or an
    application asked on its behalf)."""

    type: Literal["node.human_request.filed"] = "node.human_request.filed"
    """The SSE event type."""
    request: HumanRequest
    """The request, as filed."""


class HumanRequestResolved(NodeEventBase):
    """The node's request was answered, dismissed or cancelled."""

    type: Literal["node.human_request.resolved"] = "node.human_request.resolved"
    """The SSE event type."""
    request: HumanRequest
    """The request as resolved (``status`` says how; ``response`` holds the answers)."""


StreamStatus: TypeAlias = NodeStatus
"""A status as the stream reports it (``dormant`` included: a node with no run going)."""


class NodeStatusChanged(NodeEventBase):
    """The node's status changed (or, for a joiner, what it is now)."""

    type: Literal["node.status.changed"] = "node.status.changed"
    """The SSE event type."""
    status: StreamStatus
    """The new status."""


class NodeSettled(NodeEventBase):
    """The node settled: the last event of the stream, which ends after it."""

    type: Literal["node.settled"] = "node.settled"
    """The SSE event type."""
    outcome: NodeOutcome
    """The outcome, as ``GET /v1/nodes/{id}/outcome`` returns it."""


StreamErrorCode: TypeAlias = Literal["stream_gap", "stream_dropped", "stream_error"]
"""``stream_gap``: events were missed and the stream goes on; the others end the stream."""


class StreamErrorDetails(WireModel):
    """More about a stream error."""

    earliest_sequence: int | None = None
    """For ``stream_gap``: the number the stream continues from."""


class StreamErrorBody(WireModel):
    """What went wrong with the stream."""

    code: StreamErrorCode
    """A stable code."""
    message: str
    """A human-readable explanation."""
    details: StreamErrorDetails | None = None
    """More, for ``stream_gap``."""


class StreamError(WireModel):
    """The ``error`` event (not numbered: it is not one of the node's events)."""

    type: Literal["error"] = "error"
    """The SSE event type."""
    error: StreamErrorBody
    """The error."""


NodeEvent: TypeAlias = Annotated[
    OutputTextDelta
    | OutputTextDone
    | ToolCallStarted
    | ToolCallCompleted
    | TurnStarted
    | TurnCompleted
    | ReportPushed
    | HumanRequestFiled
    | HumanRequestResolved
    | NodeStatusChanged
    | NodeSettled
    | StreamError,
    Field(discriminator="type"),
]
"""Any event of a node's stream, told apart by ``type``."""


@functools.cache
def _adapter() -> TypeAdapter[NodeEvent]:
    # Built on first use: the union's validator is the costliest part of importing the
    # wire models, and a command that reads no event stream never needs it.
    return TypeAdapter(NodeEvent)


def parse_event(event: str, data: str | dict[str, Any]) -> NodeEvent:
    """The typed event of an SSE record: its ``event:`` field and its ``data:`` JSON.

    Raises ``pydantic.ValidationError`` for an unknown type or data that does not fit it.
    """
    body = json.loads(data) if isinstance(data, str) else dict(data)
    if not isinstance(body, dict):
        raise ValueError(f"the data of a {event!r} event must be a JSON object")
    return _adapter().validate_python({**body, "type": event})
