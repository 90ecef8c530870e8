"""Streams that resume by themselves: a cut connection, ``stream_dropped``, a daemon restart."""

from __future__ import annotations

import json
import re
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.daemon import Daemon, write_script
from tests.support.streams import EXPECTED_TYPES, TOOL_TURN, check_run

from heron import api
from heron.client import (
    APIConnectionError,
    APIError,
    AsyncHeron,
    Heron,
    Reconnect,
    RequestOptions,
)
from heron.client._stream_flow import Emit, Open, Read, Start, stream_flow

_REQUEST = re.compile(rb"(GET|POST) (\S+) HTTP/1\.1")


class CuttingProxy:
    """A Unix-socket proxy in front of the daemon that can cut every open connection."""

    def __init__(self, path: Path, target: Path) -> None:
        self.path, self.target = path, target
        self.requests: list[str] = []
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(path))
        self._server.listen()
        self._accepting = threading.Thread(target=self._accept, daemon=True)
        self._accepting.start()

    def _accept(self) -> None:
        while True:
            try:
                downstream, _ = self._server.accept()
            except OSError:
                return  # closed
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            upstream.connect(str(self.target))
            with self._lock:
                self._sockets += [downstream, upstream]
                for source, sink, record in (
                    (downstream, upstream, True),
                    (upstream, downstream, False),
                ):
                    thread = threading.Thread(target=self._pump, args=(source, sink, record))
                    self._threads.append(thread)
                    thread.start()

    def _pump(self, source: socket.socket, sink: socket.socket, record: bool) -> None:
        try:
            while chunk := source.recv(65536):
                if record:
                    with self._lock:
                        self.requests += [m[2].decode() for m in _REQUEST.finditer(chunk)]
                sink.sendall(chunk)
        except OSError:
            pass
        for sock in (source, sink):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self) -> None:
        """Shut every connection open now down (new ones are still accepted)."""
        with self._lock:
            for sock in self._sockets:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def event_requests(self) -> list[str]:
        """The paths of the event-stream requests so far."""
        with self._lock:
            return [r for r in self.requests if "/events" in r]

    def close(self) -> None:
        """Stop listening, cut every connection and wait for the pumps (idempotent)."""
        if self._server.fileno() == -1:
            return
        self._server.shutdown(socket.SHUT_RDWR)
        self._server.close()
        self._accepting.join(10)
        self.cut()
        for thread in self._threads:
            thread.join(10)
        for sock in self._sockets:
            sock.close()


@pytest.fixture
def proxy(daemon: Daemon, tmp_path: Path) -> Iterator[CuttingProxy]:
    running = CuttingProxy(tmp_path / "proxy.sock", daemon.socket)
    try:
        yield running
    finally:
        running.close()


def resumed_after(path: str) -> int:
    """The cursor an events request resumed after."""
    return int(path.rsplit("after=", 1)[1])


SLOW_STEPS: list[Any] = [TOOL_TURN, {"text": "It is noon.", "delay": 0.5}]


def test_sync_stream_resumes_after_a_cut_connection(proxy: CuttingProxy, scripts: Any) -> None:
    with Heron(socket_path=proxy.path, auto_start=False) as client:
        stream = client.nodes.stream(prompt="Go.", model=scripts("cut", SLOW_STEPS))
        events: list[api.NodeEvent] = []
        for event in stream:
            events.append(event)
            if isinstance(event, api.ToolCallCompleted):
                proxy.cut()
        check_run(events, stream.node)
    opened = proxy.event_requests()
    assert len(opened) >= 2 and opened[0].endswith("after=0")
    # Resumed after the last event it had read from the cut connection: the tool call's
    # (9), or one the same read brought along (the node may have run ahead meanwhile).
    assert 9 <= resumed_after(opened[1]) < len(events)


async def test_async_stream_resumes_after_a_cut_connection(
    proxy: CuttingProxy, scripts: Any
) -> None:
    async with AsyncHeron(socket_path=proxy.path, auto_start=False) as client:
        stream = client.nodes.stream(prompt="Go.", model=scripts("acut", SLOW_STEPS))
        events: list[api.NodeEvent] = []
        async for event in stream:
            events.append(event)
            if isinstance(event, api.ToolCallCompleted):
                proxy.cut()
        check_run(events, await stream.node)
    assert 9 <= resumed_after(proxy.event_requests()[1]) < len(events)


def test_a_spent_reconnect_budget_ends_the_stream(proxy: CuttingProxy, scripts: Any) -> None:
    with Heron(socket_path=proxy.path, auto_start=False) as client:
        stream = client.nodes.stream(
            prompt="Go.",
            model=scripts("spent", ["x"]),
            no_kickoff=True,
            reconnect=Reconnect(attempts=2, initial_delay=0.01),
        )
        assert isinstance(next(stream), api.NodeStatusChanged)
        proxy.close()  # nothing listens any more: every reconnection is refused
        with pytest.raises(APIConnectionError) as raised:
            stream.final_outcome()
        assert raised.value.code == "daemon_unavailable"
    assert len(proxy.event_requests()) == 1


@pytest.fixture(scope="module")
def tight(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """A daemon that drops any reader more than one event behind."""
    home = tmp_path_factory.mktemp("heron-tight")
    default = write_script(home, "default", ["Default."])
    env = {"HERON_PROVIDER": default, "HERON_SSE_BUFFER": "1"}
    process = Daemon(home, env).start()
    try:
        yield process
    finally:
        process.stop()


async def test_stream_dropped_resumes_without_losing_or_repeating(
    tight: Daemon, scripts: Any
) -> None:
    words = " ".join(f"w{i}" for i in range(300))
    async with AsyncHeron(socket_path=tight.socket, auto_start=False) as client:
        dropped = (await client.system.status()).event_streams.readers_dropped
        stream = client.nodes.stream(prompt="Go.", model=scripts("flood", [words]))
        events = [event async for event in stream]
        status = await client.system.status()
    assert status.event_streams.readers_dropped > dropped  # it really was dropped
    numbers = [e.sequence_number for e in events if not isinstance(e, api.StreamError)]
    assert numbers == list(range(1, len(numbers) + 1))
    assert "".join(e.delta for e in events if isinstance(e, api.OutputTextDelta)) == words
    assert isinstance(events[-1], api.NodeSettled)


@pytest.mark.slow
def test_a_stream_survives_a_daemon_restart(tmp_path: Path) -> None:
    default = write_script(tmp_path, "default", ["Default."])
    daemon = Daemon(tmp_path / "home", {"HERON_PROVIDER": default}).start()
    steps: list[Any] = [TOOL_TURN, {"text": "It is noon.", "delay": 1.5}]
    try:
        with Heron(socket_path=daemon.socket, auto_start=False) as client:
            stream = client.nodes.stream(prompt="Go.", model=write_script(tmp_path, "r", steps))
            events: list[api.NodeEvent] = []
            for event in stream:
                events.append(event)
                if isinstance(event, api.ToolCallCompleted):
                    daemon.stop()  # mid-run: the second turn is under way
                    daemon.start()
            numbers = [e.sequence_number for e in events if not isinstance(e, api.StreamError)]
            assert numbers == sorted(set(numbers))  # nothing twice, always forward
            kinds = [e.type for e in events]
            assert kinds[: kinds.index("node.tool_call.completed") + 1] == EXPECTED_TYPES[:9]
            settled = events[-1]
            assert isinstance(settled, api.NodeSettled)
            assert isinstance(settled.outcome, api.NodeResult)
            assert settled.outcome.output_text == "It is noon."
            assert stream.final_outcome() == settled.outcome
    finally:
        daemon.stop()


# The flow on its own: connections scripted as bytes, performed by a tiny loop.


def drive(connections: list[list[bytes] | Exception], attempts: int = 3) -> Any:
    """Run a stream flow over scripted connections; (events, cursors opened, outcome)."""

    def start() -> Any:
        if False:
            yield
        return api.Node.model_construct(node_id="n1")

    flow = stream_flow(
        start(),
        after=None,
        reconnect=Reconnect(attempts=attempts, initial_delay=0.0),
        options=RequestOptions(),
    )
    script = iter(connections)
    events: list[api.NodeEvent] = []
    opened: list[int | None] = []
    chunks: Iterator[bytes] = iter(())
    value: Any = None
    thrown: BaseException | None = None
    while True:
        try:
            instruction = flow.throw(thrown) if thrown is not None else flow.send(value)
        except StopIteration as stop:
            return events, opened, stop.value
        value, thrown = None, None
        if isinstance(instruction, Start):
            try:
                next(instruction.flow)
            except StopIteration as stop:
                value = stop.value
        elif isinstance(instruction, Open):
            opened.append(instruction.after)
            connection = next(script)
            if isinstance(connection, Exception):
                thrown = connection
            else:
                chunks = iter(connection)
        elif isinstance(instruction, Read):
            value = next(chunks, b"")
        elif isinstance(instruction, Emit):
            events.append(instruction.event)


def record(number: int | None, kind: str = "node.turn.started", **data: Any) -> bytes:
    head = f"id: {number}\n" if number is not None else ""
    body = json.dumps({"node_id": "n1", "sequence_number": number or 1, **data})
    return f"{head}event: {kind}\ndata: {body}\n\n".encode()


SETTLED = {"outcome": {"kind": "result", "output_text": "ok"}}


def test_the_flow_resumes_from_what_it_emitted_and_never_repeats() -> None:
    first = [record(None, "node.status.changed", status="running"), record(1), record(2)]
    second = [record(1) + record(2) + record(3), record(4, "node.settled", **SETTLED)]
    events, opened, outcome = drive([first, APIConnectionError("refused"), second])
    assert opened == [None, 2, 2]
    assert [getattr(e, "sequence_number", None) for e in events] == [1, 1, 2, 3, 4]
    assert isinstance(events[0], api.NodeStatusChanged)  # made up (no id): kept
    assert isinstance(outcome, api.NodeResult) and outcome.output_text == "ok"


def test_the_flow_keeps_a_joiners_seed_whose_numbers_go_down() -> None:
    # A mid-run joiner gets the reports pushed so far, then the run's completed messages
    # (numbered before the reports): nothing in one connection is a repeat.
    report = {
        "report": {
            "report_id": 1,
            "node_id": "n1",
            "tier": "progress",
            "title": "Step",
            "body": "b",
            "path": None,
            "created_at": "2026-01-01T00:00:00Z",
        }
    }
    seed = [
        record(8, "node.report.pushed", **report),
        record(6, "node.output_text.done", text="First."),
        record(9),
    ]
    later = [record(7) + record(9) + record(10, "node.settled", **SETTLED)]
    events, opened, _ = drive([seed, later])
    assert opened == [None, 9]
    assert [getattr(e, "sequence_number", None) for e in events] == [8, 6, 9, 10]


def test_the_flow_skips_unknown_types_and_ends_on_stream_error() -> None:
    error = b'event: error\ndata: {"error":{"code":"stream_error","message":"boom"}}\n\n'
    with pytest.raises(APIError) as raised:
        drive([[record(1, "node.future_thing"), record(2), error]])
    assert (raised.value.code, raised.value.message) == ("stream_error", "boom")
    with pytest.raises(APIError) as invalid:
        drive([[b"id: 1\nevent: node.turn.started\ndata: [1]\n\n"]])
    assert invalid.value.code == "invalid_event"


def test_the_flow_gives_up_after_its_budget_with_the_last_error() -> None:
    dropped = b'event: error\ndata: {"error":{"code":"stream_dropped","message":"slow"}}\n\n'
    with pytest.raises(APIError) as raised:
        drive([[record(1), dropped], [dropped], [dropped]], attempts=2)
    assert raised.value.code == "stream_dropped"
    with pytest.raises(APIConnectionError):
        drive([APIConnectionError("refused")] * 3, attempts=2)
