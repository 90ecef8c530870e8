"""MCP over a WebSocket (or WSS), one JSON-RPC message per text frame, with a shared token."""

from __future__ import annotations

import hmac
import ipaddress
import ssl
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed, InvalidMessage, InvalidStatus
from websockets.frames import CloseCode
from websockets.http11 import Request, Response

from .._errors import MCPConnectionError
from ._base import (
    MAX_MESSAGE_BYTES,
    TOO_BIG,
    Connection,
    SessionHandler,
    SessionStreams,
    message_streams,
)

__all__ = ["TLSFiles", "WebSocketConnection", "is_loopback"]

SUBPROTOCOL = "mcp"


@dataclass(frozen=True, kw_only=True, slots=True)
class TLSFiles:
    """PEM files for a WSS connection.

    On the server, ``cert``/``key`` are its certificate and key, and ``ca``
    (optional) makes it demand client certificates signed by that CA. On the
    client, ``ca`` is the CA to trust for the server (the system's when
    omitted), and ``cert``/``key`` (optional) its own certificate.
    """

    cert: str | Path | None = None
    """Certificate chain in PEM form."""
    key: str | Path | None = None
    """Private key of ``cert`` in PEM form."""
    ca: str | Path | None = None
    """CA certificates to verify the other side against."""

    def server_context(self) -> ssl.SSLContext:
        """The server's TLS context."""
        if self.cert is None or self.key is None:
            raise ValueError("a WSS server needs both tls.cert and tls.key")
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.cert, self.key)
        if self.ca is not None:
            context.load_verify_locations(self.ca)
            context.verify_mode = ssl.CERT_REQUIRED
        return context

    def client_context(self) -> ssl.SSLContext:
        """The client's TLS context."""
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=self.ca)
        if self.cert is not None:
            context.load_cert_chain(self.cert, self.key)
        return context


class WebSocketConnection(Connection):
    """Client and server over a WebSocket, in two processes or on two machines.

    When ``token`` is set the server refuses (HTTP 401) any client that does
    not present it, compared in constant time; the client sends it as a
    bearer token. ``tls`` turns on WSS. The server refuses (HTTP 403) every
    request carrying an ``Origin`` header not in ``allowed_origins``:
    browsers let any web page open a WebSocket to a local port, and they
    always send ``Origin``, while MCP clients send none. A server listening
    beyond loopback needs a token. A client reconnects on its own, every
    ``reconnect_delay`` seconds, after the server goes away::

        WebSocketConnection(mode="server", host="127.0.0.1", port=9257, token=secret)
        WebSocketConnection(mode="client", url="ws://127.0.0.1:9257", token=secret)

    ``port=0`` lets the system pick a free port; :attr:`port` and :attr:`url`
    tell which once the server listens.
    """

    auto_reconnect = True

    def __init__(
        self,
        *,
        mode: Literal["server", "client"],
        host: str = "127.0.0.1",
        port: int | None = None,
        url: str | None = None,
        token: str | None = None,
        tls: TLSFiles | None = None,
        allowed_origins: Sequence[str] = (),
        reconnect_delay: float = 0.5,
    ) -> None:
        if mode not in ("server", "client"):
            raise ValueError(f"mode must be 'server' or 'client', not {mode!r}")
        if mode == "server" and (port is None or url is not None):
            raise ValueError("a WebSocket server takes host= and port= (0 for any free port)")
        if mode == "client" and url is None:
            raise ValueError("a WebSocket client takes url= (ws://host:port or wss://host:port)")
        if url is not None and not url.startswith(("ws://", "wss://")):
            raise ValueError(f"url must start with ws:// or wss://, not {url!r}")
        if url is not None and url.startswith("ws://") and tls is not None:
            raise ValueError("tls= needs a wss:// url")
        if token is not None and not token:
            raise ValueError("token must be a non-empty string, or None for no token")
        if not reconnect_delay > 0:
            raise ValueError(f"reconnect_delay must be a positive number, not {reconnect_delay!r}")
        if isinstance(allowed_origins, str):
            raise ValueError("allowed_origins must be a list of origins, even of one")
        if mode == "server" and token is None and not is_loopback(host):
            # Whoever reaches the port could run every tool.
            raise ValueError(f"a WebSocket server on {host} (beyond loopback) needs a token")
        self.mode: Literal["server", "client"] = mode
        """Which side of the link this connection is."""
        self.host = host.removeprefix("[").removesuffix("]")
        """Interface the server listens on (an IPv6 address without brackets)."""
        self.port = port
        """Port the server listens on (the real one once listening, when 0 was asked)."""
        self._url = url
        self.token = token
        """Shared secret the client must present, if any."""
        self.tls = tls
        """TLS files for WSS, if any."""
        self.allowed_origins = frozenset(allowed_origins)
        """Browser origins (``https://app.example``) the server accepts requests from."""
        self.reconnect_delay = reconnect_delay
        self._server: Server | None = None

    @property
    def url(self) -> str:
        """The address clients connect to."""
        if self._url is not None:
            return self._url
        scheme = "wss" if self.tls is not None else "ws"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}"

    async def listen(self, serve_session: SessionHandler) -> None:
        """Listen on ``host:port`` and serve every client that presents the token."""
        if self.mode != "server":
            await super().listen(serve_session)
        if self._server is not None:
            raise RuntimeError(f"already listening on {self.describe()}")
        expected = None if self.token is None else self.token.encode()

        def check_request(connection: ServerConnection, request: Request) -> Response | None:
            offered = request.headers.get_all("Sec-WebSocket-Protocol")
            if SUBPROTOCOL not in {p.strip() for line in offered for p in line.split(",")}:
                return connection.respond(
                    HTTPStatus.BAD_REQUEST,
                    f"an MCP client must offer the WebSocket subprotocol {SUBPROTOCOL!r} "
                    f"(Sec-WebSocket-Protocol: {SUBPROTOCOL})\n",
                )
            origin = request.headers.get("Origin")
            if origin is not None and origin not in self.allowed_origins:
                # A browser page (any site) opening a socket to us: never let it run tools.
                return connection.respond(HTTPStatus.FORBIDDEN, f"origin {origin} not allowed\n")
            if expected is None:
                return None
            given = request.headers.get("Authorization", "")
            scheme, _, value = given.partition(" ")
            # compare_digest: how long the comparison takes says nothing about the token.
            if scheme.lower() == "bearer" and hmac.compare_digest(value.encode(), expected):
                return None
            return connection.respond(HTTPStatus.UNAUTHORIZED, "missing or wrong token\n")

        async def accepted(websocket: ServerConnection) -> None:
            async with _frame_streams(websocket, None) as (read, write):
                await serve_session(read, write)

        self._server = await serve(
            accepted,
            self.host,
            self.port,
            process_request=check_request,
            subprotocols=[SUBPROTOCOL],  # type: ignore[list-item]
            ssl=self.tls.server_context() if self.tls is not None else None,
            max_size=MAX_MESSAGE_BYTES,
            compression=None,  # see _open
            server_header=None,
        )
        if self.port == 0:
            self.port = self._server.sockets[0].getsockname()[1]

    async def stop_listening(self) -> None:
        """Stop listening and close every client link."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
            await server.wait_closed()

    def open(self) -> AbstractAsyncContextManager[SessionStreams]:
        """Open a WebSocket to ``url``, presenting the token."""
        if self.mode != "client":
            return super().open()
        return self._open()

    @asynccontextmanager
    async def _open(self) -> AsyncIterator[SessionStreams]:
        headers = {} if self.token is None else {"Authorization": f"Bearer {self.token}"}
        self.end_reason = None
        try:
            websocket = await ws_connect(
                self.url,
                additional_headers=headers,
                subprotocols=[SUBPROTOCOL],  # type: ignore[list-item]
                ssl=self.tls.client_context() if self.tls is not None else None,
                max_size=MAX_MESSAGE_BYTES,
                # No permessage-deflate: deflating and inflating every JSON-RPC message
                # costs each side more CPU than the few hundred bytes it saves on a LAN.
                compression=None,
                proxy=None,  # loopback and LAN servers must not detour through a proxy
                open_timeout=10,
            )
        except InvalidStatus as exc:
            status = exc.response.status_code
            if status == HTTPStatus.UNAUTHORIZED:
                raise MCPConnectionError(
                    f"{self.describe()} refused the connection: missing or wrong token"
                ) from None
            if status == HTTPStatus.FORBIDDEN:
                raise MCPConnectionError(
                    f"{self.describe()} refused the connection: origin not allowed"
                ) from None
            body = exc.response.body.decode(errors="replace").strip()[:200]
            raise MCPConnectionError(
                f"{self.describe()} refused the connection: HTTP {status}"
                + (f": {body}" if body else "")
            ) from None
        except InvalidMessage:
            if self.url.startswith("wss://") and (self.tls is None or self.tls.cert is None):
                # A server demanding client certificates drops the link mid-handshake.
                raise MCPConnectionError(
                    f"{self.describe()} closed the connection during the handshake: it may "
                    "require a client certificate (TLSFiles(cert=..., key=...))"
                ) from None
            raise
        try:
            async with _frame_streams(websocket, self) as streams:
                yield streams
        finally:
            await websocket.close()

    def describe(self) -> str:
        """``websocket URL``, without any user, password or query string in it.

        This text ends up in errors an agent shows its model.
        """
        parts = urlsplit(self.url)
        host = parts.netloc.rpartition("@")[2]
        return f"websocket {urlunsplit((parts.scheme, host, parts.path, '', ''))}"


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, IPv6 with or without brackets) is loopback."""
    host = host.removeprefix("[").removesuffix("]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _frame_streams(
    websocket: ServerConnection | ClientConnection, client: Connection | None
) -> AbstractAsyncContextManager[SessionStreams]:
    async def receive() -> str | bytes | None:
        try:
            return await websocket.recv()
        except ConnectionClosed as exc:
            if client is not None:
                if exc.sent is not None and exc.sent.code == CloseCode.MESSAGE_TOO_BIG:
                    client.end_reason = TOO_BIG
                elif exc.rcvd is not None and exc.rcvd.code == CloseCode.MESSAGE_TOO_BIG:
                    client.end_reason = f"the server refused it: {TOO_BIG}"
            return None

    async def send(text: str) -> None:
        try:
            await websocket.send(text)
        except ConnectionClosed as exc:
            raise ConnectionError(str(exc)) from None

    return message_streams(receive, send)
