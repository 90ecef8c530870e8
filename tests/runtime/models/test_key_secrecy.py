"""Keys stay secret when things go wrong: a vendor quoting a refused key back, a key
replaced while a turn uses the old one, two installs at once."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from tests.support.daemon import create, wait_settled, write_script
from tests.support.models import (
    KEY,
    OTHER_KEY,
    Recorder,
    fake_openai,
    keyless_daemon,
    provider_entry,
)

from heron import Message, ProviderError
from heron.runtime.models._credentials import REDACTED, Credential, redact
from heron.runtime.models._providers import ProviderPool

PARTS = (KEY, KEY[:8], KEY[-4:], KEY[-6:], KEY[3:], KEY[8:20])
"""A key, and the parts of it a vendor's masked copy shows (or anyone could recognise)."""


class _Refusing(BaseHTTPRequestHandler):
    """OpenAI refusing the key it got, quoting it back as vendors do (masked and not)."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        key = self.headers.get("authorization", "").removeprefix("Bearer ")
        message = (
            f"Incorrect API key provided: {key[:6]}{'*' * 24}{key[-4:]}. "
            f"Your api key: ****{key[-4:]} is invalid (sent: {key}; ends in {key[-6:]})"
        )
        body = json.dumps(
            {
                "error": {
                    "message": message,
                    "type": "invalid_request_error",
                    "code": "invalid_api_key",
                }
            }
        ).encode()
        self.send_response(401)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def refusing_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def _ignore(chunk: object) -> None:
    """Asks for a streamed answer (what the fake server sends)."""


def _assert_clean(text: str) -> None:
    for part in PARTS:
        assert part not in text, part
    assert "****" not in text


def test_redact_removes_keys_and_their_masked_copies() -> None:
    key = "sk-proj-Zq81mXv0Lr55Hb2Tt9Kc"
    said = (
        f"Incorrect API key provided: sk-pro***********9Kc. Your api key: ****Tt9Kc "
        f"is invalid; key {key} or sk-...Tt9Kc; ends in Tt9Kc. Retrying... see https://x.test"
    )
    scrubbed = redact(said, [key])
    assert "Zq81" not in scrubbed and "Tt9Kc" not in scrubbed and "***" not in scrubbed
    assert scrubbed.count(REDACTED) == 5
    assert "Retrying... see https://x.test" in scrubbed  # plain words are left alone
    assert redact("nothing secret here", [key]) == "nothing secret here"


async def test_a_refused_key_never_reaches_the_error(
    monkeypatch: pytest.MonkeyPatch, refusing_server: str
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    pool = ProviderPool("openai:gpt-5")
    pool.install("openai", Credential(KEY, refusing_server, 1.0))
    with pytest.raises(ProviderError) as refused:
        async with pool.use(None) as provider:
            await provider.chat([Message.user("hi")])
    assert refused.value.status == 401 and refused.value.code == "invalid_api_key"
    assert REDACTED in str(refused.value)
    _assert_clean(str(refused.value))
    assert refused.value.__cause__ is None and refused.value.__suppress_context__
    await pool.aclose()


async def test_a_replaced_provider_is_closed_after_its_last_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    pool = ProviderPool("openai:gpt-5")
    with fake_openai() as server:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        pool.install("openai", Credential(KEY, url, 1.0))
        async with pool.use(None) as first:
            await first.chat([Message.user("hi")], on_chunk=_ignore)
            # Replaced while a turn still uses it: kept open until that turn ends.
            assert pool.install("openai", Credential(OTHER_KEY, url, 2.0)) == []
            assert first._sdk is not None  # type: ignore[attr-defined]
        assert first._sdk is None  # type: ignore[attr-defined]
        async with pool.use(None) as second:
            assert second is not first
            await second.chat([Message.user("hi")], on_chunk=_ignore)
        # Replaced with no call on it: handed back to be closed at once (not at stop).
        assert pool.install("openai", None) == [second]
    await pool.aclose()


def test_a_refused_key_stays_out_of_outcomes_events_answers_and_the_log(
    tmp_path: Path, refusing_server: str
) -> None:
    recorder = Recorder()
    daemon = keyless_daemon(tmp_path / "home", HERON_PROVIDER=write_script(tmp_path, "d", ["x"]))
    daemon.start()
    try:
        with recorder.client(daemon) as client:
            body = {"api_key": KEY, "base_url": refusing_server}
            assert client.put("/v1/model-auth/openai", json=body).status_code == 200
            created = client.post("/v1/nodes", json={"prompt": "hi", "model": "openai:gpt-5"})
            node = created.json()["node_id"]
            poll = wait_settled(client, node)
            outcome = poll["outcome"]
            assert (outcome["kind"], outcome["reason"]) == ("failure", "provider_error")
            assert "Incorrect API key provided" in outcome["detail"]["message"]
            assert REDACTED in outcome["detail"]["message"]
            client.get(f"/v1/nodes/{node}/events", params={"after": 0})
            client.get(f"/v1/nodes/{node}")
            # A proxy's key in its URL's query is kept (and used) but never shown.
            proxy = {"api_key": KEY, "base_url": f"https://proxy.example/v1?key={KEY}"}
            shown = client.put("/v1/model-auth/anthropic", json=proxy).json()["base_url"]
            assert shown == f"https://proxy.example/v1?{REDACTED}"
            client.get("/v1/model-auth")
            assert KEY in (daemon.home / "credentials.json").read_text()
    finally:
        daemon.stop()
    recorder.assert_never_shown(KEY)
    _assert_clean(b"".join(recorder.bodies).decode())
    _assert_clean(daemon.log.read_text())


def test_a_token_in_the_base_url_query_is_sent_but_never_logged(tmp_path: Path) -> None:
    """A gateway taking its credential as ``?token=``: the query reaches it on the
    request's own path (not glued into it), and the daemon's log never shows it."""
    token = "gw-token-Qp7Lx2Vb9Ns4Hd6"
    daemon = keyless_daemon(tmp_path / "home", HERON_PROVIDER=write_script(tmp_path, "d", ["x"]))
    daemon.start()
    try:
        with fake_openai() as server, daemon.client() as client:
            port = server.server_address[1]
            body = {"api_key": KEY, "base_url": f"http://127.0.0.1:{port}/v1?token={token}"}
            assert client.put("/v1/model-auth/openai", json=body).status_code == 200
            created = create(client, prompt="Say hello.", model="openai:gpt-5")
            poll = wait_settled(client, created["node_id"])
            assert poll["outcome"]["output_text"] == "Hello there!", poll
            assert server.paths == [f"/v1/chat/completions?token={token}"]  # type: ignore[attr-defined]
    finally:
        daemon.stop()
    log = daemon.log.read_text()
    assert "/v1/chat/completions" in log  # the request is logged, its query is not
    assert token not in log and token[-6:] not in log


def test_installs_at_once_keep_every_key(tmp_path: Path) -> None:
    daemon = keyless_daemon(tmp_path / "home", HERON_PROVIDER=write_script(tmp_path, "d", ["x"]))
    daemon.start()
    providers = ("openai", "anthropic", "deepseek")
    try:
        barrier = threading.Barrier(len(providers))
        answers: dict[str, int] = {}

        def install(provider: str) -> None:
            with daemon.client() as client:
                barrier.wait()
                answer = client.put(f"/v1/model-auth/{provider}", json={"api_key": KEY})
                answers[provider] = answer.status_code

        threads = [threading.Thread(target=install, args=(p,)) for p in providers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert answers == dict.fromkeys(providers, 200)
        daemon.stop()
        daemon.start()  # what the file kept
        with daemon.client() as client:
            listed = client.get("/v1/model-auth").json()
        assert [provider_entry(listed, p)["installed"] for p in providers] == [True] * 3
    finally:
        daemon.stop()
