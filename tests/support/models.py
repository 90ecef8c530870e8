"""Model tests' helpers: a fake OpenAI server, installed keys, and a daemon with no key."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from .daemon import Daemon, write_script


class OpenAIHandler(BaseHTTPRequestHandler):
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
    server = ThreadingHTTPServer(("127.0.0.1", 0), OpenAIHandler)
    server.requests = []  # type: ignore[attr-defined]
    server.paths = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


# Tails that are not hex: a check for a key's last characters must not match a node id.
KEY = "sk-installed-0f1e2d3c4b5a6978qWzXkY"


OTHER_KEY = "sk-replaced-99aa88bb77cc66ddRmQsVt"


def keyless_daemon(home: Path, **env: str) -> Daemon:
    """A daemon (not started) whose environment holds no provider key but those given."""
    daemon = Daemon(home, env)
    for name in KEY_VARIABLES:
        if name not in env:
            daemon.env.pop(name, None)
    return daemon


class Recorder:
    """Keeps the body of every answer a client received (to look for keys in them)."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    def __call__(self, response: httpx.Response) -> None:
        response.read()
        self.bodies.append(response.content)

    def client(self, daemon: Daemon) -> httpx.Client:
        client = daemon.client()
        client.event_hooks["response"].append(self)
        return client

    def assert_never_shown(self, *keys: str) -> None:
        assert self.bodies
        for key in keys:
            for part in (key, key[-4:], key[-6:], key[3:]):
                assert not any(part.encode() in body for body in self.bodies), part


def provider_entry(body: list[dict[str, Any]], name: str) -> dict[str, Any]:
    """The provider ``name``'s entry of a ``/v1/model-auth`` listing."""
    (found,) = [item for item in body if item["provider"] == name]
    return found


FIXTURE = Path(__file__).parents[1] / "providers" / "hosted" / "fixtures" / "openai_text.sse"


KEY_VARIABLES = tuple(
    f"{vendor}_{what}"
    for vendor in ("OPENAI", "ANTHROPIC", "DEEPSEEK")
    for what in ("API_KEY", "BASE_URL")
)
"""The environment variables that give a daemon a hosted provider's key or endpoint."""


@pytest.fixture(scope="module", name="daemon")
def keyless_shared_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """``daemon`` for a module that imports this: shared by the module, its environment
    holding no provider key (so every source of a key is known)."""
    home = tmp_path_factory.mktemp("heron-models")
    process = keyless_daemon(home, HERON_PROVIDER=write_script(home, "default", ["Default."]))
    process.start()
    try:
        yield process
    finally:
        process.stop()
