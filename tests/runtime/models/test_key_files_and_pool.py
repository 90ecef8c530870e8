"""The pieces under ``/v1/model-auth``: the private files, ``from_spec``'s handed-over keys
and the provider pool's rebuild on a new key (no daemon needed)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from heron import UserError
from heron.providers import from_spec
from heron.runtime.models._credentials import (
    Credential,
    load_credentials,
    load_model_config,
    save_credentials,
    save_model_config,
    write_private,
)
from heron.runtime.models._providers import ProviderPool
from heron.runtime.server._errors import DaemonError

KEY = "sk-unit-0123456789abcdef"
HOSTED = {"openai": "OPENAI", "anthropic": "ANTHROPIC", "deepseek": "DEEPSEEK"}


@pytest.fixture
def loose_umask() -> Iterator[None]:
    """A umask that would leave a plain new file readable by everyone."""
    old = os.umask(0o000)
    try:
        yield
    finally:
        os.umask(old)


def test_written_files_are_private_from_the_start_and_replace_atomically(
    tmp_path: Path, loose_umask: None
) -> None:
    home = tmp_path / "home"
    save_credentials(home, {"openai": Credential(KEY, None, 1.0)})
    file = home / "credentials.json"
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    save_credentials(home, {"anthropic": Credential("sk-other", "https://x.test", 2.0)})
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    assert load_credentials(home) == {"anthropic": Credential("sk-other", "https://x.test", 2.0)}
    assert sorted(p.name for p in home.iterdir()) == ["credentials.json"]  # no temp file left

    save_model_config(home, "openai:gpt-5", 3.0)
    assert stat.S_IMODE((home / "model-config.json").stat().st_mode) == 0o600
    assert load_model_config(home) == {"default_model": "openai:gpt-5", "updated_at": 3.0}


def test_a_failed_write_leaves_the_old_file_and_no_temp(tmp_path: Path) -> None:
    save_credentials(tmp_path, {"openai": Credential(KEY, None, 1.0)})
    with pytest.raises(TypeError):
        write_private(tmp_path / "credentials.json", {"not": object()})
    assert load_credentials(tmp_path)["openai"].api_key == KEY
    assert sorted(p.name for p in tmp_path.iterdir()) == ["credentials.json"]


def test_no_files_mean_nothing_installed_or_set(tmp_path: Path) -> None:
    assert load_credentials(tmp_path) == {}
    assert load_model_config(tmp_path) == {}


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"version": 1, "credentials": {"openai": "' + KEY, "not valid JSON"),
        (f'["{KEY}"]', "not a version-1 Heron file"),
        ('{"version": 1}', "no 'credentials' object"),
        ('{"version": 1, "credentials": {"openai": {"api_key": "' + KEY + '"}}}', "malformed"),
        (b"\xff\xfe".decode("latin-1"), "not valid JSON"),
    ],
)
def test_a_damaged_file_is_refused_without_quoting_it(
    tmp_path: Path, text: str, reason: str
) -> None:
    (tmp_path / "credentials.json").write_text(text, encoding="latin-1")
    with pytest.raises(DaemonError, match=reason) as refused:
        load_credentials(tmp_path)
    assert KEY not in str(refused.value)


def test_a_file_readable_by_others_is_made_private(tmp_path: Path) -> None:
    save_credentials(tmp_path, {"openai": Credential(KEY, None, 1.0)})
    os.chmod(tmp_path / "credentials.json", 0o644)
    assert load_credentials(tmp_path)["openai"].api_key == KEY
    assert stat.S_IMODE((tmp_path / "credentials.json").stat().st_mode) == 0o600


def test_a_credential_never_shows_its_key() -> None:
    assert KEY not in repr(Credential(KEY, "https://x.test", 1.0))


@pytest.mark.parametrize("kind", sorted(HOSTED))
def test_a_handed_over_key_wins_over_the_environment(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    vendor = HOSTED[kind]
    monkeypatch.setenv(f"{vendor}_API_KEY", "sk-from-the-environment")
    monkeypatch.setenv(f"{vendor}_BASE_URL", "https://environment.test/v1")
    provider = from_spec(kind, api_key=KEY, base_url="https://installed.test/v1")
    assert provider._api_key == KEY  # type: ignore[attr-defined]
    assert provider.base_url == "https://installed.test/v1"  # type: ignore[attr-defined]
    # Without a base URL of its own, the environment's still applies.
    assert from_spec(kind, api_key=KEY).base_url == "https://environment.test/v1"  # type: ignore[attr-defined]
    monkeypatch.delenv(f"{vendor}_API_KEY")
    assert from_spec(kind, api_key=KEY)._api_key == KEY  # type: ignore[attr-defined]
    with pytest.raises(UserError, match=f"set {vendor}_API_KEY"):
        from_spec(kind, api_key="  ")


@pytest.mark.parametrize("spec", ["local", "scripted:x.json", "ollama:qwen3"])
def test_only_hosted_providers_take_a_key(spec: str) -> None:
    with pytest.raises(UserError, match="takes no API key"):
        from_spec(spec, api_key=KEY)


async def test_the_pool_rebuilds_a_kind_when_its_key_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-anthropic-environment")
    pool = ProviderPool("openai:gpt-5")
    with pytest.raises(UserError, match="OPENAI_API_KEY"):
        await pool.prepare(None)
    pool.install("openai", Credential(KEY, None, 1.0))
    await pool.prepare(None)
    first = pool.get(None)
    assert first._api_key == KEY and pool.get("openai:gpt-5") is first  # type: ignore[attr-defined]
    other = pool.get("anthropic:claude-sonnet-5")

    pool.install("openai", Credential("sk-new", None, 2.0))
    second = pool.get(None)
    assert second is not first and second._api_key == "sk-new"  # type: ignore[attr-defined]
    assert pool.get("anthropic:claude-sonnet-5") is other  # another kind is left alone

    pool.install("openai", None)
    with pytest.raises(UserError, match="OPENAI_API_KEY"):
        pool.get(None)
    await pool.aclose()  # closes the retired ones too
