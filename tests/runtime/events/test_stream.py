"""``GET /v1/nodes/{id}/events`` on a real daemon: one test per row of the seed's
"depending on the node's state" and "sequence, resume, and failure" tables."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import ValidationError
from tests.support.daemon import Daemon, wait_settled, wait_status, write_script
from tests.support.sse import Sse, collect, events, kinds, records, stream

from heron import api

TOOL = "get-current-time"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """A daemon with fast keepalives (0.2 s) and a 256-event reader buffer."""
    home = tmp_path_factory.mktemp("heron-events")
    default = write_script(home, "default", ["Hello from the default script."])
    env = {"HERON_PROVIDER": default, "HERON_SSE_KEEPALIVE": "0.2", "HERON_SSE_BUFFER": "256"}
    process = Daemon(home, env).start()
    try:
        yield process
    finally:
        process.stop()


def create(client: httpx.Client, model: str, **fields: Any) -> str:
    body = {"prompt": "Go.", "model": model, **fields}
    response = client.post("/v1/nodes", json=body)
    assert response.status_code == 201, response.text
    return str(response.json()["node_id"])


def call(name: str = TOOL, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def text_of(got: list[Sse]) -> str:
    return "".join(e.data["delta"] for e in got if e.event == "node.output_text.delta")


def test_every_event_parses_as_its_typed_model(client: httpx.Client, scripts: Any) -> None:
    node = create(client, scripts("typed", [{"text": "Checking.", "tool_calls": [call()]}, "Ok."]))
    wait_settled(client, node)
    got = collect(client, node, after=0)
    parsed = [api.parse_event(e.event, e.data) for e in got]
    assert {type(p) for p in parsed} >= {
        api.NodeStatusChanged,
        api.TurnStarted,
        api.OutputTextDelta,
        api.OutputTextDone,
        api.TurnCompleted,
        api.ToolCallStarted,
        api.ToolCallCompleted,
        api.NodeSettled,
    }
    assert [e.id for e in got] == [e.seq for e in got] == list(range(1, len(got) + 1))
    assert all(e.data["node_id"] == node for e in got)


# -- "What you get depending on the node's state" ------------------------------------


def test_already_settled_replays_what_is_retained_and_ends_with_settled(
    client: httpx.Client, scripts: Any
) -> None:
    node = create(client, scripts("settled", ["All done here."]))
    poll = wait_settled(client, node)
    got = collect(client, node)
    assert got[0].event == "node.status.changed" and got[0].data["status"] == "running"
    assert got[-1].event == "node.settled"
    # The same outcome row GET …/outcome reads.
    assert got[-1].data["outcome"] == poll["outcome"]
    assert text_of(got) == "All done here."
    assert [e.seq for e in got] == list(range(1, len(got) + 1))
    # Watching revived nothing.
    assert client.get(f"/v1/nodes/{node}").json()["status"] == "completed"


def test_running_node_streams_live(client: httpx.Client, scripts: Any) -> None:
    node = create(client, scripts("live", [{"text": "Thought about it.", "delay": 1.0}]))
    with stream(client, node) as response:
        assert response.status_code == 200
        got = events(response)
    assert "error" not in kinds(got)
    assert text_of(got) == "Thought about it."
    assert kinds(got)[-3:] == ["node.turn.completed", "node.status.changed", "node.settled"]
    # A reader that joins before the first event is durable gets the status made from the
    # row, without an id: not an event of the sequence, so only numbered ones must ascend.
    numbers = [e.seq for e in got if e.id is not None]
    assert numbers == sorted(set(numbers))
    assert all(e.event == "node.status.changed" for e in got if e.id is None)


def test_dormant_node_says_dormant_and_stays_open_until_a_run_starts(
    client: httpx.Client, scripts: Any
) -> None:
    node = create(client, scripts("dormant", ["Woken and done."]), no_kickoff=True)
    with stream(client, node) as response:
        seen = records(response)
        first = next(seen)
        assert (first.event, first.data["status"], first.seq) == (
            "node.status.changed",
            "dormant",
            1,
        )
        keepalives = 0
        for record in seen:  # held open: only keepalives until a run starts
            assert record.event == ":" and record.data["comment"] == "keepalive"
            keepalives += 1
            if keepalives == 2:
                break
        assert (
            client.post(f"/v1/nodes/{node}/messages", json={"body": "Wake up."}).status_code == 202
        )
        rest = [r for r in seen if r.event != ":"]
    assert rest[0].event == "node.status.changed" and rest[0].data["status"] == "running"
    assert rest[-1].event == "node.settled"
    assert text_of(rest) == "Woken and done."


# -- "Sequence, resume, and failure" -------------------------------------------------------


def report(body: str) -> dict[str, Any]:
    return call("push-report", tier="progress", title="Step", body=body)


def test_joining_mid_run_seeds_the_status_then_the_history_in_order_then_live(
    client: httpx.Client, scripts: Any
) -> None:
    script = [
        {"text": "First message.", "tool_calls": [report("early report")]},
        {"text": "Second message.", "tool_calls": [report("later report")]},
        {"text": "Last words.", "delay": 1.5},
    ]
    node = create(client, scripts("join", script))
    with stream(client, node, after=0) as response:
        turns = 0

        def third_turn(e: Sse) -> bool:
            nonlocal turns
            turns += e.event == "node.turn.started"
            return turns == 3

        before = events(response, until=third_turn)
    done = {e.data["text"]: e.seq for e in before if e.event == "node.output_text.done"}
    pushed = [(e.seq, e.data) for e in before if e.event == "node.report.pushed"]
    # A second subscriber joining without a cursor is seeded from the ring.
    with stream(client, node) as response:
        joined = events(response)
    reports = [e for e in joined if e.event == "node.report.pushed"]
    assert [r.data["report"]["body"] for r in reports] == ["early report", "later report"]
    # The reports' own events, with their own numbers: one sequence for everyone.
    assert [(r.seq, r.data) for r in reports] == pushed
    assert [r.id for r in reports] == [seq for seq, _ in pushed]
    # What the node is doing first, then the history as it happened: each message
    # before the report its turn pushed.
    assert joined[0].event == "node.status.changed" and joined[0].data["status"] == "running"
    assert kinds(joined)[1:5] == ["node.output_text.done", "node.report.pushed"] * 2
    assert [e.seq for e in joined[1:5]] == sorted(e.seq for e in joined[1:5])
    assert [(e.data["text"], e.seq) for e in joined[1:5:2]] == list(done.items())
    live = joined[5:]
    assert "push-report" not in str([e.data for e in live])  # past calls are not replayed
    assert not [e for e in live if e.event == "node.report.pushed"]  # nor sent twice
    assert text_of(live) == "Last words."
    assert live[-1].event == "node.settled"
    assert min(e.seq for e in live) > before[-1].seq


def test_a_joiner_gets_the_partial_text_as_one_delta(client: httpx.Client, scripts: Any) -> None:
    text = "one two three four five six seven eight nine ten"
    node = create(client, scripts("partial", [{"text": text, "chunk_delay": 0.15}]))
    with stream(client, node, after=0) as response:
        first = events(
            response,
            until=lambda e: e.event == "node.output_text.delta" and "three" in e.data["delta"],
        )
    streamed = text_of(first)
    with stream(client, node) as response:
        joined = events(response)
    deltas = [e for e in joined if e.event == "node.output_text.delta"]
    # The partial so far comes as one delta numbered as its last piece, then live pieces.
    assert deltas[0].data["delta"].startswith(streamed)
    assert deltas[0].id == deltas[0].seq and all(d.seq > deltas[0].seq for d in deltas[1:])
    assert text_of(joined) == text
    assert joined[-1].event == "node.settled"


def test_a_second_subscriber_sees_the_same_numbers(client: httpx.Client, scripts: Any) -> None:
    node = create(client, scripts("two", [{"text": "Shared stream.", "delay": 0.5}]))
    with stream(client, node, after=0) as one, stream(client, node, after=0) as two:
        first, second = events(one), events(two)
    assert [(e.seq, e.event, e.data) for e in first] == [(e.seq, e.event, e.data) for e in second]
    assert first[-1].event == "node.settled"


def test_after_within_the_retained_range_replays_after_it(
    client: httpx.Client, scripts: Any
) -> None:
    node = create(
        client, scripts("after", [{"text": "One two three.", "tool_calls": [call()]}, "Ok."])
    )
    wait_settled(client, node)
    full = collect(client, node, after=0)
    assert collect(client, node, after=5) == [e for e in full if e.seq > 5]
    assert collect(client, node, after=len(full) - 1) == full[-1:]


def test_last_event_id_resumes_and_after_wins_over_it(client: httpx.Client, scripts: Any) -> None:
    node = create(client, scripts("cursor", ["Resume me please."]))
    wait_settled(client, node)
    with stream(client, node, last_event_id="4") as response:
        by_header = events(response)
    assert by_header[0].seq == 5
    with stream(client, node, after=2, last_event_id="4") as response:
        both = events(response)
    assert both[0].seq == 3


def test_a_future_cursor_gets_stream_gap_then_continues_from_the_earliest(
    client: httpx.Client, scripts: Any
) -> None:
    node = create(client, scripts("future", ["Short."]))
    wait_settled(client, node)
    full = collect(client, node, after=0)
    got = collect(client, node, after=10_000)
    assert got[0].event == "error" and got[0].id is None
    gap = api.parse_event("error", got[0].data)
    assert isinstance(gap, api.StreamError) and gap.error.code == "stream_gap"
    assert gap.error.details is not None and gap.error.details.earliest_sequence == 1
    assert got[1:] == full


def test_a_cursor_before_the_ring_gets_stream_gap_and_the_logged_events(
    client: httpx.Client, scripts: Any
) -> None:
    words = " ".join(f"w{i}" for i in range(700))  # ~700 deltas: more than the ring's 512
    node = create(client, scripts("evicted", [{"text": words, "tool_calls": [call()]}, "End."]))
    wait_settled(client, node)
    got = collect(client, node, after=3)
    assert got[0].event == "error" and got[0].data["error"]["code"] == "stream_gap"
    rest = got[1:]
    assert got[0].data["error"]["details"]["earliest_sequence"] == rest[0].seq
    # Only text deltas are missing: every other event is there, from the durable log.
    done = [e.data["text"] for e in rest if e.event == "node.output_text.done"]
    assert done == [words, "End."]
    assert {"node.tool_call.started", "node.tool_call.completed", "node.settled"} <= set(
        kinds(rest)
    )
    deltas = [e.seq for e in rest if e.event == "node.output_text.delta"]
    assert 0 < len(deltas) < 700 and rest[0].seq > 3


def test_one_event_over_the_budget_reaches_live_readers_but_clears_the_ring(
    client: httpx.Client, scripts: Any
) -> None:
    # 200 deltas of 1.5 KiB each fit the ring; their output_text.done (300 KiB) does not
    # (200 also fit the reader buffer of 256, since the scripted model sends them at once).
    words = [f"{i:04d}" + "x" * 1530 for i in range(200)]
    text = " ".join(words)
    node = create(client, scripts("huge", [{"text": text, "delay": 0.5}]))
    with stream(client, node, after=0) as response:
        live = events(response)
    done = next(e for e in live if e.event == "node.output_text.done")
    assert done.data["text"] == text == text_of(live)  # live readers got everything
    after_done = [e for e in live if e.seq > done.seq]
    # A cursor on it resumes at the next retained event.
    assert collect(client, node, after=done.seq) == after_done
    # A cursor before it: the deltas went with the ring (stream_gap); the done itself
    # comes back from the durable log, carrying the full text.
    before = collect(client, node, after=done.seq - 5)
    assert before[0].event == "error" and before[0].data["error"]["code"] == "stream_gap"
    assert before[0].data["error"]["details"]["earliest_sequence"] == done.seq
    assert before[1:] == [done, *after_done]
    # Just before it nothing is missing: the log has the done, so no gap.
    assert collect(client, node, after=done.seq - 1) == [done, *after_done]


def test_a_revived_node_streams_on_past_its_first_settlement(
    client: httpx.Client, scripts: Any
) -> None:
    model = scripts("flaky", [{"error": "overloaded", "status": 503}])
    node = create(client, model)
    failed = collect(client, node)
    assert failed[-1].event == "node.settled"
    assert failed[-1].data["outcome"]["reason"] == "provider_error"
    path = Path(model.removeprefix("scripted:"))
    path.write_text(json.dumps(["Recovered."]))
    os.utime(path, (time.time() + 5, time.time() + 5))  # re-read even within one mtime tick
    assert client.post(f"/v1/nodes/{node}/revive").status_code == 200
    wait_settled(client, node)
    after_first = collect(client, node, after=failed[-1].seq)
    assert after_first[0].event == "node.status.changed"
    assert after_first[0].data["status"] == "running"
    assert after_first[-1].event == "node.settled"
    assert after_first[-1].data["outcome"]["output_text"] == "Recovered."
    # From the start: both settlements, and the stream ends only at the last one.
    everything = collect(client, node, after=0)
    assert kinds(everything).count("node.settled") == 2
    assert everything[-len(after_first) :] == after_first


def test_disconnecting_leaves_the_node_running(client: httpx.Client, scripts: Any) -> None:
    script = [
        {"text": "Start.", "tool_calls": [call()]},
        {"text": "Finished anyway.", "delay": 1.0},
    ]
    node = create(client, scripts("leave", script))
    with stream(client, node, after=0) as response:
        first = events(response, until=lambda e: e.event == "node.tool_call.completed")
    assert first[-1].event == "node.tool_call.completed"
    assert client.get(f"/v1/nodes/{node}").json()["status"] == "running"
    poll = wait_settled(client, node)
    assert poll["outcome"]["output_text"] == "Finished anyway."


# -- what is never carried, keepalives, bad requests ------------------------------------


def test_summaries_describe_shapes_never_values_or_output(
    client: httpx.Client, scripts: Any
) -> None:
    script = [
        {
            "text": "Looking.",
            "thinking": "PRIVATE-THOUGHT-77",
            "tool_calls": [call(timezone="Secret/Zone-4242"), call(TOOL, list_arg=[1, 2])],
        },
        "Done.",
    ]
    node = create(client, scripts("shapes", script), situational_context="CONTEXT-SECRET-9")
    wait_settled(client, node)
    with stream(client, node, after=0) as response:
        raw = response.read().decode()
    for secret in ("Secret/Zone-4242", "PRIVATE-THOUGHT-77", "CONTEXT-SECRET-9", "You are a Heron"):
        assert secret not in raw
    got = collect(client, node, after=0)
    completed = [e.data for e in got if e.event == "node.tool_call.completed"]
    assert [(c["summary"], c["status"]) for c in completed] == [
        ("object with 1 field", "error"),  # the unknown timezone: the tool failed
        ("object with 1 field", "error"),  # an argument the tool does not take
    ]
    assert all(
        set(c) == {"node_id", "sequence_number", "tool_call_id", "tool", "status", "summary"}
        for c in completed
    )


def test_keepalives_arrive_on_an_idle_stream(client: httpx.Client, scripts: Any) -> None:
    node = create(client, scripts("idle", [{"text": "Slow.", "delay": 1.0}]))
    with stream(client, node) as response:
        comments = 0
        for record in records(response):
            comments += record.event == ":"
            if record.event == "node.settled":
                break
    assert comments >= 2  # 1 s of quiet with keepalives every 0.2 s


def test_bad_ids_and_cursors_are_answered_as_json_before_streaming(
    client: httpx.Client, scripts: Any
) -> None:
    bad = client.get("/v1/nodes/bad!id/events")
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_node_id"
    missing = client.get("/v1/nodes/no-such-node/events")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "node_not_found"
    node = create(client, scripts("plain", ["Hi."]))
    for params, headers in (
        ({"after": "-1"}, {}),
        ({"after": "x"}, {}),
        ({}, {"Last-Event-ID": "1.5"}),
    ):
        answer = client.get(f"/v1/nodes/{node}/events", params=params, headers=headers)
        assert answer.status_code == 422, answer.text
        assert answer.json()["error"]["code"] == "invalid_request"
    wait_status(client, node, "completed")


def test_parse_event_refuses_unknown_types_and_data_that_does_not_fit_and_ignores_new_fields() -> (
    None
):
    base = {"node_id": "n", "sequence_number": 3}
    assert api.parse_event("node.turn.started", json.dumps(base)) == api.TurnStarted(**base)
    with pytest.raises(ValidationError):
        api.parse_event("node.unknown", base)
    with pytest.raises(ValidationError):  # status is ok or error
        api.parse_event(
            "node.tool_call.completed",
            {**base, "tool_call_id": "c", "tool": "t", "status": "maybe", "summary": "null"},
        )
    # A field a newer daemon adds is ignored, so an older client keeps reading its events.
    newer = api.parse_event("node.turn.started", {**base, "duration_ms": 3})
    assert newer == api.TurnStarted(**base) and "duration_ms" not in newer.model_dump()
    with pytest.raises(ValueError, match="JSON object"):
        api.parse_event("node.turn.started", "[1]")


def test_a_call_of_an_unknown_tool_is_announced_as_a_failed_step(
    client: httpx.Client, scripts: Any
) -> None:
    # The agent answers such a call itself (it never reaches a tool), so the daemon
    # announces it from the call's record: a watcher sees the step fail.
    script = [{"tool_calls": [call("no-such-tool", x=1), call(TOOL)]}, "Done."]
    node = create(client, scripts("unknown-tool", script))
    wait_settled(client, node)
    got = collect(client, node, after=0)
    steps = [
        (e.event, e.data["tool"], e.data.get("status"))
        for e in got
        if e.event.startswith("node.tool_call.")
    ]
    assert ("node.tool_call.started", "no-such-tool", None) in steps
    assert ("node.tool_call.completed", "no-such-tool", "error") in steps
    assert ("node.tool_call.completed", TOOL, "ok") in steps
    assert len(steps) == 4  # each call announced once, the real one by its step
    ids = {e.data["tool_call_id"] for e in got if e.event == "node.tool_call.completed"}
    assert len(ids) == 2 and "" not in ids
