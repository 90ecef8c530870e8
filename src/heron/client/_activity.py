"""A plain activity feed from a node stream: one step per tool call, running → done/failed.

Example::

    for steps in follow_activity(client.nodes.stream(prompt="Tidy the docs", cwd=repo)):
        render(steps)   # a tuple of ActivityStep, oldest first
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Literal, TypeAlias, overload

from .. import api

__all__ = ["ActivityStatus", "ActivityStep", "Describe", "describe_tool_default", "follow_activity"]

ActivityStatus: TypeAlias = Literal["running", "done", "failed"]
"""A step's state: the call started, succeeded, or failed."""

Describe: TypeAlias = Callable[[str, str], "str | None"]
"""``describe(tool, summary)``: the label of a call, or ``None`` to leave it out of the feed."""


@dataclass(frozen=True, slots=True)
class ActivityStep:
    """One tool call in the feed (immutable: every change is a new snapshot)."""

    tool_call_id: str
    """The call's id (pairs its start with its end)."""
    tool: str
    """The tool's name."""
    label: str
    """What to show, from ``describe`` (``describe_tool_default`` unless you pass one)."""
    status: ActivityStatus
    """``running``, then ``done`` (the tool succeeded) or ``failed``."""
    summary: str
    """The arguments' shape (``object with 2 fields``), never their values."""


_LABELS: dict[str, str] = {
    "fs-read-file": "Reading a file",
    "fs-write-file": "Writing a file",
    "fs-edit-file": "Editing a file",
    "fs-list-directory": "Listing a directory",
    "fs-glob": "Finding files",
    "fs-grep": "Searching in files",
    "bash-run": "Running a command",
    "bash-start": "Starting a background command",
    "bash-read": "Reading a command's output",
    "bash-wait": "Waiting for a command",
    "bash-kill": "Stopping a command",
    "bash-list": "Listing running commands",
    "browser-navigate": "Opening a web page",
    "browser-read": "Reading a web page",
    "browser-click": "Clicking on a web page",
    "browser-type": "Typing into a web page",
    "browser-screenshot": "Taking a screenshot",
    "todo-add": "Adding a to-do",
    "todo-update": "Updating a to-do",
    "todo-complete": "Completing a to-do",
    "todo-list": "Checking the to-do list",
    "get-current-time": "Checking the time",
    "ask-questions": "Asking questions",
    "present-files": "Presenting files",
    "present-zip": "Packing files into a zip",
    "push-report": "Sending a report",
    "submit-result": "Submitting the result",
    "decline": "Declining the task",
    "spawn-child": "Starting a helper",
    "message-child": "Messaging a helper",
    "wait-children": "Waiting for helpers",
    "list-children": "Checking on helpers",
    "close-child": "Closing a helper",
}


def describe_tool_default(tool: str, summary: str) -> str:
    """A short label for a call of ``tool``: Heron's own tools by what they do
    (``fs-read-file`` → ``Reading a file``), any other as ``Using <tool>``."""
    del summary  # the shape of the arguments adds nothing a reader needs here
    return _LABELS.get(tool) or f"Using {tool}"


class _Feed:
    """The steps so far; :meth:`add` answers a new snapshot when an event changes them."""

    def __init__(self, describe: Describe | None) -> None:
        if describe is not None and not callable(describe):
            raise TypeError(f"describe must be callable, got {describe!r}")
        self._describe = describe or describe_tool_default
        self._steps: dict[str, ActivityStep] = {}
        self._hidden: set[str] = set()

    def add(self, event: api.NodeEvent) -> tuple[ActivityStep, ...] | None:
        if isinstance(event, api.ToolCallStarted):
            status: ActivityStatus = "running"
        elif isinstance(event, api.ToolCallCompleted):
            status = "done" if event.status == "ok" else "failed"
        else:
            return None
        key = event.tool_call_id
        if key in self._hidden:
            return None
        step = self._steps.get(key)
        if step is None:
            # A stream joined mid-call may see the end of a call it never saw start.
            label = self._describe(event.tool, event.summary)
            if label is None:
                self._hidden.add(key)
                return None
            step = ActivityStep(key, event.tool, label, status, event.summary)
        elif step.status == status:
            return None
        else:
            step = replace(step, status=status)
        self._steps[key] = step
        return tuple(self._steps.values())


@overload
def follow_activity(
    stream: AsyncIterable[api.NodeEvent], describe: Describe | None = None
) -> AsyncIterator[tuple[ActivityStep, ...]]: ...
@overload
def follow_activity(
    stream: Iterable[api.NodeEvent], describe: Describe | None = None
) -> Iterator[tuple[ActivityStep, ...]]: ...
def follow_activity(
    stream: Iterable[api.NodeEvent] | AsyncIterable[api.NodeEvent],
    describe: Describe | None = None,
) -> Iterator[tuple[ActivityStep, ...]] | AsyncIterator[tuple[ActivityStep, ...]]:
    """Every state of the activity feed of ``stream``, as it changes.

    Takes a :class:`NodeStream` (or any iterable of events) and returns an iterator;
    takes an :class:`AsyncNodeStream` (or any async iterable) and returns an async
    iterator. Each item is the whole feed, oldest call first: a tuple of immutable
    :class:`ActivityStep`. A call appears ``running`` when it starts and becomes
    ``done`` or ``failed`` when it ends. ``describe(tool, summary)`` labels each call
    (``None`` leaves it out); the default is :func:`describe_tool_default`. The feed
    consumes the stream: it ends when the stream does, raising what the stream raises.
    """
    feed = _Feed(describe)
    if isinstance(stream, AsyncIterable):
        return _follow_async(stream, feed)
    if isinstance(stream, Iterable):
        return _follow(stream, feed)
    raise TypeError(f"follow_activity needs a node stream, got {type(stream).__name__}")


def _follow(stream: Iterable[api.NodeEvent], feed: _Feed) -> Iterator[tuple[ActivityStep, ...]]:
    for event in stream:
        snapshot = feed.add(event)
        if snapshot is not None:
            yield snapshot


async def _follow_async(
    stream: AsyncIterable[api.NodeEvent], feed: _Feed
) -> AsyncIterator[tuple[ActivityStep, ...]]:
    async for event in stream:
        snapshot = feed.add(event)
        if snapshot is not None:
            yield snapshot
