"""The daemon's log holds no secret and no conversation, and a stop ends open streams.

A real daemon runs a node whose prompt, tool arguments and tool results carry a
marker secret; the node is interrupted mid-turn, woken with another message
carrying it, and cancelled mid-turn; then the daemon is stopped (as ``heron
daemon stop`` does it) while a reader watches a node's event stream. Its whole log
is then searched.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import httpx
import pytest
from tests.support.daemon import Daemon, create, wait_logged, wait_status, write_script
from tests.support.sse import records, stream

from heron.runtime._local import stop_daemon
from heron.runtime.server._logging import REDACTED_QUERY, Scrub, scrubbed

pytestmark = pytest.mark.slow

MARKER = "s3cr3t-marker-Vq8Zt2"
SLOW = {"text": "still thinking", "delay": 30}


def test_no_secret_in_the_log_and_a_stop_ends_open_streams(tmp_path: Path) -> None:
    home = tmp_path / "home"
    daemon = Daemon(home, {"HERON_PROVIDER": write_script(tmp_path, "default", ["x"])})
    daemon.start()
    call = {"name": "bash-run", "arguments": {"command": f"echo {MARKER} in the output"}}
    model = write_script(tmp_path, "secret", [{"tool_calls": [call]}, SLOW, SLOW])
    ended = threading.Event()
    ended_at: list[float] = []
    opened = threading.Event()
    polled: list[httpx.Response] = []
    try:
        with daemon.client() as client:
            node = create(client, prompt=f"Keep {MARKER} safe.", model=model)["node_id"]
            wait_logged(daemon, node, "node.tool_call.completed")
            wait_logged(daemon, node, "node.turn.started", 2)  # the slow turn after the tool
            interrupted = client.post(f"/v1/nodes/{node}/interrupt")
            assert interrupted.json()["status"] == "interrupted", interrupted.text
            woken = client.post(f"/v1/nodes/{node}/messages", json={"body": f"again {MARKER}"})
            assert woken.status_code in (200, 202), woken.text
            wait_status(client, node, "running")
            wait_logged(daemon, node, "node.turn.started", 3)
            closed = client.post(f"/v1/nodes/{node}/close", json={"reason": "enough"})
            assert closed.json()["status"] == "cancelled", closed.text

            watched = create(client, prompt="wait", model=write_script(tmp_path, "w", [SLOW]))
            watched_id = watched["node_id"]
            wait_logged(daemon, watched_id, "node.turn.started")

            def read() -> None:
                with daemon.client(timeout=60) as reader, stream(reader, watched_id) as response:
                    try:
                        for _ in records(response):
                            opened.set()
                    except httpx.HTTPError:
                        pass  # the connection closed: the stream ended too
                ended_at.append(time.monotonic())
                ended.set()

            def poll() -> None:
                with daemon.client(timeout=60) as poller:
                    polled.append(poller.get(f"/v1/nodes/{watched_id}/outcome?wait=25"))

            # The poll first: it is on its way by the time the stream has sent something.
            poller = threading.Thread(target=poll, daemon=True)
            poller.start()
            threading.Thread(target=read, daemon=True).start()
            assert opened.wait(30), "the event stream sent nothing"
            # What `heron daemon stop` does (without the command's own start-up time).
            # The daemon is this process's child: reaped here as it exits, or its pid
            # would stay (a zombie) for the wait to see.
            assert daemon.process is not None
            threading.Thread(target=daemon.process.wait, daemon=True).start()
            started = time.monotonic()
            assert stop_daemon(home / "heron.pid") == daemon.process.pid
            took = time.monotonic() - started
            assert ended.wait(10), "the event stream did not end when the daemon stopped"
            stream_took = ended_at[0] - started
            poller.join(10)
            # The long poll answered (still pending) rather than being cut off.
            assert [(p.status_code, p.json()["state"]) for p in polled] == [(200, "pending")]
    finally:
        daemon.stop()
    log = daemon.log.read_text()
    assert MARKER not in log
    assert "Message(" not in log and "functools.partial" not in log
    assert "Traceback" not in log and "CancelledError" not in log, log[-3000:]
    assert "graceful shutdown exceeded" not in log
    # Reported, not asserted as a speed target: the stop used to take 6.8 s.
    print(f"stop with an open stream: stream ended {stream_took:.2f} s, daemon gone {took:.2f} s")


def test_scrubbed_keeps_names_and_drops_values() -> None:
    cancelled = (
        "Asyncio task cancelled for workflow or step functools.partial(<bound method "
        "DurableProvider._turn of <heron.runtime.nodes._durable.DurableProvider object at 0x7f>>, "
        f"[Message(role='user', text='{MARKER}')])"
    )
    assert scrubbed(cancelled) == (
        "Asyncio task cancelled for workflow or step DurableProvider._turn"
    )
    assert MARKER not in scrubbed(f"Error serializing object: {{'x': '{MARKER}'}}")
    line = f'HTTP Request: POST http://127.0.0.1:9/v1/chat/completions?token={MARKER} "200 OK"'
    assert scrubbed(line) == (
        f'HTTP Request: POST http://127.0.0.1:9/v1/chat/completions{REDACTED_QUERY} "200 OK"'
    )
    assert scrubbed("plain words? yes") == "plain words? yes"


def test_the_scrub_filter_rewrites_the_record() -> None:
    record = logging.LogRecord(
        "httpx2", logging.INFO, __file__, 1, "GET %s", (f"https://h/x?k={MARKER}",), None
    )
    assert Scrub().filter(record) is True
    assert record.getMessage() == f"GET https://h/x{REDACTED_QUERY}"
