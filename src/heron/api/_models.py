"""Models: the API keys installed in the daemon and its default model.

A key goes one way: a client sends it in an install request; no answer ever holds
any part of it (not even a masked tail).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal, TypeAlias

from pydantic import Field, SecretStr, StringConstraints

from ._common import BASE_URL_PATTERN, MODEL_SPEC_PATTERN, RequestModel, WireModel

__all__ = [
    "CREDENTIAL_PROVIDERS",
    "CredentialProvider",
    "CredentialSource",
    "ModelConfig",
    "ModelConfigSource",
    "ModelConfigUpdateRequest",
    "ModelCredential",
    "ModelCredentialInstallRequest",
]

CredentialProvider: TypeAlias = Literal["openai", "anthropic", "deepseek"]
"""The providers whose API key can be installed in the daemon."""

CREDENTIAL_PROVIDERS: tuple[CredentialProvider, ...] = ("openai", "anthropic", "deepseek")
"""Every :data:`CredentialProvider`, in the order ``GET /v1/model-auth`` lists them."""

CredentialSource: TypeAlias = Literal["installed", "environment"]
"""Where a provider's key in effect comes from: installed through the API (wins), or the
daemon's environment (``OPENAI_API_KEY`` ...)."""

ModelConfigSource: TypeAlias = Literal["config", "environment", "builtin"]
"""Where the daemon's default model comes from: ``PUT /v1/model-config`` (wins),
``HERON_PROVIDER``, or the embedded model (``local``)."""


class ModelCredential(WireModel):
    """One hosted provider's credential state (never the key, nor any part of it)."""

    provider: CredentialProvider
    """The provider."""
    installed: bool
    """Whether a key is installed in the daemon for it."""
    source: CredentialSource | None
    """Where the key in effect comes from (``None``: there is none)."""
    base_url: str | None = None
    """The endpoint in effect when it is not the vendor's (installed, else the
    environment's ``*_BASE_URL``), without any ``user:password@`` part."""
    installed_at: datetime | None = None
    """When the installed key was installed."""


class ModelCredentialInstallRequest(RequestModel):
    """``PUT /v1/model-auth/{provider}``: install (or replace) the provider's key."""

    api_key: Annotated[
        SecretStr,
        Field(min_length=1, max_length=4096, json_schema_extra={"pattern": "^[!-~]+$"}),
    ]
    """The API key (printable characters, no spaces; never shown again)."""
    base_url: (
        Annotated[
            str,
            StringConstraints(min_length=1, max_length=2048),
            Field(json_schema_extra={"pattern": BASE_URL_PATTERN}),
        ]
        | None
    ) = None
    """An ``http(s)://`` endpoint to use instead of the vendor's (a proxy, a compatible
    server); left out: the environment's ``*_BASE_URL``, else the vendor's."""


class ModelConfigUpdateRequest(RequestModel):
    """``PUT /v1/model-config``: fields given replace the stored ones (``null`` clears
    one); fields left out keep their value."""

    default_model: (
        Annotated[
            str,
            StringConstraints(min_length=1, max_length=512),
            Field(json_schema_extra={"pattern": MODEL_SPEC_PATTERN}),
        ]
        | None
    ) = None
    """The model spec (``KIND[:MODEL]``) nodes use when neither their create, kind nor
    profile names one; ``null`` returns to ``HERON_PROVIDER``, else the embedded model."""


class ModelConfig(WireModel):
    """``GET``/``PUT /v1/model-config``: the daemon's model settings, and whether its
    default model can be used now."""

    default_model: str | None
    """The default set through the API (``None``: none set)."""
    effective_default: str
    """The spec nodes naming no model run on now."""
    source: ModelConfigSource
    """Where ``effective_default`` comes from."""
    ready: bool
    """Whether ``effective_default`` can be used now (its key, file or script present)."""
    detail: str
    """Why it is, or is not, ready."""
    updated_at: datetime | None
    """When the settings were last set through the API."""
