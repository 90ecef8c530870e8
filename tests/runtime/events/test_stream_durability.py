"""Event streams past the happy path: slow readers, TCP, a SIGKILL restart, and the
numbering of events across a crash."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.daemon import Daemon, wait_logged, wait_settled, write_script
from tests.support.sse import Sse, collect, events, kinds, stream

from heron.runtime.events._stream import Hub, encode

TOKEN = "events-tcp-token-0123456789"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """A daemon on its socket and TCP loopback, with a small (64-event) reader buffer."""
    home = tmp_path_factory.mktemp("heron-events-tcp")
    default = write_script(home, "default", ["Default."])
    env = {
        "HERON_PROVIDER": default,
        "HERON_SSE_KEEPALIVE": "0.2",
        "HERON_SSE_BUFFER": "64",
        "HERON_TOKEN": TOKEN,
    }
    process = Daemon(home, env).start("--listen", "127.0.0.1:0")
    try:
        yield process
    finally:
        process.stop()


def create(client: httpx.Client, model: str) -> str:
    response = client.post("/v1/nodes", json={"prompt": "Go.", "model": model})
    assert response.status_code == 201, response.text
    return str(response.json()["node_id"])


def test_a_stalled_reader_is_dropped_while_another_gets_every_event(
    daemon: Daemon, client: httpx.Client, scripts: Any
) -> None:
    # ~1 MB of text in turns of 40 deltas: far more than the socket buffers hold,
    # in bursts the reader that keeps up drains well within its 64-event buffer.
    turn = {
        "text": " ".join("y" * 2500 for _ in range(40)),
        "tool_calls": [{"name": "get-current-time", "arguments": {}}],
        "delay": 0.02,
    }
    model = scripts("flood", [turn] * 10 + ["Flood over."])
    made = client.post("/v1/nodes", json={"prompt": "Go.", "model": model, "no_kickoff": True})
    node = made.json()["node_id"]
    kept: list[Sse] = []
    with (
        daemon.client() as own,
        daemon.client() as stalled_client,
        stream(own, node, after=0) as keeping_up,
        stream(stalled_client, node, after=0) as stalled,
    ):
        reader = threading.Thread(target=lambda: kept.extend(events(keeping_up)))
        reader.start()
        # Both readers are subscribed (their responses have started): now the flood.
        assert client.post(f"/v1/nodes/{node}/messages", json={"body": "Go."}).status_code == 202
        reader.join(timeout=60)
        assert not reader.is_alive()
        wait_settled(client, node)
        late = events(stalled)  # only now does the stalled reader read anything
    assert kept[-1].event == "node.settled"
    assert [e.seq for e in kept] == list(range(1, len(kept) + 1))  # every event, in order
    # ~1 MB of conversation made the agent compact its memory, with model calls of its
    # own (counted in the node's turns): housekeeping, not turns of the stream.
    turns = client.get(f"/v1/nodes/{node}").json()["turns"]
    streamed = kinds(kept).count("node.turn.started")
    assert turns > streamed == kinds(kept).count("node.turn.completed")
    assert late[-1].event == "error" and late[-1].data["error"]["code"] == "stream_dropped"
    prefix = late[:-1]
    assert 0 < len(prefix) < len(kept)
    assert [(e.seq, e.data) for e in prefix] == [(e.seq, e.data) for e in kept[: len(prefix)]]


def tcp_url(client: httpx.Client) -> str:
    listeners = client.get("/v1/status").json()["listeners"]
    return "http://" + next(item["address"] for item in listeners if item["kind"] == "tcp")


def test_streams_over_tcp_loopback_with_the_bearer_token(
    client: httpx.Client, scripts: Any
) -> None:
    node = create(client, scripts("tcp", ["Over TCP."]))
    wait_settled(client, node)
    base = tcp_url(client)
    with httpx.Client(base_url=base, timeout=30) as anonymous:
        refused = anonymous.get(f"/v1/nodes/{node}/events")
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "unauthorized"
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=base, timeout=30, headers=headers) as tcp:
        over_tcp = collect(tcp, node, after=0)
    assert over_tcp == collect(client, node, after=0)
    assert over_tcp[-1].event == "node.settled"


# -- restarts ----------------------------------------------------------------------


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[Daemon]:
    """A daemon of this test's own, to SIGKILL and restart."""
    default = write_script(tmp_path, "default", ["Default."])
    process = Daemon(tmp_path / "home", {"HERON_PROVIDER": default, "HERON_SSE_KEEPALIVE": "0.2"})
    try:
        yield process.start()
    finally:
        process.stop()


@pytest.mark.slow
def test_resuming_across_a_sigkill_misses_nothing_but_text_deltas(
    fresh: Daemon, tmp_path: Path
) -> None:
    first_text = "Words streamed before the crash, one delta each."
    script = [
        {"text": first_text, "tool_calls": [{"name": "get-current-time", "arguments": {}}]},
        # The resumed run starts while the daemon is still starting: it must outlast the
        # start-up (seconds on a loaded machine) for the joiner below to find it running.
        {"text": "Finished after the restart.", "delay": 8.0},
    ]
    model = write_script(tmp_path, "crash", script)
    with fresh.client() as client:
        node = create(client, model)
        turns = 0

        def second_turn(e: Sse) -> bool:
            nonlocal turns
            turns += e.event == "node.turn.started"
            return turns == 2

        with stream(client, node, after=0) as response:
            before = events(response, until=second_turn)
        wait_logged(fresh, node, "node.turn.started", 2)
    fresh.kill()
    fresh.start()
    deltas = [e for e in before if e.event == "node.output_text.delta"]
    cursor = deltas[2].seq  # the client had read three deltas
    with fresh.client() as client:
        # A joiner without a cursor while the resumed run goes on: this process never
        # saw the run start, so its completed message is seeded from the log.
        with stream(client, node) as response:
            joined = events(response)
        resumed = collect(client, node, after=cursor)
        # A cursor on the last event before the crash: the numbers the restart skipped
        # are not reported missing (no delta was lost after it).
        at_crash = collect(client, node, after=before[-1].seq)
    done_before = next(e for e in before if e.event == "node.output_text.done")
    assert joined[0].event == "node.status.changed" and joined[0].data["status"] == "running"
    assert joined[1] == done_before
    assert joined[-1].event == "node.settled" and "error" not in kinds(joined)
    gap = resumed[0]
    assert gap.event == "error" and gap.data["error"]["code"] == "stream_gap"
    rest = resumed[1:]
    assert gap.data["error"]["details"]["earliest_sequence"] == rest[0].seq
    # Everything but text deltas that the first stream saw after the cursor, unchanged.
    expected = [e for e in before if e.seq > cursor and e.event != "node.output_text.delta"]
    assert rest[: len(expected)] == expected
    assert rest[0].event == "node.output_text.done" and rest[0].data["text"] == first_text
    # The new process numbers above anything the old one may have handed out.
    after_restart = rest[len(expected) :]
    assert min(e.seq for e in after_restart) > max(e.seq for e in before)
    assert kinds(after_restart)[-1] == "node.settled"
    # The log reads as the node lived: it never stopped running, so no second `running`;
    # the turn the crash cut short starts again.
    assert after_restart[0].event == "node.turn.started"
    changes = [e.data["status"] for e in after_restart if e.event == "node.status.changed"]
    assert changes == ["completed"]
    assert "error" not in kinds(at_crash) and at_crash == after_restart
    assert after_restart[-1].data["outcome"]["output_text"] == "Finished after the restart."


def test_the_hub_follows_the_run_for_joiners() -> None:
    hub = Hub("n", 0, events=512, size=256 * 1024)
    published = [
        ("node.status.changed", {"status": "running"}),
        ("node.turn.started", {}),
        ("node.output_text.delta", {"delta": "Hel"}),
        ("node.output_text.delta", {"delta": "lo."}),
        ("node.output_text.done", {"text": "Hello."}),
        ("node.turn.completed", {}),
        ("node.turn.started", {}),
        ("node.output_text.delta", {"delta": "Par"}),
        ("node.output_text.delta", {"delta": "tial"}),
    ]
    for seq, (kind, data) in enumerate(published, start=1):
        hub.add(encode("n", seq, kind, data))
    assert hub.run_known
    assert [r.data["text"] for r in hub.done] == ["Hello."]
    assert (hub.partial, hub.partial_seq) == ("Partial", 9)
    hub.add(encode("n", 10, "node.status.changed", {"status": "running"}))  # the next run
    assert (hub.done, hub.partial) == ([], "")


def test_the_ring_keeps_512_events_or_256_kib_whichever_binds_first() -> None:
    hub = Hub("n", 0, events=512, size=256 * 1024)
    for seq in range(1, 601):
        hub.add(encode("n", seq, "node.output_text.delta", {"delta": "d"}))
    assert len(hub.ring) == 512 and hub.floor == 88 and hub.ring[0].sequence_number == 89
    for seq in range(601, 701):
        hub.add(encode("n", seq, "node.output_text.delta", {"delta": "z" * 4096}))
    assert sum(len(r.wire) for r in hub.ring) <= 256 * 1024
    assert hub.ring[-1].sequence_number == 700 and len(hub.ring) < 100
    assert hub.floor == hub.ring[0].sequence_number - 1
