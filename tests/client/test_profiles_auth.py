"""``client.profiles`` and ``client.auth`` (with the daemon's model-auth readiness route)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.daemon import Daemon, write_script

from heron import api
from heron.client import (
    AsyncHeron,
    AuthenticationError,
    AuthStatus,
    Heron,
    NotFoundError,
    UnprocessableEntityError,
)

from ._both import MODES, On, on_client

TOKEN = "auth-test-token-0123456789"
SECRET = "sk-never-shown-0123456789"


@pytest.fixture(params=MODES)
async def on(request: pytest.FixtureRequest, daemon: Daemon) -> AsyncIterator[On]:
    async with on_client(request.param, daemon) as client:
        yield client


async def test_ensure_creates_then_updates_and_retrieve_reads(on: On) -> None:
    name = f"app-{on.mode}"
    created = await on(lambda c: c.profiles.ensure(name, description="my app"))
    assert isinstance(created, api.Profile)
    assert created.name == name and created.created is True and created.description == "my app"
    again = await on(lambda c: c.profiles.ensure(name, default_kind="general"))
    assert again.created is False
    assert again.description == "my app" and again.default_kind == "general"
    cleared = await on(lambda c: c.profiles.ensure(name, description=None))
    assert cleared.description is None and cleared.default_kind == "general"
    read = await on(lambda c: c.profiles.retrieve(name))
    assert read.name == name and read.created is False and read.default_kind == "general"
    assert (await on(lambda c: c.profiles.retrieve("default"))).name == "default"


async def test_profile_refusals(on: On) -> None:
    with pytest.raises(NotFoundError):
        await on(lambda c: c.profiles.retrieve("no-such-profile"))
    with pytest.raises(UnprocessableEntityError):
        await on(lambda c: c.profiles.ensure("p", default_kind="no-such-kind"))
    with pytest.raises(TypeError, match="invalid profile name"):
        await on(lambda c: c.profiles.ensure("bad name"))


async def test_nodes_run_under_an_ensured_profile(on: On, scripts: Any) -> None:
    name = f"runner-{on.mode}"
    model = scripts("profiled", ["ok"])
    await on(lambda c: c.profiles.ensure(name, default_model=model))
    node = await on(lambda c: c.nodes.create(prompt="x", profile=name))
    assert node.profile == name and node.model == model


# -- auth ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """A daemon with an OpenAI key and an Ollama host set, no other key, and TCP on."""
    base = tmp_path_factory.mktemp("heron-auth")
    default = write_script(base, "default", ["ok"])
    env = {
        "HERON_PROVIDER": default,
        "HERON_TOKEN": TOKEN,
        "OPENAI_API_KEY": SECRET,
        "ANTHROPIC_API_KEY": "",
        "DEEPSEEK_API_KEY": "  ",
        "OLLAMA_HOST": "http://someone:hunter2@127.0.0.1:11434",
        "HERON_LOCAL_MODEL": str(base / "missing.gguf"),
    }
    daemon = Daemon(base / "home", env)
    daemon.start("--listen", "127.0.0.1:0")
    try:
        yield daemon
    finally:
        daemon.stop()


def tcp_url(daemon: Daemon) -> str:
    with Heron(socket_path=daemon.socket, auto_start=False) as client:
        (tcp,) = [item for item in client.system.status().listeners if item.kind == "tcp"]
    return f"http://{tcp.address}"


def check_models(status: AuthStatus) -> None:
    models = status.models
    by_kind = {p.provider: p for p in models.providers}
    assert list(by_kind) == ["local", "openai", "anthropic", "deepseek", "ollama", "scripted"]
    assert by_kind["openai"].ready and "OPENAI_API_KEY" in by_kind["openai"].detail
    assert not by_kind["anthropic"].ready and "ANTHROPIC_API_KEY" in by_kind["anthropic"].detail
    assert not by_kind["deepseek"].ready
    assert by_kind["ollama"].ready and "127.0.0.1:11434" in by_kind["ollama"].detail
    assert not by_kind["local"].ready and "missing.gguf" in by_kind["local"].detail
    assert by_kind["scripted"].ready
    assert models.default_provider.startswith("scripted:") and models.default_ready
    shown = status.model_dump_json()
    assert SECRET not in shown and "hunter2" not in shown
    assert {(item.kind, item.auth) for item in status.listeners} == {
        ("unix", "filesystem"),
        ("tcp", "bearer"),
    }


async def test_auth_status_over_the_socket_and_over_tcp(keyed: Daemon) -> None:
    with Heron(socket_path=keyed.socket, auto_start=False) as sync:
        status = await asyncio.to_thread(sync.auth.status)
        assert status.method == "filesystem" and status.address == f"unix:{keyed.socket}"
        assert status.version == (await asyncio.to_thread(sync.system.health)).version
        check_models(status)
    url = await asyncio.to_thread(tcp_url, keyed)
    async with AsyncHeron(base_url=url, token=TOKEN) as client:
        remote = await client.auth.status()
        assert remote.method == "bearer" and remote.address == url
        check_models(remote)
    async with AsyncHeron(base_url=url, token="wrong-token-0123456789") as client:
        with pytest.raises(AuthenticationError):
            await client.auth.status()


async def test_a_default_provider_that_is_not_ready_says_why(
    on: On, keyed: Daemon, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The route's answer for a default spec the daemon cannot use (read as the
    # daemon reads them: a bad script path is known only once a node uses it).
    status = await on(lambda c: c.auth.status())
    assert status.models.default_ready is True
    from heron.runtime.models._readiness import readiness

    missing = readiness(f"scripted:{tmp_path / 'gone.json'}")
    assert not missing.default_ready and "gone.json" in missing.default_detail
    assert not readiness("ollama:").default_ready
    # Without OLLAMA_HOST the provider uses Ollama's default address: still usable.
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    local = readiness("ollama:qwen3")
    assert local.default_ready and "localhost:11434" in local.default_detail
    assert not readiness("nonsense:x").default_ready
