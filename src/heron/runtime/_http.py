"""ASGI middleware: body limits, and bearer-token auth on the TCP listener.

One server listens on both the Unix socket (authenticated by filesystem
permission: mode 0600) and, when enabled, TCP. A request arrived over TCP when
its ``server`` address has a port; those must carry ``Authorization: Bearer``.
"""

from __future__ import annotations

import hmac
import json
from typing import Any

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["BearerAuth", "BodyLimit", "error_body", "over_tcp"]


def over_tcp(scope: Scope) -> bool:
    """Whether the request came over TCP rather than the Unix socket."""
    server = scope.get("server")
    return not (isinstance(server, tuple | list) and len(server) == 2 and server[1] is None)


def error_body(code: str, message: str, details: Any = None) -> bytes:
    """The JSON of an error response."""
    return json.dumps({"error": {"code": code, "message": message, "details": details}}).encode()


async def _reply(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class BearerAuth:
    """Refuse TCP requests without the right ``Authorization: Bearer <token>`` (401)."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self._token = token.encode() if token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not over_tcp(scope):
            await self.app(scope, receive, send)
            return
        given = b""
        for name, value in scope["headers"]:
            if name == b"authorization":
                given = value
                break
        scheme, _, token = given.partition(b" ")
        ok = (
            self._token is not None
            and scheme.lower() == b"bearer"
            and hmac.compare_digest(token.strip(), self._token)
        )
        if not ok:
            message = (
                "this listener needs Authorization: Bearer <token> (see `heron sys connect`)"
                if not given
                else "the bearer token is not valid for this daemon"
            )
            await _reply(
                send,
                401,
                error_body("unauthorized", message),
                [(b"www-authenticate", b'Bearer realm="heron"')],
            )
            return
        await self.app(scope, receive, send)


class BodyLimit:
    """Refuse request bodies over ``limit`` bytes with 413, declared or streamed."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope["headers"]:
            if name == b"content-length":
                if not value.isdigit() or int(value) > self.limit:
                    await self._too_large(send)
                    return
                break
        received = 0
        started = False

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise _TooLarge()
            return message

        async def tracking(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited, tracking)
        except _TooLarge:
            if not started:
                await self._too_large(send)

    async def _too_large(self, send: Send) -> None:
        body = error_body(
            "body_too_large",
            f"the request body is over the limit of {self.limit} bytes",
            {"limit": self.limit},
        )
        await _reply(send, 413, body, [(b"connection", b"close")])


class _TooLarge(HTTPException):
    """A streamed body passed the limit (the app's handler answers 413)."""

    def __init__(self) -> None:
        super().__init__(413, "the request body is too large")
