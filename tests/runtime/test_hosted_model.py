"""A node on a hosted provider: what actually reaches the model over the wire."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from .conftest import Daemon, wait_settled, write_script

pytestmark = pytest.mark.slow

FIXTURE = Path(__file__).parents[1] / "providers" / "hosted" / "fixtures" / "openai_text.sse"


class _OpenAI(BaseHTTPRequestHandler):
    """Answers every chat completion with the recorded OpenAI stream; keeps the requests
    (their bodies in ``requests``, their paths with any query in ``paths``)."""

    requests: list[Any]

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", 0))
        self.server.requests.append(json.loads(self.rfile.read(length)))  # type: ignore[attr-defined]
        self.server.paths.append(self.path)  # type: ignore[attr-defined]
        body = FIXTURE.read_bytes()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet


@contextlib.contextmanager
def fake_openai() -> Iterator[ThreadingHTTPServer]:
    """A fake OpenAI endpoint on loopback; its ``requests`` are those it answered."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _OpenAI)
    server.requests = []  # type: ignore[attr-defined]
    server.paths = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def openai_server() -> Iterator[ThreadingHTTPServer]:
    with fake_openai() as server:
        yield server


def test_situational_context_reaches_the_model_but_not_the_prompt(
    tmp_path: Path, openai_server: ThreadingHTTPServer
) -> None:
    port = openai_server.server_address[1]
    env = {
        "HERON_PROVIDER": write_script(tmp_path, "default", ["unused"]),
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
    }
    daemon = Daemon(tmp_path / "home", env).start()
    try:
        with daemon.client() as client:
            node = client.post(
                "/v1/nodes",
                json={
                    "prompt": "Say hello.",
                    "situational_context": "The user is on call tonight.",
                    "model": "openai:gpt-5",
                },
            ).json()
            poll = wait_settled(client, node["node_id"])
            assert poll["outcome"]["output_text"] == "Hello there!"
            done = client.get(f"/v1/nodes/{node['node_id']}").json()
            assert (done["input_tokens"], done["output_tokens"]) == (19, 3)
    finally:
        daemon.stop()
    (request,) = openai_server.requests  # type: ignore[attr-defined]
    assert request["model"] == "gpt-5"
    system = [m for m in request["messages"] if m["role"] in ("system", "developer")]
    users = [m for m in request["messages"] if m["role"] == "user"]
    assert "The user is on call tonight." in json.dumps(system)
    assert users == [{"role": "user", "content": "Say hello."}]
