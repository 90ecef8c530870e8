"""The daemon's page: a web canvas of every node, served from the wheel under ``/ui/``.

``heron ui`` calls :meth:`Page.open`: the page needs a TCP listener (a browser cannot
reach a Unix socket), so a daemon that has none opens one on loopback, on the port the
page had last time if it is free. The page's files are plain ES modules in ``static/``
(no build step, nothing fetched at run time); they call the same ``/v1`` API as every
client, signed in with a session cookie (see :mod:`._sessions`).
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ... import api
from ..nodes import Feature, Kernel
from ..server import ApiError
from ._routes import add_page_routes
from ._sessions import LOGIN_PATH, PAGE_ROOT, Sessions

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = ["PORT_FILE", "Page"]

log = logging.getLogger("heron.runtime")

PORT_FILE = "ui-port"
"""The file under ``HERON_HOME`` that remembers the page's last loopback port."""

LOOPBACK = "127.0.0.1"
"""Where a listener opened for the page binds."""


def _reachable_host(host: str) -> str:
    """The address a browser on this machine uses for a listener bound to ``host``."""
    if host in ("0.0.0.0", ""):
        return LOOPBACK
    if host in ("::", "[::]"):
        return "[::1]"
    return host


def _split(address: str) -> tuple[str, int]:
    """``host:port`` or ``[v6]:port`` → host (brackets kept for v6) and port."""
    host, _, port = address.rpartition(":")
    return host, int(port)


def _is_loopback(host: str) -> bool:
    with contextlib.suppress(ValueError):
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    return host == "localhost"


class Page(Feature):
    """The web canvas: serves the page and signs browsers in."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.sessions = Sessions()
        """The signed-in browsers (the auth middleware checks their cookies)."""
        self.clock = time.time
        """The time sessions are measured by."""

    def routes(self, app: FastAPI) -> None:
        """``/ui/…`` and ``POST /v1/ui/open``."""
        add_page_routes(app, self)

    @property
    def _port_file(self) -> Path:
        return self.kernel.config.home / PORT_FILE

    def _remembered_port(self) -> int:
        with contextlib.suppress(OSError, ValueError):
            port = int(self._port_file.read_text().strip())
            if 0 < port < 65536:
                return port
        return 0

    def _remember(self, port: int) -> None:
        with contextlib.suppress(OSError):
            self._port_file.write_text(f"{port}\n")
            os.chmod(self._port_file, 0o600)

    def _serving(self) -> api.Listener | None:
        """A TCP listener a browser here can reach (loopback, or every address)."""
        for listener in self.kernel.listeners:
            if listener.kind != "tcp":
                continue
            host = _reachable_host(_split(listener.address)[0])
            if _is_loopback(host):
                return listener
        return None

    async def open(self, request: api.PageOpenRequest) -> api.PageOpen:
        """Make the page reachable and mint a sign-in link (``POST /v1/ui/open``)."""
        listener = self._serving()
        if listener is None:
            listener = await self._listen(request.port)
        elif request.port not in (None, 0, _split(listener.address)[1]):
            where = listener.address
            raise ApiError(
                409,
                "listen_failed",
                f"the daemon's page is served on {where} already; open that, or leave out the port",
            )
        host, port = _split(listener.address)
        url = f"http://{_reachable_host(host)}:{port}{PAGE_ROOT}/"
        code, expires_at = self.sessions.mint_code()
        login_url = f"http://{_reachable_host(host)}:{port}{LOGIN_PATH}?code={code}"
        return api.PageOpen(url=url, login_url=login_url, expires_at=expires_at, listener=listener)

    async def _listen(self, port: int | None) -> api.Listener:
        if port is None:
            remembered = self._remembered_port()
            try:
                listener = await self.kernel.listen(LOOPBACK, remembered)
            except ApiError:
                if not remembered:
                    raise
                log.info("the page's last port %d is taken: listening on another", remembered)
                listener = await self.kernel.listen(LOOPBACK, 0)
        else:
            listener = await self.kernel.listen(LOOPBACK, port)
        self._remember(_split(listener.address)[1])
        return listener
