"""Which model providers the daemon can use now, and why: the answer of
``GET /v1/model-auth/readiness`` and the ``ready`` of a model spec."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from ... import api
from ._credentials import Credential

__all__ = [
    "BASE_URL_VARIABLES",
    "KEY_VARIABLES",
    "check_spec",
    "provider_readiness",
    "readiness",
    "without_userinfo",
]

KEY_VARIABLES: dict[str, str] = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
}
"""The environment variable holding each hosted provider's API key."""

BASE_URL_VARIABLES = {
    "openai": "OPENAI_BASE_URL",
    "anthropic": "ANTHROPIC_BASE_URL",
    "deepseek": "DEEPSEEK_BASE_URL",
}
"""The environment variable pointing each hosted provider at another server."""

_OLLAMA_DEFAULT = "http://localhost:11434"
"""Where the Ollama provider goes when ``OLLAMA_HOST`` is not set."""

_ORDER: tuple[api.ProviderKind, ...] = (
    "local",
    "openai",
    "anthropic",
    "deepseek",
    "ollama",
    "scripted",
)


def _local(model: str) -> tuple[bool, str]:
    """The embedded (or named) GGUF file present and llama.cpp importable."""
    if importlib.util.find_spec("llama_cpp") is None:
        return False, "llama_cpp is not installed (pip install llama-cpp-python)"
    chosen = model or os.environ.get("HERON_LOCAL_MODEL", "").strip()
    if chosen:
        path = Path(chosen).expanduser()
    else:
        from ...providers.local import default_model_path

        try:
            path = default_model_path()
        except Exception as exc:  # UserError: the embedded model's package is missing
            return False, str(exc)
    if not _is_file(path):
        return False, f"model file not found: {path}"
    return True, f"model file {path}"


def _hosted(kind: str, credentials: Mapping[str, Credential]) -> tuple[bool, str]:
    variable = KEY_VARIABLES[kind]
    if kind in credentials:
        return True, f"an API key is installed in the daemon (it wins over {variable})"
    if os.environ.get(variable, "").strip():
        return True, f"{variable} is set"
    return False, (
        f"{variable} is not set in the daemon's environment and no key is installed "
        f"(heron models credentials install {kind})"
    )


def _ollama(model: str | None) -> tuple[bool, str]:
    if model is not None and not model:
        return False, "ollama needs a model name: ollama:MODEL"
    host = os.environ.get("OLLAMA_HOST", "").strip()
    if not host:
        # The provider's own fallback (providers/_spec.py): not being told is no refusal.
        return True, f"OLLAMA_HOST is not set: the default {_OLLAMA_DEFAULT} (not probed)"
    return True, f"OLLAMA_HOST is {without_userinfo(host)} (not probed)"


def without_userinfo(host: str) -> str:
    """``host`` without a ``user:password@`` part (a proxy's credentials)."""
    parts = urlsplit(host if "//" in host else f"//{host}")
    if "@" not in parts.netloc:
        return host
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl().removeprefix("//")


def _is_file(path: Path) -> bool:
    """Whether ``path`` is a file (a name too long, or unreadable, is none)."""
    try:
        return path.is_file()
    except (OSError, ValueError):  # ENAMETOOLONG, EACCES ...; a NUL in the name
        return False


def _scripted(path: str | None) -> tuple[bool, str]:
    if path is None:
        return True, "plays the script file a spec names (scripted:FILE.json)"
    if not path:
        return False, "scripted needs a file: scripted:FILE.json"
    if not _is_file(Path(path).expanduser()):
        return False, f"script file not found: {path}"
    return True, f"script file {path}"


def _check(kind: str, model: str | None, credentials: Mapping[str, Credential]) -> tuple[bool, str]:
    """Whether provider ``kind`` is usable (for ``model`` when a spec names one)."""
    if kind == "local":
        return _local(model or "")
    if kind in KEY_VARIABLES:
        return _hosted(kind, credentials)
    if kind == "ollama":
        return _ollama(model)
    if kind == "scripted":
        return _scripted(model)
    return False, f"unknown provider {kind!r}: use one of {', '.join(_ORDER)}"


def provider_readiness(
    credentials: Mapping[str, Credential] | None = None,
) -> list[api.ProviderReadiness]:
    """Every provider kind's readiness, from the keys installed in the daemon
    (``credentials``) and its environment (never a key's value)."""
    readiness = []
    for kind in _ORDER:
        ready, detail = _check(kind, None, credentials or {})
        readiness.append(api.ProviderReadiness(provider=kind, ready=ready, detail=detail))
    return readiness


def check_spec(spec: str, credentials: Mapping[str, Credential]) -> tuple[bool, str]:
    """Whether the model ``spec`` is usable now, and why (or why not)."""
    kind, _, model = spec.strip().partition(":")
    return _check(kind.strip().lower(), model.strip(), credentials)


def readiness(
    default: str, credentials: Mapping[str, Credential] | None = None
) -> api.ModelAuthReadiness:
    """The readiness of every provider and of the ``default`` spec."""
    ready, detail = check_spec(default, credentials or {})
    return api.ModelAuthReadiness(
        default_provider=default,
        default_ready=ready,
        default_detail=detail,
        providers=provider_readiness(credentials),
    )
