"""Node streams on both clients against a real daemon: events, listeners, outcome, abort."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tests.support.streams import (
    EXPECTED_TYPES,
    STEPS,
    abort_a_blocked_read,
    abort_a_pending_read,
    check_run,
)

from heron import api
from heron.client import (
    APIUserAbortError,
    AsyncHeron,
    AsyncNodeStream,
    Cancel,
    ConflictError,
    Heron,
    NodeStream,
    NotFoundError,
    Reconnect,
    RequestOptions,
)
from heron.client._sse import ServerSentEvent, SSEDecoder


def test_sync_stream_creates_the_node_and_yields_the_whole_run(client: Heron, scripts: Any) -> None:
    stream = client.nodes.stream(prompt="What time is it?", model=scripts("sync", STEPS))
    assert isinstance(stream, NodeStream)
    node = stream.node
    assert node.status in ("running", "dormant") and stream.node is node
    events = list(stream)
    check_run(events, node)
    outcome = stream.final_outcome()  # after the end: the same outcome, at once
    assert isinstance(outcome, api.NodeResult) and outcome.output_text == "It is noon."
    assert list(stream) == []
    assert client.nodes.retrieve(node.node_id).status == "completed"


async def test_async_stream_creates_the_node_and_yields_the_whole_run(
    aclient: AsyncHeron, scripts: Any
) -> None:
    stream = aclient.nodes.stream({"prompt": "What time is it?"}, model=scripts("async", STEPS))
    assert isinstance(stream, AsyncNodeStream)
    node = await stream.node
    events = [event async for event in stream]
    check_run(events, node)
    outcome = await stream.final_outcome()
    assert isinstance(outcome, api.NodeResult) and outcome.output_text == "It is noon."


def test_stream_creates_its_node_when_called_and_takes_a_request_model(
    client: Heron, scripts: Any
) -> None:
    before = len(client.nodes.list())
    request = api.NodeCreateRequest(prompt="Hi.", model=scripts("eager", ["Hello."]))
    stream = client.nodes.stream(request)
    # The call itself created the node (as the seed's SDK does), before any read.
    assert len(client.nodes.list()) == before + 1
    node = client.nodes.retrieve(stream.node.node_id)
    assert node.prompt == "Hi."
    outcome = stream.final_outcome()
    assert isinstance(outcome, api.NodeResult) and outcome.output_text == "Hello."
    assert len(client.nodes.list()) == before + 1


def test_a_stream_never_read_still_made_its_node_and_create_errors_raise_at_once(
    client: Heron, scripts: Any
) -> None:
    model = scripts("unread", ["Nobody reads this."])
    with client.nodes.stream(prompt="Hi.", model=model, node_id="never-read-sync"):
        pass  # closed without reading
    outcome = client.nodes.wait_for_outcome("never-read-sync", timeout=30)
    assert isinstance(outcome, api.NodeResult) and outcome.output_text == "Nobody reads this."
    with pytest.raises(ConflictError) as caught:
        client.nodes.stream(prompt="again", node_id="never-read-sync")  # raised by the call
    assert caught.value.code == "node_id_exists"


async def test_async_stream_sends_its_create_at_once(aclient: AsyncHeron, scripts: Any) -> None:
    model = scripts("aunread", ["Nobody reads this either."])
    stream = aclient.nodes.stream(prompt="Hi.", model=model, node_id="never-read-async")
    await stream.aclose()  # never read, never awaited: the create was sent all the same
    outcome = await aclient.nodes.wait_for_outcome("never-read-async", timeout=30)
    assert isinstance(outcome, api.NodeResult)
    again = aclient.nodes.stream(prompt="again", node_id="never-read-async")
    with pytest.raises(ConflictError):
        await again.node  # the create's error, at the first await
    with pytest.raises(ConflictError):
        await again.final_outcome()
    fresh = aclient.nodes.stream(prompt="Hi.", model=model)
    node = await fresh.node
    assert (await aclient.nodes.retrieve(node.node_id)).node_id == node.node_id
    await fresh.aclose()


def test_listeners_see_events_before_iteration_and_off_stops_them(
    client: Heron, scripts: Any
) -> None:
    deltas: list[str] = []
    every: list[str] = []
    order: list[str] = []

    def on_delta(event: api.OutputTextDelta) -> None:
        deltas.append(event.delta)
        order.append("listener")

    stream = client.nodes.stream(prompt="Go.", model=scripts("listen", STEPS))
    assert stream.on("node.output_text.delta", on_delta) is stream
    assert stream.on("*", lambda e: every.append(e.type)) is stream
    for event in stream:
        if event.type == "node.output_text.delta":
            order.append("iteration")
        if event.type == "node.output_text.done":
            assert stream.off("node.output_text.delta", on_delta) is stream
    assert deltas == ["Let ", "me ", "check."]  # none after off()
    assert order[:2] == ["listener", "iteration"]
    assert every == EXPECTED_TYPES


async def test_async_listeners_may_be_coroutines(aclient: AsyncHeron, scripts: Any) -> None:
    seen: list[str] = []

    async def on_tool(event: api.ToolCallStarted) -> None:
        await asyncio.sleep(0)
        seen.append(event.tool)

    stream = aclient.nodes.stream(prompt="Go.", model=scripts("alisten", STEPS))
    outcome = await stream.on("node.tool_call.started", on_tool).final_outcome()
    assert seen == ["get-current-time"] and isinstance(outcome, api.NodeResult)


def test_bad_listeners_and_arguments_are_refused_at_the_call(client: Heron) -> None:
    stream = client.nodes.events("some-node")
    with pytest.raises(ValueError, match=r"unknown event type 'node\.text'"):
        stream.on("node.text", print)
    with pytest.raises(TypeError, match="callable"):
        stream.on("*", "not a function")  # type: ignore[arg-type]

    async def coroutine(event: Any) -> None: ...

    with pytest.raises(TypeError, match="AsyncHeron"):
        stream.on("*", coroutine)
    with pytest.raises(TypeError, match="invalid node id"):
        client.nodes.events("../etc")
    with pytest.raises(ValueError, match="after"):
        client.nodes.events("some-node", after=-1)
    with pytest.raises(TypeError, match="after"):
        client.nodes.events("some-node", after="3")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="invalid parent"):
        client.nodes.stream(prompt="Hi.", parent="no/such")
    with pytest.raises(TypeError, match="Reconnect"):
        client.nodes.stream(prompt="Hi.", reconnect=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="attempts"):
        Reconnect(attempts=-1)


def test_events_of_a_settled_node_replay_and_end(client: Heron, scripts: Any) -> None:
    stream = client.nodes.stream(prompt="Go.", model=scripts("settled", STEPS))
    live = list(stream)
    node_id = stream.node.node_id
    replay = client.nodes.events(node_id)
    assert list(replay) == live and replay.node.node_id == node_id
    # Resuming from a cursor: only what came after it.
    tail = list(client.nodes.events(node_id, after=9))
    assert tail == live[9:]
    # A cursor past the end: stream_gap says so, then everything from the earliest event
    # (numbers below the cursor are not taken for repeats).
    future = list(client.nodes.events(node_id, after=1000))
    gap = future[0]
    assert isinstance(gap, api.StreamError) and gap.error.code == "stream_gap"
    assert gap.error.details is not None and gap.error.details.earliest_sequence == 1
    assert future[1:] == live


def test_events_joining_mid_run_get_the_reports_and_completed_messages(
    client: Heron, scripts: Any
) -> None:
    push = {"tier": "progress", "title": "Step", "body": "Halfway."}
    steps = [
        {"text": "First message.", "tool_calls": [{"name": "push-report", "arguments": push}]},
        {"text": "Last words.", "delay": 1.5},
    ]
    with client.nodes.stream(prompt="Go.", model=scripts("join", steps)) as first:
        turns = 0
        for event in first:  # until the second turn is under way
            turns += event.type == "node.turn.started"
            if turns == 2:
                break
        node_id = first.node.node_id
    joined = list(client.nodes.events(node_id))
    # The seed: the running status, then the completed message and the report its turn
    # pushed, in the order they happened.
    status, done, report = joined[0], joined[1], joined[2]
    assert isinstance(status, api.NodeStatusChanged) and status.status == "running"
    assert isinstance(report, api.ReportPushed) and report.report.body == "Halfway."
    assert isinstance(done, api.OutputTextDone) and done.text == "First message."
    assert done.sequence_number < report.sequence_number
    assert "".join(e.delta for e in joined if isinstance(e, api.OutputTextDelta)) == "Last words."
    assert isinstance(joined[-1], api.NodeSettled)


async def test_async_events_of_a_settled_node(aclient: AsyncHeron, scripts: Any) -> None:
    stream = aclient.nodes.stream(prompt="Go.", model=scripts("asettled", ["Done."]))
    outcome = await stream.final_outcome()
    node = await stream.node
    replay = aclient.nodes.events(node.node_id)
    assert await replay.final_outcome() == outcome
    assert (await replay.node).status == "completed"


def test_events_of_a_missing_node_raise_not_found_on_use(client: Heron) -> None:
    stream = client.nodes.events("no-such-node", reconnect=Reconnect(attempts=0))
    with pytest.raises(NotFoundError) as raised:
        next(iter(stream))
    assert raised.value.code == "node_not_found"
    with pytest.raises(NotFoundError):  # the stream stays ended with its error
        stream.final_outcome()


def test_a_dormant_node_shows_its_status_and_a_failed_tool_call(
    client: Heron, scripts: Any
) -> None:
    failing = {
        "text": "",
        "tool_calls": [{"name": "get-current-time", "arguments": {"timezone": "Nowhere/X"}}],
    }
    node = client.request(
        "POST",
        "/v1/nodes",
        {"prompt": "Go.", "model": scripts("dormant", [failing, "Sorry."]), "no_kickoff": True},
    )
    with client.nodes.events(node["node_id"]) as stream:
        first = next(stream)
        assert isinstance(first, api.NodeStatusChanged) and first.status == "dormant"
        client.request("POST", f"/v1/nodes/{node['node_id']}/messages", {"body": "Start."})
        completed = next(e for e in stream if isinstance(e, api.ToolCallCompleted))
        assert completed.status == "error"
        assert isinstance(stream.final_outcome(), api.NodeResult)


def test_sync_abort_from_another_thread_wakes_a_blocked_read(client: Heron, scripts: Any) -> None:
    abort_a_blocked_read(client, scripts("abort", ["x"]))


async def test_async_abort_ends_a_pending_read(aclient: AsyncHeron, scripts: Any) -> None:
    await abort_a_pending_read(aclient, scripts("aabort", ["x"]))


def test_a_callers_cancel_aborts_the_stream(client: Heron, scripts: Any) -> None:
    cancel = Cancel()
    stream = client.nodes.stream(
        prompt="W.",
        model=scripts("cancel", ["x"]),
        no_kickoff=True,
        options=RequestOptions(cancel=cancel),
    )
    stream.on("node.status.changed", lambda _: cancel.cancel())
    with pytest.raises(APIUserAbortError):
        stream.final_outcome()
    assert stream.aborted


async def test_async_cancel_before_use_sends_nothing(aclient: AsyncHeron, scripts: Any) -> None:
    cancel = Cancel()
    cancel.cancel()
    before = len(await aclient.request("GET", "/v1/nodes"))
    stream = aclient.nodes.stream(
        prompt="W.", model=scripts("early", ["x"]), options=RequestOptions(cancel=cancel)
    )
    with pytest.raises(APIUserAbortError):
        await stream.node
    assert len(await aclient.request("GET", "/v1/nodes")) == before


# The parser, on its own.


def test_sse_decoder_handles_split_chunks_and_every_line_ending() -> None:
    decoder = SSEDecoder()
    wire = b'id: 7\r\nevent: node.turn.started\r\ndata: {"a":\r\n\r\n: keepalive\n\n'
    got: list[ServerSentEvent] = []
    for i in range(len(wire)):  # one byte at a time: every boundary is exercised
        got += decoder.feed(wire[i : i + 1])
    assert got == [ServerSentEvent("node.turn.started", '{"a":', "7")]
    assert decoder.idle
    got = decoder.feed(b"data: one\rdata:two\r")
    assert got == []
    got = decoder.feed(b"\ndata:  three\n\nevent: x\n\n")  # "\r" then "\n": one line end
    assert got == [ServerSentEvent("message", "one\ntwo\n three", None)]
    assert decoder.feed(b"id: 1\0\ndata: z\n\n") == [ServerSentEvent("message", "z", None)]
    assert decoder.feed(b"data: partial") == [] and not decoder.idle
