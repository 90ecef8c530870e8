"""``client.models``: the API keys installed in the daemon, and its default model."""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any

from .. import api
from ._flow import Flow
from ._options import RequestOptions
from ._resource import M, Resource, endpoint

if TYPE_CHECKING:
    from ._drivers import Driver

__all__ = ["ModelConfig", "ModelCredentials", "Models"]

_UNSET: Any = object()
"""A field left out of an update (``None`` is a value: it clears the field)."""


def _provider(value: object) -> str:
    """``value`` if a key can be installed for it; ``TypeError`` (nothing sent) otherwise."""
    if value not in api.CREDENTIAL_PROVIDERS:
        raise TypeError(f"invalid provider {value!r}: one of {', '.join(api.CREDENTIAL_PROVIDERS)}")
    return str(value)


class ModelCredentials(Resource[M]):
    """``client.models.credentials``: install, list and remove the daemon's API keys.

    A key goes one way: ``install`` sends it; no answer ever holds any part of it.
    An installed key wins over the daemon's environment (``OPENAI_API_KEY`` ...) and
    is used from the next model turn on.
    """

    @endpoint
    def list(
        self, *, options: RequestOptions | None = None
    ) -> Flow[builtins.list[api.ModelCredential]]:
        """``GET /v1/model-auth``: each hosted provider's credential state (installed or
        not, where the key in effect comes from), never the key.

        Example::

            for state in client.models.credentials.list():
                print(state.provider, state.source or "no key")
        """
        result = builtins.list[api.ModelCredential]
        return self._call("GET", "/v1/model-auth", result, options=options)

    @endpoint
    def install(
        self,
        provider: api.CredentialProvider,
        *,
        api_key: str,
        base_url: str | None = None,
        options: RequestOptions | None = None,
    ) -> Flow[api.ModelCredential]:
        """``PUT /v1/model-auth/{provider}``: install (or replace) the provider's API key,
        optionally with a ``base_url`` to use instead of the vendor's. ``TypeError`` for a
        provider other than ``openai``, ``anthropic``, ``deepseek`` and ``ValueError`` for
        an empty key (nothing sent).

        Example::

            client.models.credentials.install("openai", api_key=os.environ["MY_KEY"])
        """
        name = _provider(provider)
        if not isinstance(api_key, str):
            raise TypeError(f"api_key must be a string, got {type(api_key).__name__}")
        if not api_key.strip():
            raise ValueError("api_key is empty")
        body: dict[str, Any] = {"api_key": api_key.strip()}
        if base_url is not None:
            body["base_url"] = base_url
        path = f"/v1/model-auth/{name}"
        return self._call("PUT", path, api.ModelCredential, body=body, options=options)

    @endpoint
    def remove(
        self, provider: api.CredentialProvider, *, options: RequestOptions | None = None
    ) -> Flow[api.ModelCredential]:
        """``DELETE /v1/model-auth/{provider}``: remove the installed key (``NotFoundError``
        ``credential_not_found`` if none is); the answer says whether a key from the
        daemon's environment takes over."""
        path = f"/v1/model-auth/{_provider(provider)}"
        return self._call("DELETE", path, api.ModelCredential, options=options)


class ModelConfig(Resource[M]):
    """``client.models.config``: the daemon's default model."""

    @endpoint
    def retrieve(self, *, options: RequestOptions | None = None) -> Flow[api.ModelConfig]:
        """``GET /v1/model-config``: the default model, where it comes from, and whether it
        is ready."""
        return self._call("GET", "/v1/model-config", api.ModelConfig, options=options)

    @endpoint
    def update(
        self,
        *,
        default_model: str | None = _UNSET,
        options: RequestOptions | None = None,
    ) -> Flow[api.ModelConfig]:
        """``PUT /v1/model-config``: set the default model nodes use when neither their
        create, kind nor profile names one (kept across restarts; it wins over
        ``HERON_PROVIDER``). ``None`` clears it; left out, it is kept. The answer says
        whether the new default is ready (a missing key is accepted, ``ready=False``);
        ``UnprocessableEntityError`` ``invalid_model`` for an unknown provider.

        Example::

            config = client.models.config.update(default_model="anthropic:claude-sonnet-5")
            if not config.ready:
                print(config.detail)
        """
        body: dict[str, Any] = {}
        if default_model is not _UNSET:
            if default_model is not None and not isinstance(default_model, str):
                raise TypeError(f"default_model must be a string or None, got {default_model!r}")
            body["default_model"] = default_model
        return self._call("PUT", "/v1/model-config", api.ModelConfig, body=body, options=options)


class Models(Resource[M]):
    """``client.models``: credentials (``client.models.credentials``) and the default
    model (``client.models.config``)."""

    credentials: ModelCredentials[M]
    """The API keys installed in the daemon."""
    config: ModelConfig[M]
    """The daemon's default model."""

    def __init__(self, driver: Driver[M]) -> None:
        super().__init__(driver)
        self.credentials = ModelCredentials(driver)
        self.config = ModelConfig(driver)
