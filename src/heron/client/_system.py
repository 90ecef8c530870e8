"""``client.system`` (the daemon's health and status) and ``client.auth``."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from .. import api
from ._flow import Flow
from ._options import RequestOptions
from ._resource import M, Resource, endpoint

__all__ = ["Auth", "AuthStatus", "System"]


class System(Resource[M]):
    """``client.system``: is the daemon up, and what is it doing."""

    @endpoint
    def status(self, *, options: RequestOptions | None = None) -> Flow[api.SystemStatus]:
        """``GET /v1/status``: version, uptime, node counts, listeners, event streams."""
        return self._call("GET", "/v1/status", api.SystemStatus, options=options)

    @endpoint
    def open_page(
        self, *, port: int | None = None, options: RequestOptions | None = None
    ) -> Flow[api.PageOpen]:
        """``POST /v1/ui/open``: make the daemon's web page reachable (a loopback TCP
        listener if it has none; ``port`` picks its port, 0 any) and mint a one-time
        sign-in link for a browser (what ``heron ui`` opens).

        Example::

            page = client.system.open_page()
            webbrowser.open(page.login_url)
        """
        body = {} if port is None else {"port": port}
        return self._call("POST", "/v1/ui/open", api.PageOpen, body=body, options=options)

    @endpoint
    def health(self, *, options: RequestOptions | None = None) -> Flow[api.Health]:
        """``GET /healthz``: answers as soon as the daemon serves requests."""
        return self._call("GET", "/healthz", api.Health, options=options)


class AuthStatus(BaseModel):
    """``client.auth.status()``: how this client authenticates, the daemon it reaches, and
    which model providers that daemon can use."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    method: Literal["filesystem", "bearer", "none"]
    """``filesystem``: the Unix socket (its file permissions); ``bearer``: a token over
    TCP; ``none``: TCP without a token (the daemon refuses it unless it needs none)."""
    address: str
    """Where this client reaches the daemon (``unix:/path`` or the base URL)."""
    version: str
    """The daemon's Heron version."""
    listeners: list[api.Listener]
    """Where the daemon listens, and how each listener authenticates."""
    models: api.ModelAuthReadiness
    """Which model providers the daemon can use now, and whether its default is ready."""


class Auth(Resource[M]):
    """``client.auth``: is this client let in, and can the daemon reach a model?"""

    @endpoint
    def status(self, *, options: RequestOptions | None = None) -> Flow[AuthStatus]:
        """``GET /v1/status``, then ``GET /v1/model-auth/readiness``: how this client
        authenticates, the daemon's version and listeners, and its model providers'
        readiness (never a key). ``AuthenticationError`` when the token is refused.

        Example::

            status = client.auth.status()
            if not status.models.default_ready:
                print(status.models.default_detail)
        """
        return self._status(options)

    def _status(self, options: RequestOptions | None) -> Flow[AuthStatus]:
        settings = self._driver.settings
        system: api.SystemStatus = yield from self._call(
            "GET", "/v1/status", api.SystemStatus, options=options
        )
        models: api.ModelAuthReadiness = yield from self._call(
            "GET", "/v1/model-auth/readiness", api.ModelAuthReadiness, options=options
        )
        if settings.socket_path is not None:
            method: Literal["filesystem", "bearer", "none"] = "filesystem"
        else:
            method = "bearer" if settings.token else "none"
        return AuthStatus(
            method=method,
            address=settings.address,
            version=system.version,
            listeners=system.listeners,
            models=models,
        )
