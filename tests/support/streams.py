"""The client event-stream tests' scripts and checks (``tests/client/test_stream*.py``)."""

from __future__ import annotations

import asyncio
import sys
import threading
from typing import Any

import pytest

from heron import api
from heron.client import (
    APIUserAbortError,
    AsyncHeron,
    Heron,
)

from .polling import eventually

TOOL_TURN = {
    "text": "Let me check.",
    "tool_calls": [{"name": "get-current-time", "arguments": {"timezone": "UTC"}}],
}


STEPS: list[Any] = [TOOL_TURN, "It is noon."]


EXPECTED_TYPES = [
    "node.status.changed",
    "node.turn.started",
    *["node.output_text.delta"] * 3,
    "node.output_text.done",
    "node.turn.completed",
    "node.tool_call.started",
    "node.tool_call.completed",
    "node.turn.started",
    *["node.output_text.delta"] * 3,
    "node.output_text.done",
    "node.turn.completed",
    "node.status.changed",
    "node.settled",
]


def check_run(events: list[api.NodeEvent], node: api.Node) -> None:
    """The whole scripted run, numbered 1, 2, 3 ... with nothing twice."""
    assert [e.type for e in events] == EXPECTED_TYPES
    numbers = [e.sequence_number for e in events if not isinstance(e, api.StreamError)]
    assert numbers == list(range(1, len(events) + 1))
    assert {e.node_id for e in events if not isinstance(e, api.StreamError)} == {node.node_id}
    deltas = "".join(e.delta for e in events if isinstance(e, api.OutputTextDelta))
    assert deltas == "Let me check.It is noon."
    completed = next(e for e in events if isinstance(e, api.ToolCallCompleted))
    assert (completed.tool, completed.status) == ("get-current-time", "ok")
    settled = events[-1]
    assert isinstance(settled, api.NodeSettled)
    assert isinstance(settled.outcome, api.NodeResult)
    assert settled.outcome.output_text == "It is noon."


def abort_a_blocked_read(client: Heron, model: str, stop: Any = None) -> None:
    """Abort, from this thread, a stream another thread is blocked reading (with
    ``stop()``, by default the stream's own ``abort()``)."""
    stream = client.nodes.stream(prompt="Wait.", model=model, no_kickoff=True)
    first = next(stream)  # the dormant node's status; the next read blocks
    assert isinstance(first, api.NodeStatusChanged)
    got: list[BaseException] = []

    def consume() -> None:
        try:
            stream.final_outcome()
        except BaseException as exc:
            got.append(exc)

    thread = threading.Thread(target=consume)
    thread.start()
    # The consumer is blocked reading a quiet stream (a dormant node says nothing).
    eventually(lambda: "_read" in functions_on_stack(thread), timeout=10, interval=0.02)
    (stop or stream.abort)()
    thread.join(10)
    assert not thread.is_alive()
    assert len(got) == 1 and isinstance(got[0], APIUserAbortError)
    with pytest.raises(APIUserAbortError):
        next(stream)
    if stop is None:  # the node was left alone
        assert client.nodes.retrieve(stream.node.node_id).status == "dormant"


async def abort_a_pending_read(aclient: AsyncHeron, model: str) -> None:
    """Abort a stream a task is waiting on."""
    stream = aclient.nodes.stream(prompt="W.", model=model, no_kickoff=True)
    assert isinstance(await anext(stream), api.NodeStatusChanged)
    pending = asyncio.ensure_future(stream.final_outcome())
    for _ in range(20):  # let it get to its read: nothing arrives on a dormant node
        await asyncio.sleep(0)
    assert not pending.done()
    stream.abort()
    with pytest.raises(APIUserAbortError):
        await asyncio.wait_for(pending, 10)
    node = await stream.node
    assert (await aclient.nodes.retrieve(node.node_id)).status == "dormant"


def functions_on_stack(thread: threading.Thread) -> set[str]:
    """The names of the functions ``thread`` is in right now."""
    frame = sys._current_frames().get(thread.ident or 0)
    names: set[str] = set()
    while frame is not None:
        names.add(frame.f_code.co_name)
        frame = frame.f_back
    return names
