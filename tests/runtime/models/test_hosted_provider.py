"""A node on a hosted provider: what actually reaches the model over the wire."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
from tests.support.daemon import Daemon, wait_settled, write_script
from tests.support.models import fake_openai

pytestmark = pytest.mark.slow


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
