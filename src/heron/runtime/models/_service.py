"""Models: API keys installed in the daemon (``/v1/model-auth``), and its default model
(``/v1/model-config``)."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ... import api
from ...providers import PROVIDER_KINDS
from ..nodes import Feature, Kernel, maybe_when
from ..server import ApiError, DaemonError
from ._credentials import (
    REDACTED,
    Credential,
    load_credentials,
    load_model_config,
    save_credentials,
    save_model_config,
)
from ._providers import ProviderPool
from ._readiness import (
    BASE_URL_VARIABLES,
    KEY_VARIABLES,
    check_spec,
    without_userinfo,
)
from ._routes import add_model_routes

if TYPE_CHECKING:
    from fastapi import FastAPI


__all__ = ["Models"]

log = logging.getLogger("heron.runtime")


def check_provider(provider: str) -> api.CredentialProvider:
    """``provider`` if a key can be installed for it, else ``404 unknown_provider``."""
    if provider in api.CREDENTIAL_PROVIDERS:
        return provider
    known = ", ".join(api.CREDENTIAL_PROVIDERS)
    if provider in PROVIDER_KINDS:
        message = f"provider {provider!r} takes no API key (keys are installed for {known})"
    else:
        message = f"unknown provider {provider[:64]!r}: use one of {known}"
    raise ApiError(404, "unknown_provider", message, {"providers": list(api.CREDENTIAL_PROVIDERS)})


def _check_key(key: str) -> str:
    """``key`` if it can be sent in a header; ``422 invalid_api_key`` (never quoting it)."""
    if not key.isascii() or any(c.isspace() or not c.isprintable() for c in key):
        raise ApiError(
            422,
            "invalid_api_key",
            "api_key must be printable ASCII with no spaces or line breaks (paste the key alone)",
        )
    return key


def _check_base_url(url: str | None) -> str | None:
    """``url`` if it is an ``http(s)://host`` URL without credentials in it, else ``422``."""
    if url is None:
        return None
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ApiError(422, "invalid_base_url", "base_url must be an http:// or https:// URL")
    if "@" in parts.netloc:
        raise ApiError(
            422,
            "invalid_base_url",
            "base_url must not hold a user or password: send the key as api_key",
        )
    return parts.geturl()


def check_default_model(spec: str) -> str:
    """``spec`` (trimmed) if it names a known provider in a usable shape, else
    ``422 invalid_model``. Whether it is *ready* (its key set ...) is another matter."""
    spec = spec.strip()
    kind, _, model = spec.partition(":")
    kind = kind.strip().lower()
    if kind not in PROVIDER_KINDS:
        raise ApiError(
            422,
            "invalid_model",
            f"unknown provider {kind[:64]!r} in {spec[:128]!r}: use one of "
            f"{', '.join(PROVIDER_KINDS)} (KIND[:MODEL])",
        )
    if kind in ("ollama", "scripted") and not model.strip():
        what = "a model name: ollama:MODEL" if kind == "ollama" else "a file: scripted:FILE.json"
        raise ApiError(422, "invalid_model", f"{kind} needs {what}")
    return spec


class Models(Feature):
    """The daemon's credentials and model config."""

    def __init__(self, engine: Kernel) -> None:
        self.engine = engine
        self.pool = ProviderPool(engine.config.provider)
        """Builds the providers runs use (this feature supplies them to the kernel)."""
        self.models = self.pool
        home = engine.config.home
        self._lock = asyncio.Lock()  # one file write at a time, in request order
        self._stored = load_credentials(home)
        """Every entry of the credentials file (kept whole when it is written again)."""
        for provider, credential in self._stored.items():
            if provider in api.CREDENTIAL_PROVIDERS:
                self.pool.install(provider, credential)
            else:
                log.warning("%s: ignoring the credential of unknown provider %r", home, provider)
        stored = load_model_config(home)
        self.default_model: str | None = stored.get("default_model")
        """The default model set through the API (``None``: none)."""
        self.updated_at: float | None = stored.get("updated_at")
        """When the model config was last set through the API."""
        if self.default_model is not None:
            if engine.config.provider:
                log.info(
                    "default model %s (set through the API; it overrides HERON_PROVIDER=%s)",
                    self.default_model,
                    engine.config.provider,
                )
            self.pool.default = self.default_model

    async def after_shutdown(self) -> None:
        """Close the providers (a local model's worker process ...): no run uses them now."""
        await self.pool.aclose()

    async def before_launch(self) -> None:
        """Make the default model ready: the embedded one (or one set through the API) in
        the background, any other now, refusing to start without its API key."""
        engine = self.engine
        if self.pool.default.partition(":")[0].lower() == "local" or (
            self.default_model is not None
        ):
            # Loading the embedded model takes a while: let the first node find it ready.
            # A default set through the API is not refused here either: only the API can
            # change it, and that needs a daemon that started.
            engine.spawn(self._warm_default())
        else:
            try:
                await self.pool.prepare(None)
            except Exception as exc:  # a missing API key: say so now, not per node
                raise DaemonError(f"HERON_PROVIDER={self.pool.default}: {exc}") from None

    async def _warm_default(self) -> None:
        try:
            await self.pool.prepare(None)
        except Exception:
            log.exception("could not load the default model %s", self.pool.default)

    def routes(self, app: FastAPI) -> None:
        """Serve the model-auth readiness, credential and model-config routes."""
        add_model_routes(app, self)

    # -- credentials ----------------------------------------------------------

    def credentials(self) -> list[api.ModelCredential]:
        """Every hosted provider's credential state, in a fixed order."""
        return [self.credential(provider) for provider in api.CREDENTIAL_PROVIDERS]

    def credential(self, provider: api.CredentialProvider) -> api.ModelCredential:
        """One provider's credential state: where its key comes from, never the key."""
        installed = self.pool.credentials.get(provider)
        environment_url = os.environ.get(BASE_URL_VARIABLES[provider]) or None
        if installed is not None:
            return api.ModelCredential(
                provider=provider,
                installed=True,
                source="installed",
                base_url=_shown(installed.base_url or environment_url),
                installed_at=maybe_when(installed.installed_at),
            )
        in_environment = bool(os.environ.get(KEY_VARIABLES[provider], "").strip())
        return api.ModelCredential(
            provider=provider,
            installed=False,
            source="environment" if in_environment else None,
            base_url=_shown(environment_url),
        )

    async def install(
        self, provider: str, request: api.ModelCredentialInstallRequest
    ) -> api.ModelCredential:
        """Install (or replace) ``provider``'s key: stored, then used from the next turn."""
        kind = check_provider(provider)
        credential = Credential(
            api_key=_check_key(request.api_key.get_secret_value()),
            base_url=_check_base_url(request.base_url),
            installed_at=time.time(),
        )
        await self._store(kind, credential)
        log.info("installed an API key for %s", kind)
        return self.credential(kind)

    async def remove(self, provider: str) -> api.ModelCredential:
        """Remove ``provider``'s installed key; ``404 credential_not_found`` if none is."""
        kind = check_provider(provider)
        if not await self._store(kind, None):
            message = f"no API key is installed for {kind}"
            if os.environ.get(KEY_VARIABLES[kind], "").strip():
                message += (
                    f" (the one in effect is {KEY_VARIABLES[kind]} in the daemon's "
                    "environment: unset it there and restart the daemon)"
                )
            raise ApiError(404, "credential_not_found", message)
        log.info("removed the installed API key of %s", kind)
        return self.credential(kind)

    async def _store(self, kind: str, credential: Credential | None) -> bool:
        """Install ``credential`` for ``kind`` (``None``: remove it) in the file, then in
        the pool; ``False`` if there was nothing to remove.

        One change at a time, each made to the file as the one before it left it: two
        installs at once (for two providers, or one) must not drop one another's key.
        """
        async with self._lock:
            if credential is None and kind not in self._stored:
                return False
            changed = {k: v for k, v in self._stored.items() if k != kind}
            if credential is not None:
                changed[kind] = credential
            await asyncio.to_thread(save_credentials, self.engine.config.home, changed)
            self._stored = changed
            idle = self.pool.install(kind, credential)
        for provider in idle:  # built with the old key, and no call is using them
            await provider.aclose()
        return True

    # -- config -----------------------------------------------------------------

    def config(self) -> api.ModelConfig:
        """The model settings and whether the default in effect is ready."""
        pool = self.pool
        ready, detail = check_spec(pool.default, pool.credentials)
        if self.default_model is not None:
            source: api.ModelConfigSource = "config"
        else:
            source = "environment" if self.engine.config.provider else "builtin"
        return api.ModelConfig(
            default_model=self.default_model,
            effective_default=pool.default,
            source=source,
            ready=ready,
            detail=detail,
            updated_at=maybe_when(self.updated_at),
        )

    async def update(self, request: api.ModelConfigUpdateRequest) -> api.ModelConfig:
        """Set the fields the request gives; ``422 invalid_model`` for a malformed default,
        or one that is ready but cannot be built (a broken script ...)."""
        if "default_model" not in request.model_fields_set:
            return self.config()
        spec = request.default_model
        pool = self.pool
        if spec is not None:
            spec = check_default_model(spec)
            ready, _ = check_spec(spec, pool.credentials)
            if ready:
                # Built now (off the loop), so a file that cannot be used is refused here
                # and no node's turn builds it on the event loop. A local model's weights
                # load at its first turn: building it reads only the GGUF's metadata.
                await self.engine.prepare_model(spec)
        async with self._lock:
            now = time.time()
            await asyncio.to_thread(save_model_config, self.engine.config.home, spec, now)
            self.default_model, self.updated_at = spec, now
            pool.default = spec or (self.engine.config.provider or "local").strip()
        log.info("default model set to %s", pool.default)
        return self.config()


def _shown(url: str | None) -> str | None:
    """A base URL as an answer may show it: without any ``user:password@`` part, nor its
    query (a proxy's ``?key=...`` is a credential too: it is kept, but never shown)."""
    if not url:
        return None
    bare, mark, _ = without_userinfo(url).partition("?")
    return f"{bare}?{REDACTED}" if mark else bare.partition("#")[0]
