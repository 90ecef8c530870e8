"""Models: ``/v1/model-auth`` (installed API keys, provider readiness) and ``/v1/model-config``.

No answer of these routes holds a key, and their bodies are never logged: the
daemon has no access log, its 422 lists where a body is wrong but not what it held,
and the install request's ``api_key`` is a secret string (its ``repr`` is masked).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from fastapi import FastAPI, Path

from ... import api
from ..server import errors
from ._readiness import readiness

if TYPE_CHECKING:
    from ._service import Models

__all__ = ["add_model_routes"]

ProviderPath = Annotated[
    str,
    Path(
        description="The provider: `openai`, `anthropic` or `deepseek`.",
        # Documented, but checked by the feature: another name answers 404 unknown_provider.
        json_schema_extra={"enum": list(api.CREDENTIAL_PROVIDERS)},
    ),
]
"""A ``{provider}`` path parameter."""


def add_model_routes(app: FastAPI, models: Models) -> None:
    """Serve the credential, readiness and model-config routes."""

    @app.get("/v1/model-auth/readiness", tags=["model-auth"], responses=errors())
    async def model_auth_readiness() -> api.ModelAuthReadiness:
        """Which model providers the daemon can use now (API keys installed in it or set in
        its environment, the local model present, Ollama's host configured), and whether
        its default provider is one of them. Never shows a key."""
        return readiness(models.pool.default, models.pool.credentials)

    @app.get("/v1/model-auth", tags=["model-auth"], responses=errors())
    async def list_credentials() -> list[api.ModelCredential]:
        """Each hosted provider's credential state: installed or not, and where the key in
        effect comes from (installed wins over the environment). Never any part of a key."""
        return models.credentials()

    @app.put(
        "/v1/model-auth/{provider}",
        tags=["model-auth"],
        responses=errors(400, 404, 413, 415, 422),
    )
    async def install_credential(
        provider: ProviderPath, body: api.ModelCredentialInstallRequest
    ) -> api.ModelCredential:
        """Install (or replace) the provider's API key, stored readable by the daemon's
        user only; nodes use it from their next model turn. The answer never holds it."""
        return await models.install(provider, body)

    @app.delete("/v1/model-auth/{provider}", tags=["model-auth"], responses=errors(404))
    async def remove_credential(provider: ProviderPath) -> api.ModelCredential:
        """Remove the provider's installed key (``404 credential_not_found`` if none is);
        the answer says whether a key from the environment takes over."""
        return await models.remove(provider)

    @app.get("/v1/model-config", tags=["model-config"], responses=errors())
    async def get_model_config() -> api.ModelConfig:
        """The daemon's default model, where it comes from, and whether it is ready."""
        return models.config()

    @app.put("/v1/model-config", tags=["model-config"], responses=errors(400, 413, 415, 422))
    async def update_model_config(body: api.ModelConfigUpdateRequest) -> api.ModelConfig:
        """Set the daemon's default model (kept across restarts; it wins over
        ``HERON_PROVIDER``; ``null`` clears it). ``422 invalid_model`` for an unknown
        provider or a malformed spec; a default whose key is missing is accepted and
        answered ``ready: false``."""
        return await models.update(body)
