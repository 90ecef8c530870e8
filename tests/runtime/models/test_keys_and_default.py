"""Models on a real daemon: installed API keys (``/v1/model-auth``) and the default model
(``/v1/model-config``). A key reaches the model server and nothing else: no answer of
the session, nor the daemon's log, holds it."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.daemon import wait_settled, write_script
from tests.support.models import (
    KEY,
    OTHER_KEY,
    OpenAIHandler,
    Recorder,
    fake_openai,
    keyless_daemon,
    provider_entry,
)

pytestmark = pytest.mark.slow

ENV_KEY = "sk-environment-1234567890abcdef"


class _Recording(OpenAIHandler):
    """The recorded OpenAI stream for every request, keeping its ``Authorization`` header."""

    def do_POST(self) -> None:
        self.server.authorizations.append(self.headers.get("authorization"))  # type: ignore[attr-defined]
        super().do_POST()


@pytest.fixture
def model_server() -> Iterator[ThreadingHTTPServer]:
    """A fake OpenAI endpoint on loopback; ``authorizations`` lists what each request sent."""
    with fake_openai() as server:
        server.RequestHandlerClass = _Recording  # each request is handled by a new one
        server.authorizations = []  # type: ignore[attr-defined]
        yield server


def _url(server: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}/v1"


def _readiness(client: httpx.Client, name: str) -> dict[str, Any]:
    providers = client.get("/v1/model-auth/readiness").json()["providers"]
    return provider_entry(providers, name)


def _run_on(client: httpx.Client, model: str | None) -> dict[str, Any]:
    response = client.post("/v1/nodes", json={"prompt": "Say hello.", "model": model})
    assert response.status_code == 201, response.text
    return wait_settled(client, response.json()["node_id"])


def test_an_installed_key_reaches_the_model_and_nothing_else(
    tmp_path: Path, model_server: ThreadingHTTPServer
) -> None:
    recorder = Recorder()
    default = write_script(tmp_path, "d", ["unused"])
    daemon = keyless_daemon(tmp_path / "home", HERON_PROVIDER=default).start()
    try:
        with recorder.client(daemon) as client:
            openai = provider_entry(client.get("/v1/model-auth").json(), "openai")
            assert openai == {
                "provider": "openai",
                "installed": False,
                "source": None,
                "base_url": None,
                "installed_at": None,
            }
            assert _readiness(client, "openai")["ready"] is False
            refused = client.post("/v1/nodes", json={"prompt": "hi", "model": "openai:gpt-5"})
            assert refused.status_code == 422 and "OPENAI_API_KEY" in refused.text

            url = _url(model_server)
            installed = client.put("/v1/model-auth/openai", json={"api_key": KEY, "base_url": url})
            assert installed.status_code == 200, installed.text
            body = installed.json()
            assert (body["installed"], body["source"], body["base_url"]) == (True, "installed", url)
            assert body["installed_at"] is not None
            listed = provider_entry(client.get("/v1/model-auth").json(), "openai")
            assert listed["installed"] is True and listed["source"] == "installed"
            assert _readiness(client, "openai")["ready"] is True

            file = daemon.home / "credentials.json"
            assert stat.S_IMODE(file.stat().st_mode) == 0o600
            assert stat.S_IMODE(daemon.home.stat().st_mode) == 0o700
            assert KEY in file.read_text()  # stored as is, for the daemon alone

            poll = _run_on(client, "openai:gpt-5")
            assert poll["outcome"]["output_text"] == "Hello there!"
            assert model_server.authorizations == [f"Bearer {KEY}"]  # type: ignore[attr-defined]

            # Replacing it rebuilds the provider already built with the old key.
            replaced = client.put(
                "/v1/model-auth/openai", json={"api_key": OTHER_KEY, "base_url": url}
            )
            assert replaced.status_code == 200
            _run_on(client, "openai:gpt-5")
            assert model_server.authorizations[-1] == f"Bearer {OTHER_KEY}"  # type: ignore[attr-defined]
            client.get(f"/v1/nodes/{poll['node_id']}")
            client.get("/v1/status")
            client.get("/v1/model-config")

        daemon.stop()
        # The installed key is kept across a restart, and lets a daemon whose
        # environment has no key start on a hosted default.
        daemon.env["HERON_PROVIDER"] = "openai:gpt-5"
        daemon.start()
        with recorder.client(daemon) as client:
            assert _readiness(client, "openai")["ready"] is True
            assert client.get("/v1/model-auth/readiness").json()["default_ready"] is True
            _run_on(client, "openai:gpt-5")
            assert model_server.authorizations[-1] == f"Bearer {OTHER_KEY}"  # type: ignore[attr-defined]

            removed = client.delete("/v1/model-auth/openai")
            assert removed.status_code == 200
            assert (removed.json()["installed"], removed.json()["source"]) == (False, None)
            assert _readiness(client, "openai")["ready"] is False
            again = client.delete("/v1/model-auth/openai")
            assert again.status_code == 404
            assert again.json()["error"]["code"] == "credential_not_found"
            refused = client.post("/v1/nodes", json={"prompt": "hi", "model": "openai:gpt-5"})
            assert refused.status_code == 422
            assert "heron models credentials install openai" in refused.json()["error"]["message"]
            assert OTHER_KEY not in file.read_text() and KEY not in file.read_text()
            _bad_installs(client)
    finally:
        daemon.stop()
    recorder.assert_never_shown(KEY, OTHER_KEY)
    log = daemon.log.read_text()
    assert KEY not in log and OTHER_KEY not in log


def _bad_installs(client: httpx.Client) -> None:
    """Every refusal of an install: a stable code, and nothing installed."""

    def code(response: httpx.Response, status: int) -> str:
        assert response.status_code == status, response.text
        return str(response.json()["error"]["code"])

    put = client.put
    assert code(put("/v1/model-auth/nope", json={"api_key": KEY}), 404) == "unknown_provider"
    assert code(put("/v1/model-auth/ollama", json={"api_key": KEY}), 404) == "unknown_provider"
    assert code(client.delete("/v1/model-auth/local"), 404) == "unknown_provider"
    for body in (
        {"api_key": KEY, "extra": 1},
        {"api_key": 12345},
        {"api_key": ""},
        {"key": KEY},
        {"api_key": KEY, "base_url": 5},
        [KEY],
    ):
        assert code(put("/v1/model-auth/openai", json=body), 422) == "invalid_request"
    for key in (f"{KEY} trailing", f"{KEY}\n", "sk-\u00e9t\u00e9"):
        response = put("/v1/model-auth/openai", json={"api_key": key})
        assert code(response, 422) == "invalid_api_key"
    for url in ("ftp://example.com", "not a url", "http://user:pw@example.com/v1", "http://"):
        response = put("/v1/model-auth/openai", json={"api_key": KEY, "base_url": url})
        assert code(response, 422) == "invalid_base_url"
        assert "pw" not in response.text
    raw = put(
        "/v1/model-auth/openai",
        content=f'{{"api_key": "{KEY}"',
        headers={"content-type": "application/json"},
    )
    assert code(raw, 400) == "malformed_json"
    plain = put("/v1/model-auth/openai", content=KEY, headers={"content-type": "text/plain"})
    assert code(plain, 415) == "unsupported_media_type"
    assert provider_entry(client.get("/v1/model-auth").json(), "openai")["installed"] is False


def test_an_installed_key_wins_over_the_environment(
    tmp_path: Path, model_server: ThreadingHTTPServer
) -> None:
    url = _url(model_server)
    recorder = Recorder()
    daemon = keyless_daemon(
        tmp_path / "home",
        HERON_PROVIDER="openai:gpt-5",  # ready from the environment's key
        OPENAI_API_KEY=ENV_KEY,
        OPENAI_BASE_URL=url,
    ).start()
    try:
        with recorder.client(daemon) as client:
            state = provider_entry(client.get("/v1/model-auth").json(), "openai")
            assert (state["installed"], state["source"], state["base_url"]) == (
                False,
                "environment",
                url,
            )
            _run_on(client, "openai:gpt-5")
            assert model_server.authorizations == [f"Bearer {ENV_KEY}"]  # type: ignore[attr-defined]

            installed = client.put("/v1/model-auth/openai", json={"api_key": KEY}).json()
            assert installed["source"] == "installed" and installed["base_url"] == url
            _run_on(client, None)  # the default: openai too
            assert model_server.authorizations[-1] == f"Bearer {KEY}"  # type: ignore[attr-defined]
            readiness = client.get("/v1/model-auth/readiness").json()
            assert readiness["default_ready"] is True
            assert "installed" in readiness["default_detail"]

            after = client.delete("/v1/model-auth/openai").json()
            assert (after["installed"], after["source"]) == (False, "environment")
            _run_on(client, "openai:gpt-5")
            assert model_server.authorizations[-1] == f"Bearer {ENV_KEY}"  # type: ignore[attr-defined]
            gone = client.delete("/v1/model-auth/openai")
            assert gone.status_code == 404 and "OPENAI_API_KEY" in gone.json()["error"]["message"]
    finally:
        daemon.stop()
    recorder.assert_never_shown(KEY)


def test_the_default_model_is_set_validated_and_kept_across_restarts(tmp_path: Path) -> None:
    env_default = write_script(tmp_path, "env", ["From the environment's default."])
    api_default = write_script(tmp_path, "api", ["From the API's default."])
    daemon = keyless_daemon(tmp_path / "home", HERON_PROVIDER=env_default).start()
    try:
        with daemon.client() as client:
            config = client.get("/v1/model-config").json()
            assert config["default_model"] is None and config["updated_at"] is None
            assert (config["effective_default"], config["source"]) == (env_default, "environment")
            assert config["ready"] is True

            set_ = client.put("/v1/model-config", json={"default_model": api_default})
            assert set_.status_code == 200, set_.text
            config = set_.json()
            assert (config["default_model"], config["effective_default"]) == (api_default,) * 2
            assert config["source"] == "config" and config["ready"] is True
            assert config["updated_at"] is not None
            assert client.get("/v1/status").json()["provider"] == api_default
            assert client.get("/v1/model-auth/readiness").json()["default_provider"] == api_default
            poll = _run_on(client, None)
            assert poll["outcome"]["output_text"] == "From the API's default."
            # An empty update changes nothing.
            assert client.put("/v1/model-config", json={}).json()["default_model"] == api_default
            _bad_configs(client, tmp_path)
            assert client.get("/v1/model-config").json()["default_model"] == api_default

        file = daemon.home / "model-config.json"
        assert stat.S_IMODE(file.stat().st_mode) == 0o600
        daemon.stop()
        daemon.start()  # HERON_PROVIDER still names the other script: the API's wins
        with daemon.client() as client:
            config = client.get("/v1/model-config").json()
            assert (config["effective_default"], config["source"]) == (api_default, "config")
            poll = _run_on(client, None)
            assert poll["outcome"]["output_text"] == "From the API's default."

            # A default whose key is missing is accepted, and said not to be ready ...
            hosted = client.put("/v1/model-config", json={"default_model": "deepseek:chat"})
            assert hosted.status_code == 200
            assert hosted.json()["ready"] is False
            assert "DEEPSEEK_API_KEY" in hosted.json()["detail"]
        daemon.stop()
        daemon.start()  # ... and does not keep the daemon from starting
        with daemon.client() as client:
            readiness = client.get("/v1/model-auth/readiness").json()
            assert readiness["default_provider"] == "deepseek:chat"
            assert readiness["default_ready"] is False
            client.put("/v1/model-auth/deepseek", json={"api_key": KEY})
            assert client.get("/v1/model-config").json()["ready"] is True
            cleared = client.put("/v1/model-config", json={"default_model": None}).json()
            assert (cleared["default_model"], cleared["effective_default"]) == (None, env_default)
            assert cleared["source"] == "environment"
            poll = _run_on(client, None)
            assert poll["outcome"]["output_text"] == "From the environment's default."
    finally:
        daemon.stop()
    assert json.loads(file.read_text())["default_model"] is None


def _bad_configs(client: httpx.Client, tmp_path: Path) -> None:
    def code(body: Any) -> tuple[int, str]:
        response = client.put("/v1/model-config", json=body)
        return response.status_code, response.json()["error"]["code"]

    assert code({"default_model": "nonsense:x"}) == (422, "invalid_model")
    assert code({"default_model": "ollama"}) == (422, "invalid_model")
    assert code({"default_model": "scripted:"}) == (422, "invalid_model")
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    assert code({"default_model": f"scripted:{broken}"}) == (422, "invalid_model")
    assert code({"default_model": 5}) == (422, "invalid_request")
    assert code({"default_model": ""}) == (422, "invalid_request")
    assert code({"model": "local"}) == (422, "invalid_request")


def test_a_damaged_credentials_file_stops_the_daemon_without_quoting_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "credentials.json").write_text('{"version": 1, "credentials": {"openai": "' + KEY)
    daemon = keyless_daemon(home, HERON_PROVIDER=write_script(tmp_path, "d", ["unused"]))
    with pytest.raises(RuntimeError, match="exited at startup") as failed:
        daemon.start()
    assert "credentials.json is not valid JSON" in str(failed.value)
    assert KEY not in str(failed.value)
    assert os.path.exists(home / "credentials.json")  # nothing lost: the user fixes it
