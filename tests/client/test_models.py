"""``client.models``: credentials and the default model, through both clients."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.daemon import Daemon, write_script
from tests.support.models import keyless_shared_daemon

from heron import api
from heron.client import NotFoundError, UnprocessableEntityError

from ._both import MODES, On, on_client

__all__ = ["keyless_shared_daemon"]  # the module's daemon: no provider key in its environment

SECRET = "sk-client-test-5f4e3d2c1b0a99887766"


@pytest.fixture(params=MODES)
async def on(request: pytest.FixtureRequest, daemon: Daemon) -> AsyncIterator[On]:
    async with on_client(request.param, daemon) as client:
        yield client


async def test_install_list_and_remove(on: On) -> None:
    # Each client works on its own provider: the daemon is shared by the module.
    provider = "anthropic" if on.mode == "sync" else "deepseek"
    installed = await on(
        lambda c: c.models.credentials.install(
            provider, api_key=f"  {SECRET}\n", base_url="https://proxy.example/v1"
        )
    )
    assert isinstance(installed, api.ModelCredential)
    assert (installed.provider, installed.installed, installed.source) == (
        provider,
        True,
        "installed",
    )
    assert installed.base_url == "https://proxy.example/v1" and installed.installed_at is not None
    assert SECRET not in installed.model_dump_json()

    listed = await on(lambda c: c.models.credentials.list())
    assert [item.provider for item in listed] == list(api.CREDENTIAL_PROVIDERS)
    mine = next(item for item in listed if item.provider == provider)
    assert mine.installed and mine.source == "installed"
    status = await on(lambda c: c.auth.status())
    ready = {item.provider: item.ready for item in status.models.providers}
    assert ready[provider] is True

    removed = await on(lambda c: c.models.credentials.remove(provider))
    assert (removed.installed, removed.source, removed.installed_at) == (False, None, None)
    with pytest.raises(NotFoundError) as missing:
        await on(lambda c: c.models.credentials.remove(provider))
    assert missing.value.code == "credential_not_found"
    status = await on(lambda c: c.auth.status())
    assert {item.provider: item.ready for item in status.models.providers}[provider] is False


async def test_refused_locally_or_by_the_daemon(on: On) -> None:
    for bad in ("ollama", "OpenAI", "", None, 3):
        with pytest.raises(TypeError, match="invalid provider"):
            await on(lambda c, bad=bad: c.models.credentials.install(bad, api_key=SECRET))
        with pytest.raises(TypeError, match="invalid provider"):
            await on(lambda c, bad=bad: c.models.credentials.remove(bad))
    with pytest.raises(ValueError, match="api_key is empty"):
        await on(lambda c: c.models.credentials.install("openai", api_key="  "))
    with pytest.raises(TypeError, match="api_key must be a string"):
        await on(lambda c: c.models.credentials.install("openai", api_key=b"sk"))
    with pytest.raises(UnprocessableEntityError) as refused:
        await on(lambda c: c.models.credentials.install("openai", api_key="sk key with spaces"))
    assert refused.value.code == "invalid_api_key" and "sk key" not in str(refused.value)
    with pytest.raises(UnprocessableEntityError) as bad_url:
        await on(
            lambda c: c.models.credentials.install("openai", api_key=SECRET, base_url="ftp://x")
        )
    assert bad_url.value.code == "invalid_base_url"
    with pytest.raises(UnprocessableEntityError) as bad_model:
        await on(lambda c: c.models.config.update(default_model="nonsense:x"))
    assert bad_model.value.code == "invalid_model"
    with pytest.raises(TypeError, match="default_model"):
        await on(lambda c: c.models.config.update(default_model=5))


async def test_config_update_and_retrieve(on: On, tmp_path: Path, daemon: Daemon) -> None:
    spec = write_script(tmp_path, f"config-{on.mode}", [f"Default of {on.mode}."])
    before = await on(lambda c: c.models.config.retrieve())
    assert isinstance(before, api.ModelConfig)
    try:
        updated = await on(lambda c: c.models.config.update(default_model=spec))
        assert (updated.default_model, updated.effective_default, updated.source) == (
            spec,
            spec,
            "config",
        )
        assert updated.ready is True
        kept = await on(lambda c: c.models.config.update())  # nothing given: nothing changes
        assert kept.default_model == spec
        outcome: Any = await on(lambda c: c.nodes.create_and_wait(prompt="Hi"))
        assert outcome.output_text == f"Default of {on.mode}."
        hosted = await on(lambda c: c.models.config.update(default_model="openai:gpt-5"))
        assert hosted.ready is False and "OPENAI_API_KEY" in hosted.detail
    finally:
        cleared = await on(lambda c: c.models.config.update(default_model=None))
    assert cleared.default_model is None and cleared.source == "environment"
    assert cleared.effective_default == before.effective_default
