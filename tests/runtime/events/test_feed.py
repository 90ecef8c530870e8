"""``GET /v1/events`` on a real daemon: every node's events on one stream, live, without
text deltas or ``id:`` lines; a reader that stops reading is dropped; the daemon's stop
ends it."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from tests.support.daemon import Daemon, wait_settled, write_script
from tests.support.polling import eventually
from tests.support.sse import Sse, _parse, collect, records

FEED_BUFFER = 8
"""``HERON_SSE_BUFFER`` here: a feed reader may hold 8 times that (64 records)."""


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """A daemon with fast keepalives, small reader buffers and a 1 s write timeout."""
    home = tmp_path_factory.mktemp("heron-feed")
    default = write_script(home, "default", ["Hello from the default script."])
    env = {
        "HERON_PROVIDER": default,
        "HERON_SSE_KEEPALIVE": "0.2",
        "HERON_SSE_BUFFER": str(FEED_BUFFER),
        "HERON_SSE_BUFFER_BYTES": str(32 * 1024),
        "HERON_SSE_SEND_TIMEOUT": "1",
    }
    process = Daemon(home, env).start()
    try:
        yield process
    finally:
        process.stop()


def streams(client: httpx.Client) -> dict[str, int]:
    return dict(client.get("/v1/status").json()["event_streams"])


def create(client: httpx.Client, model: str, **fields: Any) -> str:
    response = client.post("/v1/nodes", json={"prompt": "Go.", "model": model, **fields})
    assert response.status_code == 201, response.text
    return str(response.json()["node_id"])


class Reader:
    """Reads the feed on a thread until it holds every node's ``node.settled``."""

    def __init__(self, daemon: Daemon, waiting_for: int) -> None:
        self.got: list[Sse] = []
        self.raw = b""
        self.numbered = 0
        """Records with an ``id:`` line."""
        self._waiting_for = waiting_for
        self._client = daemon.client()
        self._cm = self._client.stream("GET", "/v1/events")
        self.response = self._cm.__enter__()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        settled = 0
        pending = b""
        for chunk in self.response.iter_bytes():
            if len(self.raw) < 64:
                self.raw += chunk  # (its start: the retry line)
            pending += chunk
            *blocks, pending = pending.split(b"\n\n")
            for block in blocks:
                if b"\nid: " in b"\n" + block:
                    self.numbered += 1
                if block.startswith(b"retry:"):
                    continue
                record = _parse(block.decode())
                self.got.append(record)
                settled += record.event == "node.settled"
            if settled >= self._waiting_for:
                return

    def close(self) -> list[Sse]:
        self._thread.join(timeout=30)
        assert not self._thread.is_alive(), "the feed did not deliver every node's settle"
        self._cm.__exit__(None, None, None)
        self._client.close()
        return [r for r in self.got if r.event != ":"]


def test_the_feed_carries_every_nodes_events_without_deltas_or_ids(
    daemon: Daemon, client: httpx.Client, scripts: Any
) -> None:
    readers_before = streams(client)["readers"]
    reader = Reader(daemon, waiting_for=2)
    eventually(lambda: streams(client)["readers"] == readers_before + 1, what="the feed open")
    first = create(
        client,
        scripts(
            "one",
            [{"text": "Checking the time.", "tool_calls": [{"name": "get-current-time"}]}, "Done."],
        ),
    )
    second = create(client, scripts("two", ["Just a few words, streamed as deltas."]))
    got = reader.close()
    assert reader.response.headers["content-type"].startswith("text/event-stream")
    assert reader.raw.startswith(b"retry: 2000\n\n")
    assert reader.numbered == 0 and all(e.id is None for e in got)
    assert "node.output_text.delta" not in {e.event for e in got}
    for node in (first, second):
        wait_settled(client, node)
        # What the node's own stream has, but the deltas, once each and in its order.
        own = [e for e in collect(client, node, after=0) if e.event != "node.output_text.delta"]
        fed = [e for e in got if e.data["node_id"] == node]
        assert [(e.event, e.seq) for e in fed] == [(e.event, e.seq) for e in own]
        assert [e.data for e in fed] == [e.data for e in own]
    kinds = {e.event for e in got if e.data["node_id"] == first}
    assert {"node.tool_call.started", "node.tool_call.completed", "node.output_text.done"} <= kinds
    eventually(lambda: streams(client)["readers"] == readers_before, what="the feed detached")


def test_a_feed_reader_that_stops_reading_is_dropped_and_others_are_not(
    daemon: Daemon, client: httpx.Client, scripts: Any
) -> None:
    # Turns of ~100 KB of text each: their output_text.done records overflow the stalled
    # reader's 256 KiB (8 times 32 KiB) past what the socket buffers hold.
    turn = {
        "text": " ".join("q" * 2500 for _ in range(40)),
        "tool_calls": [{"name": "get-current-time", "arguments": {}}],
    }
    node = create(client, scripts("flood", [turn] * 12 + ["Flood over."]), no_kickoff=True)
    before = streams(client)
    keeping_up = Reader(daemon, waiting_for=1)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as raw:
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        raw.connect(str(daemon.socket))
        raw.sendall(b"GET /v1/events HTTP/1.1\r\nHost: heron\r\n\r\n")
        eventually(lambda: streams(client)["readers"] == before["readers"] + 2, what="two feeds")
        assert client.post(f"/v1/nodes/{node}/messages", json={"body": "Go."}).status_code == 202
        # It never reads: dropped for its buffer, and its connection closed when the write
        # of stream_dropped stalls.
        eventually(
            lambda: streams(client),
            lambda got: got["readers_dropped"] > before["readers_dropped"],
            timeout=60,
            what="the stalled feed reader dropped",
        )
        raw.settimeout(30)
        received = b""
        while chunk := raw.recv(1 << 16):
            received += chunk
    assert received.startswith(b"HTTP/1.1 200")
    got = keeping_up.close()
    fed = [e for e in got if e.data.get("node_id") == node]
    assert fed[-1].event == "node.settled"
    assert [e.seq for e in fed] == sorted({e.seq for e in fed})  # in order, none twice
    assert streams(client)["readers_dropped"] == before["readers_dropped"] + 1  # only it
    wait_settled(client, node)


def test_the_daemons_stop_ends_the_feed(tmp_path_factory: pytest.TempPathFactory) -> None:
    home = tmp_path_factory.mktemp("heron-feed-stop")
    process = Daemon(home, {"HERON_PROVIDER": write_script(home, "d", ["Hi."])}).start()
    try:
        with process.client() as client, client.stream("GET", "/v1/events") as response:
            assert response.status_code == 200
            seen: list[Sse] = []
            ended = threading.Event()

            def read() -> None:
                try:
                    seen.extend(records(response))
                except httpx.HTTPError:
                    pass
                ended.set()

            threading.Thread(target=read, daemon=True).start()
            process.stop()
            assert ended.wait(20), "the feed outlived the daemon"
        assert process.process is not None and process.process.returncode == 0
    finally:
        process.stop()
