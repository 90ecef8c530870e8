"""Model authentication: which model providers the daemon can use right now."""

from __future__ import annotations

from typing import Literal, TypeAlias

from ._common import WireModel

__all__ = ["ModelAuthReadiness", "ProviderKind", "ProviderReadiness"]

ProviderKind: TypeAlias = Literal["local", "openai", "anthropic", "deepseek", "ollama", "scripted"]
"""The model providers a spec can name (``KIND[:MODEL]``)."""


class ProviderReadiness(WireModel):
    """Whether the daemon can use one provider now (never a key's value)."""

    provider: ProviderKind
    """The provider."""
    ready: bool
    """Whether what it needs is there: an API key set, the model file and runtime present."""
    detail: str
    """What was checked, and what to do when it is not ready (which variable to set)."""


class ModelAuthReadiness(WireModel):
    """``GET /v1/model-auth/readiness``: the providers the daemon can use, and its default."""

    default_provider: str
    """The provider spec nodes run on unless they name a model (``HERON_PROVIDER``)."""
    default_ready: bool
    """Whether the default provider is ready."""
    default_detail: str
    """Why the default is, or is not, ready."""
    providers: list[ProviderReadiness]
    """Every provider kind, in a fixed order."""
