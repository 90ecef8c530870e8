"""``client.system``: the daemon's health and status."""

from __future__ import annotations

from .. import api
from ._flow import Flow
from ._options import RequestOptions
from ._resource import M, Resource, endpoint

__all__ = ["System"]


class System(Resource[M]):
    """``client.system``: is the daemon up, and what is it doing."""

    @endpoint
    def status(self, *, options: RequestOptions | None = None) -> Flow[api.SystemStatus]:
        """``GET /v1/status``: version, uptime, node counts, listeners, event streams."""
        return self._call("GET", "/v1/status", api.SystemStatus, options=options)

    @endpoint
    def health(self, *, options: RequestOptions | None = None) -> Flow[api.Health]:
        """``GET /healthz``: answers as soon as the daemon serves requests."""
        return self._call("GET", "/healthz", api.Health, options=options)
