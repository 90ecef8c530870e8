"""Choose a provider by a short spec string: ``"local"``, ``"openai:gpt-5"``, …"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

from .._core import (
    FinishReason,
    Message,
    ProviderError,
    ScriptExhaustedError,
    ToolCall,
    UserError,
)
from .._core.compaction import is_compaction_request
from ._base import Provider
from .scripted import Reply, ScriptedProvider, Step

__all__ = ["KEYED_KINDS", "PROVIDER_KINDS", "default_provider", "from_spec", "load_script"]

PROVIDER_KINDS = ("local", "openai", "deepseek", "anthropic", "ollama", "scripted")
"""The spec prefixes :func:`from_spec` understands."""

KEYED_KINDS = ("openai", "anthropic", "deepseek")
"""The hosted providers that need an API key (and take ``api_key``/``base_url``)."""


@dataclass(frozen=True, slots=True)
class _Auth:
    """A key and endpoint handed to :func:`from_spec` instead of the environment's."""

    api_key: str | None = field(default=None, repr=False)  # never in a traceback
    base_url: str | None = None


def _key(variable: str, vendor: str, given: str | None) -> str:
    """``given`` (a key handed over, e.g. installed in the daemon), else ``$variable``."""
    key = given.strip() if given is not None else os.environ.get(variable, "").strip()
    if not key:
        raise UserError(f"{vendor} needs an API key: set {variable}")
    return key


def _openai(model: str, auth: _Auth) -> Provider:
    key = _key("OPENAI_API_KEY", "OpenAI", auth.api_key)
    from .openai import OpenAIProvider

    base_url = auth.base_url or os.environ.get("OPENAI_BASE_URL") or None
    return OpenAIProvider(api_key=key, model=model or "gpt-5", base_url=base_url)


def _deepseek(model: str, auth: _Auth) -> Provider:
    key = _key("DEEPSEEK_API_KEY", "DeepSeek", auth.api_key)
    from .deepseek import DEEPSEEK_BASE_URL, DeepSeekProvider

    base_url = auth.base_url or os.environ.get("DEEPSEEK_BASE_URL") or DEEPSEEK_BASE_URL
    return DeepSeekProvider(api_key=key, model=model or "deepseek-v4-flash", base_url=base_url)


def _anthropic(model: str, auth: _Auth) -> Provider:
    key = _key("ANTHROPIC_API_KEY", "Anthropic", auth.api_key)
    from .anthropic import AnthropicProvider

    base_url = auth.base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
    return AnthropicProvider(api_key=key, model=model or "claude-sonnet-5", base_url=base_url)


def _ollama(model: str, auth: _Auth) -> Provider:
    if not model:
        raise UserError("ollama needs a model name: ollama:MODEL (e.g. ollama:qwen3)")
    from .ollama import OllamaProvider

    host = os.environ.get("OLLAMA_HOST") or "http://localhost:11434"
    # Agents need tool calling; a spec names a model to run an agent on, so it is
    # taken to support tools (Ollama answers clearly for a model that does not).
    return OllamaProvider(model=model, host=host, supports_tools=True)


def _local(path: str, auth: _Auth) -> Provider:
    from .local import LocalProvider

    return LocalProvider(path or None)


def _scripted(path: str, auth: _Auth) -> Provider:
    if not path:
        raise UserError("scripted needs a file: scripted:FILE.json")
    return ScriptedProvider(load_script(path))


_FACTORIES: Mapping[str, Callable[[str, _Auth], Provider]] = {
    "local": _local,
    "openai": _openai,
    "deepseek": _deepseek,
    "anthropic": _anthropic,
    "ollama": _ollama,
    "scripted": _scripted,
}


def from_spec(spec: str, *, api_key: str | None = None, base_url: str | None = None) -> Provider:
    """Build a provider from ``KIND[:MODEL]``.

    ``local`` (the embedded model; ``local:/path/model.gguf`` for another file),
    ``openai:gpt-5`` (``OPENAI_API_KEY``), ``deepseek:deepseek-v4-flash``
    (``DEEPSEEK_API_KEY``), ``anthropic:claude-sonnet-5`` (``ANTHROPIC_API_KEY``),
    ``ollama:MODEL`` (``OLLAMA_HOST``; the model keeps its tag, as in
    ``ollama:qwen3:8b``, and is taken to support tools) and ``scripted:FILE.json`` (a script, see
    :func:`load_script`). The model part may be left out, except for Ollama.
    ``OPENAI_BASE_URL``, ``DEEPSEEK_BASE_URL`` and ``ANTHROPIC_BASE_URL`` point
    a hosted provider at another server.
    A missing key is a :class:`~heron.UserError` naming the variable to set::

        provider = from_spec("anthropic:claude-sonnet-5")

    ``api_key`` and ``base_url`` (hosted providers only: ``openai``, ``anthropic``,
    ``deepseek``) are used instead of the environment's key and base URL (the daemon
    passes the credentials installed in it this way, never through ``os.environ``).
    """
    kind, _, rest = spec.strip().partition(":")
    kind = kind.strip().lower()  # ("anthropic : model", as the daemon's schema allows)
    factory = _FACTORIES.get(kind)
    if factory is None:
        raise UserError(f"unknown provider {spec!r}: use one of {', '.join(PROVIDER_KINDS)}")
    if (api_key is not None or base_url is not None) and kind not in KEYED_KINDS:
        raise UserError(
            f"provider {kind!r} takes no API key or base URL (only {', '.join(KEYED_KINDS)} do)"
        )
    return factory(rest.strip(), _Auth(api_key, base_url))


def default_provider() -> Provider:
    """The provider ``HERON_PROVIDER`` names, else the embedded local model."""
    spec = os.environ.get("HERON_PROVIDER", "").strip()
    if not spec:
        return from_spec("local")
    try:
        return from_spec(spec)
    except UserError as exc:
        raise UserError(f"HERON_PROVIDER={spec}: {exc}") from None


def _error_step(where: str, raw: dict[str, Any]) -> Step:
    """``{"error": message, "status": 503}``: the provider fails this turn."""
    unknown = set(raw) - {"error", "status"}
    if unknown:
        raise UserError(f"{where}: unknown keys beside 'error': {', '.join(sorted(unknown))}")
    message, status = raw["error"], raw.get("status")
    if not isinstance(message, str) or not (status is None or type(status) is int):
        raise UserError(f"{where}: 'error' must be a string and 'status' a whole number")
    return ProviderError(message, status=status, provider="scripted")


def _step(index: int | str, raw: Any) -> Step:
    where = f"step {index}"
    if isinstance(raw, str):
        return raw
    if not isinstance(raw, dict):
        raise UserError(f"{where}: expected a string or an object, got {type(raw).__name__}")
    if "error" in raw:
        return _error_step(where, raw)
    unknown = set(raw) - {"text", "tool_calls", "thinking", "delay", "chunk_delay", "stop_reason"}
    if unknown:
        raise UserError(f"{where}: unknown keys {', '.join(sorted(unknown))}")
    raw_calls = raw.get("tool_calls", [])
    if not isinstance(raw_calls, list):
        raise UserError(f"{where}: 'tool_calls' must be a list")
    calls = []
    for n, item in enumerate(raw_calls):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise UserError(f"{where}, tool call {n}: needs a string 'name'")
        extra = set(item) - {"name", "arguments", "id"}
        if extra:
            raise UserError(f"{where}, tool call {n}: unknown keys {', '.join(sorted(extra))}")
        arguments = item.get("arguments", {})
        if not isinstance(arguments, dict):
            raise UserError(f"{where}, tool call {n}: 'arguments' must be an object")
        call_id = item.get("id") or ""
        if not isinstance(call_id, str):
            raise UserError(f"{where}, tool call {n}: 'id' must be a string")
        calls.append(ToolCall(id=call_id, name=item["name"], arguments=arguments))
    text, thinking, delay = raw.get("text", ""), raw.get("thinking"), raw.get("delay", 0.0)
    if not isinstance(text, str) or not (thinking is None or isinstance(thinking, str)):
        raise UserError(f"{where}: 'text' and 'thinking' must be strings")
    pace = raw.get("chunk_delay", 0.0)
    for name, value in (("delay", delay), ("chunk_delay", pace)):
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise UserError(f"{where}: {name!r} must be a non-negative number")
    stop = raw.get("stop_reason")
    reasons = get_args(FinishReason)
    if stop is not None and stop not in reasons:
        raise UserError(f"{where}: 'stop_reason' must be one of {', '.join(reasons)}")
    return Reply(
        text=text,
        tool_calls=calls,
        thinking=thinking,
        delay=float(delay),
        chunk_delay=float(pace),
        stop_reason=stop,
    )


def load_script(path: str | os.PathLike[str]) -> list[Step]:
    """Read a :class:`ScriptedProvider` script from a JSON file.

    The file holds a list of steps, one per model turn: a string (the reply),
    or ``{"text": ..., "tool_calls": [{"name": ..., "arguments": {...}}],
    "thinking": ..., "delay": seconds, "chunk_delay": seconds between text pieces,
    "stop_reason": "max_tokens"}`` (how the turn ended, when not as usual),
    or ``{"error": message, "status": 503}``
    for a turn on which the provider fails (a :class:`~heron.ProviderError`).

    The file may instead hold ``{"steps": [...], "compaction": step}``: then every
    request to summarise the agent's memory (see
    :func:`heron.testing.is_compaction_request`) is answered with the ``compaction``
    step, and only the other requests play ``steps``.
    """
    file = Path(path).expanduser()
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"script file not found: {file}") from None
    except OSError as exc:
        raise UserError(f"cannot read script {file}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UserError(f"script {file} is not valid JSON: {exc}") from None
    compaction: Step | None = None
    if isinstance(data, dict):
        whole: dict[str, Any] = data
        unknown = set(whole) - {"steps", "compaction"}
        if unknown:
            raise UserError(
                f"script {file}: unknown keys {', '.join(sorted(unknown))} "
                "(an object script takes 'steps' and optionally 'compaction')"
            )
        data, raw_compaction = whole.get("steps"), whole.get("compaction")
        if raw_compaction is not None:
            try:
                compaction = _step("compaction", raw_compaction)
            except UserError as exc:
                raise UserError(f"script {file}: {exc}") from None
    if not isinstance(data, list):
        raise UserError(
            f"script {file} must hold a JSON list of steps, or an object with that list "
            "as 'steps' and optionally a 'compaction' step"
        )
    try:
        steps = [_step(i, raw) for i, raw in enumerate(data)]
    except UserError as exc:
        raise UserError(f"script {file}: {exc}") from None
    if compaction is None:
        return steps
    return [_or_compaction(step, compaction) for step in steps] or [
        _or_compaction(_exhausted(), compaction)
    ]


def _or_compaction(step: Step, compaction: Step) -> Step:
    """``step``, except that a compaction request gets ``compaction``.

    Every step is wrapped, not only the first: which step a request lands on
    depends on the provider (``by_history`` counts the assistant messages sent).
    """

    def pick(messages: Sequence[Message]) -> Step:
        return compaction if is_compaction_request(messages) else step

    return pick


def _exhausted() -> Step:
    return ScriptExhaustedError("ScriptedProvider ran out of steps: the script has 0")
