"""``follow_activity``: a feed of tool-call steps from a real node's stream."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from heron import api
from heron.client import (
    ActivityStep,
    AsyncHeron,
    Heron,
    describe_tool_default,
    follow_activity,
)


def clock(arguments: dict[str, Any]) -> dict[str, Any]:
    """A turn calling get-current-time once (calls of one turn run at once, in no set order)."""
    return {"text": "", "tool_calls": [{"name": "get-current-time", "arguments": arguments}]}


CALLS: list[Any] = [clock({"timezone": "UTC"}), clock({"timezone": "X/Y"}), clock({}), "Done."]


def steps_of(snapshot: tuple[ActivityStep, ...]) -> list[tuple[str, str, str]]:
    return [(s.tool_call_id, s.label, s.status) for s in snapshot]


def test_sync_feed_follows_each_call_from_running_to_done_or_failed(
    client: Heron, scripts: Any
) -> None:
    stream = client.nodes.stream(prompt="Go.", model=scripts("feed", CALLS))
    snapshots = list(follow_activity(stream))
    label = "Checking the time"
    assert [steps_of(s) for s in snapshots] == [
        [("call_1", label, "running")],
        [("call_1", label, "done")],
        [("call_1", label, "done"), ("call_2", label, "running")],
        [("call_1", label, "done"), ("call_2", label, "failed")],
        [
            ("call_1", label, "done"),
            ("call_2", label, "failed"),
            ("call_3", label, "running"),
        ],
        [
            ("call_1", label, "done"),
            ("call_2", label, "failed"),
            ("call_3", label, "done"),
        ],
    ]
    first = snapshots[0][0]
    assert first.tool == "get-current-time" and first.summary == "object with 1 field"
    assert isinstance(snapshots[0], tuple)
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.status = "done"  # type: ignore[misc]
    # The feed consumed the stream to its end: the outcome is there at once.
    outcome = stream.final_outcome()
    assert isinstance(outcome, api.NodeResult) and outcome.output_text == "Done."


async def test_async_feed_with_a_describe_that_hides_calls(
    aclient: AsyncHeron, scripts: Any
) -> None:
    def describe(tool: str, summary: str) -> str | None:
        if summary == "object with 0 fields":
            return None  # hidden: not in the feed at all
        return f"{tool} ({summary})"

    stream = aclient.nodes.stream(prompt="Go.", model=scripts("afeed", CALLS))
    snapshots = [s async for s in follow_activity(stream, describe)]
    assert len(snapshots) == 4
    last = snapshots[-1]
    assert [s.label for s in last] == ["get-current-time (object with 1 field)"] * 2
    assert [s.status for s in last] == ["done", "failed"]
    assert isinstance(await stream.final_outcome(), api.NodeResult)


def test_a_feed_joining_mid_call_shows_the_end_it_sees() -> None:
    def event(kind: str, number: int, **data: Any) -> api.NodeEvent:
        return api.parse_event(kind, {"node_id": "n1", "sequence_number": number, **data})

    def failed(number: int) -> api.NodeEvent:
        call = {"tool_call_id": "c1", "tool": "bash-run", "summary": "object with 1 field"}
        return event("node.tool_call.completed", number, status="error", **call)

    events = [
        event("node.output_text.delta", 1, delta="Hi"),
        failed(2),
        failed(3),  # a repeat of a state already shown gives no new snapshot
    ]
    assert [steps_of(s) for s in follow_activity(events)] == [
        [("c1", "Running a command", "failed")]
    ]


def test_default_labels_name_herons_tools_and_fall_back_to_the_name() -> None:
    assert describe_tool_default("fs-read-file", "object with 1 field") == "Reading a file"
    assert describe_tool_default("bash-run", "object with 2 fields") == "Running a command"
    assert describe_tool_default("spawn-child", "object with 3 fields") == "Starting a helper"
    assert describe_tool_default("push-report", "object with 2 fields") == "Sending a report"
    assert describe_tool_default("submit-result", "object") == "Submitting the result"
    assert describe_tool_default("weather__forecast", "null") == "Using weather__forecast"


def test_follow_activity_refuses_what_is_not_a_stream() -> None:
    with pytest.raises(TypeError, match="node stream"):
        follow_activity(42)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="describe"):
        follow_activity([], describe="label")  # type: ignore[call-overload]
