"""Event streams across restarts, readers that leave or stall, and turns that fail."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.daemon import Daemon, wait_settled, wait_status, write_script
from tests.support.polling import eventually
from tests.support.sse import collect, kinds, records, stream


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """Fast keepalives, a 64-event reader buffer and a 1 s write timeout."""
    home = tmp_path_factory.mktemp("heron-events-readers")
    default = write_script(home, "default", ["Default."])
    env = {
        "HERON_PROVIDER": default,
        "HERON_SSE_KEEPALIVE": "0.2",
        "HERON_SSE_BUFFER": "64",
        "HERON_SSE_SEND_TIMEOUT": "1",
    }
    process = Daemon(home, env).start()
    try:
        yield process
    finally:
        process.stop()


def create(client: httpx.Client, model: str, **fields: Any) -> str:
    response = client.post("/v1/nodes", json={"prompt": "Go.", "model": model, **fields})
    assert response.status_code == 201, response.text
    return str(response.json()["node_id"])


def streams(client: httpx.Client) -> dict[str, int]:
    return dict(client.get("/v1/status").json()["event_streams"])


def wait_streams(client: httpx.Client, **expected: int) -> dict[str, int]:
    return eventually(
        lambda: streams(client),
        lambda got: all(got[k] == v for k, v in expected.items()),
        what=f"event streams {expected}",
    )


def errors(got: list[Any]) -> list[Any]:
    return [e for e in got if e.event == "error"]


@pytest.mark.slow
def test_a_clean_restart_skips_no_numbers_and_reports_no_gap(tmp_path: Path) -> None:
    default = write_script(tmp_path, "default", ["Default."])
    fresh = Daemon(tmp_path / "home", {"HERON_PROVIDER": default, "HERON_SSE_KEEPALIVE": "0.2"})
    fresh.start()
    try:
        with fresh.client() as client:
            done = create(client, write_script(tmp_path, "done", ["All finished here."]))
            wait_settled(client, done)
            idle = create(client, write_script(tmp_path, "idle", ["Woken."]), no_kickoff=True)
            before = collect(client, done, after=0)
        fresh.stop()  # SIGTERM: the numbers really used are recorded
        fresh.start()
        with fresh.client() as client:
            last = before[-1]
            # A settled node resumed at its end ends at once, with its logged node.settled
            # (numbered: a real event, not one made up from the row after a wait).
            assert collect(client, done, after=last.seq) == [last] and last.id == last.seq
            # Resuming mid-way: every logged event after the cursor, and a stream_gap
            # only right before the text deltas that were never logged.
            logged = [e for e in before if e.event != "node.output_text.delta"]
            text_done = next(e for e in before if e.event == "node.output_text.done")
            assert (
                collect(client, done, after=text_done.seq) == logged[logged.index(text_done) + 1 :]
            )
            cursor = before[1].seq
            resumed = collect(client, done, after=cursor)
            gap = resumed[0]
            assert gap.data["error"]["code"] == "stream_gap" and len(errors(resumed)) == 1
            assert gap.data["error"]["details"]["earliest_sequence"] == text_done.seq
            assert resumed[1:] == [e for e in logged if e.seq > cursor]
            # Nothing retained in memory: the log is replayed and ends with node.settled.
            replayed = collect(client, done)
            assert replayed == [e for e in before if e.event != "node.output_text.delta"]
            # The dormant node goes on right after its last number: none were skipped.
            assert client.post(f"/v1/nodes/{idle}/messages", json={"body": "Go."}).status_code
            wait_settled(client, idle)
            woken = collect(client, idle, after=0)
            assert [e.seq for e in woken] == list(range(1, len(woken) + 1))
            assert kinds(woken)[:2] == ["node.status.changed"] * 2 and not errors(woken)
    finally:
        fresh.stop()


def test_the_daemon_lets_go_of_a_reader_that_disconnects(
    daemon: Daemon, client: httpx.Client, scripts: Any
) -> None:
    node = create(client, scripts("leave", ["Never run."]), no_kickoff=True)
    with daemon.client() as own, stream(own, node) as response:
        seen = records(response)  # kept: dropping it would close the response
        first = next(seen)
        assert first.event == "node.status.changed"
        assert streams(client)["readers"] == 1
        seen.close()
    # The next keepalive finds the connection gone: the reader is detached.
    wait_streams(client, readers=0)
    assert client.get(f"/v1/nodes/{node}").json()["status"] == "dormant"


def test_a_reader_that_stops_reading_has_its_connection_closed(
    daemon: Daemon, client: httpx.Client, scripts: Any
) -> None:
    turn = {
        "text": " ".join("z" * 2500 for _ in range(40)),
        "tool_calls": [{"name": "get-current-time", "arguments": {}}],
    }
    node = create(client, scripts("stall", [turn] * 6 + ["Over."]), no_kickoff=True)
    dropped = streams(client)["readers_dropped"]
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as raw:
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        raw.connect(str(daemon.socket))
        raw.sendall(f"GET /v1/nodes/{node}/events?after=0 HTTP/1.1\r\nHost: heron\r\n\r\n".encode())
        wait_streams(client, readers=1)
        assert client.post(f"/v1/nodes/{node}/messages", json={"body": "Go."}).status_code == 202
        # It never reads: dropped for its buffer, and its connection closed when the
        # write of stream_dropped stalls, even while the socket stays open on this side.
        wait_streams(client, readers=0, readers_dropped=dropped + 1)
        raw.settimeout(30)
        received = b""
        while chunk := raw.recv(1 << 16):
            received += chunk
    assert received.startswith(b"HTTP/1.1 200")
    wait_settled(client, node)


def test_a_failing_turn_still_completes_on_the_stream(client: httpx.Client, scripts: Any) -> None:
    node = create(client, scripts("fails", [{"error": "upstream down", "status": 400}]))
    wait_status(client, node, "failed")
    got = collect(client, node, after=0)
    started = kinds(got).count("node.turn.started")
    assert started >= 1 and kinds(got).count("node.turn.completed") == started
    assert kinds(got)[-1] == "node.settled"


def test_cursors_are_1_to_18_digits_or_422(client: httpx.Client, scripts: Any) -> None:
    node = create(client, scripts("cursor", ["Hi."]))
    wait_settled(client, node)
    for params, headers in (
        ({"after": "1" * 19}, {}),
        ({"after": "+5"}, {}),
        ({"after": " 5"}, {}),
        ({}, {"Last-Event-ID": "9" * 19}),
        ({"after": "٣"}, {}),  # a digit to str.isdigit, not to the route
        ({}, {"Last-Event-ID": "1e3"}),
    ):
        answer = client.get(f"/v1/nodes/{node}/events", params=params, headers=headers)
        assert answer.status_code == 422, (params, headers, answer.text)
        assert answer.json()["error"]["code"] == "invalid_request"
    ok = client.get(f"/v1/nodes/{node}/events", params={"after": "9" * 18})
    assert ok.status_code == 200 and b"stream_gap" in ok.content
