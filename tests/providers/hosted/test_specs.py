"""Hosted providers chosen by spec: ``from_spec`` and ``heron run --provider`` with a key set.

The CLI runs in-process (Typer's runner) against the replay server, with the key
and base-URL variables a user would set.
"""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

from heron.cli import app
from heron.providers import (
    AnthropicProvider,
    DeepSeekProvider,
    OllamaProvider,
    OpenAIProvider,
    from_spec,
)

HOSTED_VARIABLES = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "DEEPSEEK_API_KEY",
    "DEEPSEEK_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OLLAMA_HOST",
    "HERON_PROVIDER",
)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in HOSTED_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    ("spec", "variable", "kind", "model"),
    [
        ("openai", "OPENAI_API_KEY", OpenAIProvider, "gpt-5"),
        ("openai:gpt-5-mini", "OPENAI_API_KEY", OpenAIProvider, "gpt-5-mini"),
        ("deepseek", "DEEPSEEK_API_KEY", DeepSeekProvider, "deepseek-v4-flash"),
        ("anthropic:claude-sonnet-5", "ANTHROPIC_API_KEY", AnthropicProvider, "claude-sonnet-5"),
    ],
)
def test_a_hosted_spec_with_its_key_builds_the_provider(
    monkeypatch: pytest.MonkeyPatch, spec: str, variable: str, kind: type, model: str
) -> None:
    monkeypatch.setenv(variable, "sk-test")
    provider = from_spec(spec)
    assert isinstance(provider, kind)
    assert provider.model == model  # type: ignore[attr-defined]


def test_ollama_keeps_the_model_tag_and_reads_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")
    provider = from_spec("ollama:qwen3:8b")
    assert isinstance(provider, OllamaProvider)
    assert (provider.model, provider.host) == ("qwen3:8b", "http://127.0.0.1:9")
    assert provider.capabilities.supports_tools  # agents need it; the spec names an agent model


def _run(*args: str) -> Any:
    return CliRunner().invoke(app, ["run", "Hi", *args], catch_exceptions=False)


@pytest.mark.parametrize(
    ("spec", "variables", "canned", "path", "reply"),
    [
        (
            "openai:gpt-5",
            {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "{base}/v1"},
            ("sse", "openai_text.sse"),
            "/v1/chat/completions",
            "Hello",
        ),
        (
            "deepseek:deepseek-v4-flash",
            {"DEEPSEEK_API_KEY": "sk-test", "DEEPSEEK_BASE_URL": "{base}"},
            ("sse", "deepseek_reasoning_text.sse"),
            "/chat/completions",
            "It is 12:00.",
        ),
        (
            "anthropic:claude-sonnet-5",
            {"ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": "{base}"},
            ("sse", "anthropic_text.sse"),
            "/v1/messages",
            "Sunny in both.",
        ),
        (
            "ollama:llava",
            {"OLLAMA_HOST": "{base}"},
            ("ndjson", "ollama_text.ndjson"),
            "/api/chat",
            "A red square.",
        ),
    ],
)
def test_heron_run_on_a_hosted_provider(
    wire: Any,
    monkeypatch: pytest.MonkeyPatch,
    spec: str,
    variables: dict[str, str],
    canned: tuple[str, str],
    path: str,
    reply: str,
) -> None:
    for name, value in variables.items():
        monkeypatch.setenv(name, value.format(base=wire.base_url))
    builder, fixture_name = canned
    wire.reply(getattr(wire, builder)(fixture_name))
    done = _run("--provider", spec)
    assert done.exit_code == 0, done.output
    assert reply in done.stdout
    assert "tokens " in done.stdout.splitlines()[-1]
    [request] = wire.requests
    assert request.path == path
    sent = request.json
    assert sent["model"] == spec.split(":", 1)[1]
    assert any(t.get("function", t).get("name") == "get-current-time" for t in sent["tools"])
    if "API_KEY" in next(iter(variables)):
        auth = request.headers.get("authorization") or request.headers.get("x-api-key", "")
        assert "sk-test" in auth


def test_heron_run_reports_a_provider_fault_in_one_line(
    wire: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", f"{wire.base_url}/v1")
    wire.reply(wire.body({"error": {"message": "bad key", "code": "invalid_api_key"}}, status=401))
    done = _run("--provider", "openai")
    assert done.exit_code == 1
    assert done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("heron: error: ") and "401" in line and "bad key" in line
