"""ASGI middleware: body limits, and auth on the TCP listener.

One server listens on both the Unix socket (authenticated by filesystem
permission: mode 0600) and, when enabled, TCP. A request arrived over TCP when
its ``server`` address has a port; those must carry ``Authorization: Bearer``, or
be a browser's with a live session cookie (:class:`BrowserSessions`, the daemon's
page): then a request that changes anything must also carry the session's CSRF
token in ``X-Heron-CSRF`` and, if it says where it comes from, come from the
daemon's own origin.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import re
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from fastapi import Request, Response
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "CSRF_HEADER",
    "BearerAuth",
    "BodyLimit",
    "BodyTooLarge",
    "BrowserSessions",
    "NotUnicode",
    "UnicodeRoute",
    "error_body",
    "over_tcp",
]


def over_tcp(scope: Scope) -> bool:
    """Whether the request came over TCP rather than the Unix socket.

    uvicorn reports a Unix socket's ``server`` as ``(path, None)`` and a TCP
    one's as ``(host, port)``. Anything else (no ``server`` at all) counts as
    TCP, so a request of unknown origin must carry the token: fail closed.
    """
    server = scope.get("server")
    return not (isinstance(server, tuple | list) and len(server) == 2 and server[1] is None)


def error_body(code: str, message: str, details: Any = None) -> bytes:
    """The JSON of an error response (compact, as FastAPI writes the app's own errors)."""
    body = {"error": {"code": code, "message": message, "details": details}}
    return json.dumps(body, separators=(",", ":")).encode()


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


CSRF_HEADER = "X-Heron-CSRF"
"""The header a browser session's requests that change anything carry its CSRF token in."""

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

_NO_CREDENTIAL = "this listener needs Authorization: Bearer <token> (see `heron sys connect`)"


class BrowserSessions(Protocol):
    """The sessions of browsers signed in to the daemon's page (its feature supplies them)."""

    def cookie_name(self, port: int) -> str:
        """The session cookie's name on the TCP listener at ``port`` (cookies are per host,
        not per port: two daemons on one host must not read each other's)."""
        ...

    def csrf_token(self, session: str) -> str | None:
        """The CSRF token of the live session ``session`` names; ``None`` if none is."""
        ...

    def is_public(self, path: str) -> bool:
        """Whether ``path`` is served without any credential (the sign-in itself)."""
        ...

    def refusal_page(self, path: str) -> bytes | None:
        """The HTML a browser opening ``path`` without a session is shown (``None``: the
        JSON answer)."""
        ...


def _cookie(header: bytes, name: str) -> str | None:
    """The value of cookie ``name`` in a ``Cookie`` header, if it has one."""
    wanted = name.encode()
    for part in header.split(b";"):
        key, sep, value = part.strip().partition(b"=")
        if sep and key == wanted:
            return value.decode("latin-1")
    return None


def _same_origin(origin: bytes, host: bytes) -> bool:
    """Whether an ``Origin`` header names the daemon's own listener (``Host``)."""
    return origin in (b"http://" + host, b"https://" + host)


class BearerAuth:
    """Refuse TCP requests without the right ``Authorization: Bearer <token>`` or a live
    browser session (401), and a session's changes without its CSRF token (403)."""

    def __init__(
        self, app: ASGIApp, token: str | None, sessions: BrowserSessions | None = None
    ) -> None:
        self.app = app
        self._token = token.encode() if token else None
        self._sessions = sessions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not over_tcp(scope):
            await self.app(scope, receive, send)
            return
        headers = dict(reversed(scope["headers"]))  # (a repeated header: its first value)
        given = headers.get(b"authorization", b"")
        sessions = self._sessions
        if sessions is not None and not given:
            if sessions.is_public(scope.get("path", "")):
                await self.app(scope, receive, send)
                return
            if b"cookie" in headers and await self._session(scope, headers, send, sessions):
                scope["heron.auth"] = "session"  # (a route may refuse the page's session)
                await self.app(scope, receive, send)
            elif b"cookie" not in headers:
                await self._refuse(send, scope, _NO_CREDENTIAL)
            return
        await self._bearer(scope, receive, send, given)

    async def _session(
        self, scope: Scope, headers: dict[bytes, bytes], send: Send, sessions: BrowserSessions
    ) -> bool:
        """Whether the request's session lets it through (else the refusal is sent)."""
        server = scope.get("server")
        port = server[1] if isinstance(server, tuple | list) and len(server) == 2 else 0
        session = _cookie(headers[b"cookie"], sessions.cookie_name(int(port or 0)))
        csrf = sessions.csrf_token(session) if session else None
        if csrf is None:
            await self._refuse(
                send,
                scope,
                "the page's session has ended or is not valid: run `heron ui` to sign in again",
            )
            return False
        if scope.get("method", "GET") in _SAFE_METHODS:
            return True
        origin = headers.get(b"origin")
        if origin is not None and not _same_origin(origin, headers.get(b"host", b"")):
            message = f"a request from {origin.decode('latin-1')} may not change this daemon"
            await _reply(send, 403, error_body("csrf_refused", message), [])
            return False
        sent = headers.get(CSRF_HEADER.lower().encode(), b"")
        if not hmac.compare_digest(sent.strip(), csrf.encode()):
            message = f"a change made with the page's session needs its {CSRF_HEADER} header"
            await _reply(send, 403, error_body("csrf_refused", message), [])
            return False
        return True

    async def _refuse(self, send: Send, scope: Scope, message: str) -> None:
        page = None
        if self._sessions is not None and scope.get("method") in ("GET", "HEAD"):
            page = self._sessions.refusal_page(scope.get("path", ""))
        if page is not None:
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"text/html; charset=utf-8"),
                        (b"content-length", str(len(page)).encode()),
                        (b"cache-control", b"no-store"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": page})
            return
        await _reply(
            send,
            401,
            error_body("unauthorized", message),
            [(b"www-authenticate", b'Bearer realm="heron"')],
        )

    async def _bearer(self, scope: Scope, receive: Receive, send: Send, given: bytes) -> None:
        scheme, _, token = given.partition(b" ")
        ok = (
            self._token is not None
            and scheme.lower() == b"bearer"
            and hmac.compare_digest(token.strip(), self._token)
        )
        if not ok:
            if not given:
                message = _NO_CREDENTIAL
            elif scheme.lower() != b"bearer":
                message = "the Authorization header must read `Bearer <token>`"
            elif self._token is None:
                message = "this daemon takes no bearer token on TCP (its page signs in: `heron ui`)"
            else:
                message = "the bearer token is not valid for this daemon"
            await self._refuse(send, scope, message)
            return
        await self.app(scope, receive, send)


DRAIN_BYTES = 32 * 1024 * 1024
"""At most this much of a refused body is read (and dropped) before the 413 goes out."""
DRAIN_SECONDS = 5.0
"""At most this long is spent reading a refused body."""
DRAIN_IDLE = 0.2
"""A refused body's reading stops once no more of it has come for this long."""


async def _drain(receive: Receive, already: int = 0) -> None:
    """Read and drop what is left of a refused request body, within bounds.

    The answer to a body that is too large goes out before the body is read, and the
    connection closes after it: a socket closed with unread bytes in it is reset, and a
    client still sending loses the answer with it. Reading what the client sends
    promptly (up to :data:`DRAIN_BYTES`, for :data:`DRAIN_SECONDS`) lets the 413 arrive;
    a client that sends nothing more (only its headers) waits :data:`DRAIN_IDLE`.
    """
    loop = asyncio.get_running_loop()
    end = loop.time() + DRAIN_SECONDS
    read = already
    while read < DRAIN_BYTES:
        left = end - loop.time()
        if left <= 0:
            return
        try:
            message = await asyncio.wait_for(receive(), min(DRAIN_IDLE, left))
        except TimeoutError:
            return
        if message["type"] != "http.request":
            return  # the client went away
        read += len(message.get("body", b""))
        if not message.get("more_body", False):
            return


class BodyLimit:
    """Refuse request bodies over ``limit`` bytes with 413, declared or streamed.

    ``per_path`` sets another limit for the routes at those exact paths. What the client
    sends of a refused body is read first, within bounds (see :func:`_drain`), so the
    answer is not lost to a reset connection.
    """

    def __init__(self, app: ASGIApp, limit: int, per_path: dict[str, int] | None = None) -> None:
        self.app = app
        self.limit = limit
        self.per_path = dict(per_path or {})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.per_path.get(scope.get("path", ""), self.limit)
        declared: bytes | None = None
        expects_continue = False
        for name, value in scope["headers"]:
            if name == b"content-length":
                declared = value
            elif name == b"expect":
                expects_continue = value.lower() == b"100-continue"
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            # A client waiting for "100 Continue" has sent no body: nothing to read.
            if not expects_continue:
                await _drain(receive)
            await self._too_large(send, limit)
            return
        received = 0
        started = False

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    if message.get("more_body", False):
                        await _drain(receive, received)
                    raise BodyTooLarge(limit)
            return message

        async def tracking(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited, tracking)
        except BodyTooLarge:
            # Raised where no handler turned it into the answer (the app had not started one).
            if not started:
                await self._too_large(send, limit)

    async def _too_large(self, send: Send, limit: int) -> None:
        error = BodyTooLarge(limit)
        body = error_body(error.code, error.detail, error.details)
        await _reply(send, 413, body, [(b"connection", b"close")])


class BodyTooLarge(HTTPException):
    """A request body over the limit: declared up front, or found while it streamed in.

    Raised from ``receive`` inside the app, it reaches the app's exception
    handlers, which answer 413 with the same body as :class:`BodyLimit` does.
    """

    code = "body_too_large"
    """The error code of the 413 answer."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"the request body is over the limit of {limit} bytes")
        self.limit = limit
        """The largest body accepted, in bytes."""

    @property
    def details(self) -> dict[str, int]:
        """The error's ``details``: the limit."""
        return {"limit": self.limit}


# What can put a lone UTF-16 surrogate in a parsed body: a ``\\udXXX`` escape (JSON
# allows one unpaired), surrogates encoded as UTF-8 bytes (``json.loads`` decodes
# bytes with ``surrogatepass``), or a UTF-16/32 body (a NUL among the first bytes).
_MAYBE_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]|^.{0,3}\x00", re.DOTALL)


class NotUnicode(HTTPException):
    """A JSON body holding a string that is not Unicode text (a lone surrogate).

    Python reads such a string without complaint, but no database or encoder
    can write it: refused at the door (``400 malformed_json``), nothing is kept.
    """

    code = "malformed_json"
    """The error code of the 400 answer."""

    def __init__(self, where: list[str | int]) -> None:
        # A key may be the culprit: shown escaped, as the answer must be text itself.
        where = [
            p if isinstance(p, int) else p.encode("utf-8", "backslashreplace").decode()
            for p in where
        ]
        at = "/".join(str(part) for part in where) or "the body"
        super().__init__(
            400,
            f"the request body is not valid JSON text: {at} holds a lone UTF-16 surrogate"
            " (an unpaired \\ud800-\\udfff escape), which is not a Unicode character",
        )
        self.where = where


def _lone_surrogate(value: Any, where: list[str | int]) -> list[str | int] | None:
    """Where in parsed JSON ``value`` a string (or key) is not encodable text, if anywhere."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return where
        return None
    if not isinstance(value, dict | list):
        return None
    items: Any = value.items() if isinstance(value, dict) else enumerate(value)
    for key, item in items:
        if isinstance(key, str) and _lone_surrogate(key, where) is not None:
            return [*where, key]
        found = _lone_surrogate(item, [*where, key])
        if found is not None:
            return found
    return None


def _number(text: str) -> int | float:
    """A JSON number with a fraction or exponent: an ``int`` if it is a whole number
    (``3.0``, ``1e3``), as JSON Schema's ``integer`` counts it, else a ``float``."""
    number = float(text)
    return int(number) if number.is_integer() else number


def _fixed_paths(app: Any) -> frozenset[str]:
    """The paths of ``app``'s routes that take no parameter (worked out once per app)."""
    found: frozenset[str] | None = getattr(app.state, "fixed_paths", None)
    if found is None:
        found = frozenset(
            route.path
            for route in app.router.routes
            if isinstance(route, APIRoute) and not route.param_convertors
        )
        app.state.fixed_paths = found
    return found


class UnicodeRoute(APIRoute):
    """A route refusing a JSON body whose strings are not all Unicode text.

    A cheap byte scan finds the bodies that could hold one; only those are read
    twice (the request caches the body, so the handler does not read it again).

    A route with a path parameter never matches a path that a route of its own
    serves (``/v1/crons/{cron_id}`` does not take ``poke`` for an id): a method the
    fixed path lacks answers 405 with the fixed path's ``Allow``, as the spec has it.
    """

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        """Starlette's match, but none for a path that a parameterless route has."""
        match, child = super().matches(scope)
        app = scope.get("app")
        if (
            match is not Match.NONE
            and self.param_convertors
            and app is not None
            and scope.get("path") in _fixed_paths(app)
        ):
            return Match.NONE, {}
        return match, child

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def checked(request: Request) -> Response:
            if request.method in ("POST", "PUT", "PATCH", "DELETE"):
                body = await request.body()
                value: Any = None
                try:
                    # Parsed here for the handler (the request keeps it): JSON has one
                    # kind of number, so 3.0 is the integer 3, as the schema says.
                    value = request._json = json.loads(body, parse_float=_number)
                except ValueError:
                    pass  # not JSON: the handler answers for that
                if _MAYBE_SURROGATE.search(body):
                    where = _lone_surrogate(value, [])
                    if where is not None:
                        raise NotUnicode(where)
            return await handler(request)

        return checked
