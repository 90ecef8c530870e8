"""The page's routes: sign-in (``/ui/login``), the session (``/ui/session``, ``/ui/logout``),
the page's files (``/ui/…``), and ``POST /v1/ui/open`` for ``heron ui``."""

from __future__ import annotations

import mimetypes
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from fastapi import Body, FastAPI, Query, Request
from fastapi.responses import FileResponse, JSONResponse, RedirectResponse, Response

from ... import api
from ..._core.version import __version__
from ..server import ApiError, errors
from ._sessions import LOGIN_PATH, PAGE_ROOT, message_page

if TYPE_CHECKING:
    from ._service import Page

__all__ = ["SECURITY_HEADERS", "STATIC", "add_page_routes"]

STATIC = Path(__file__).parent / "static"
"""The page's files, shipped in the wheel."""

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
        "form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
"""Sent with every answer under ``/ui``: nothing but the daemon's own files runs, the page
is never framed, and no address (a sign-in code) leaks in a Referer."""

_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".woff2": "font/woff2",
    ".txt": "text/plain; charset=utf-8",
}

_MAX_PATH = 512


def _page(title: str, text: str, status: int) -> Response:
    return Response(
        message_page(title, text),
        status_code=status,
        media_type="text/html; charset=utf-8",
        headers={**SECURITY_HEADERS, "Cache-Control": "no-store"},
    )


def _file(relative: str) -> Response:
    """One of the page's files, or ``404 not_found`` (never a file outside the folder)."""
    if len(relative) > _MAX_PATH or "\x00" in relative:
        raise ApiError(404, "not_found", "no such file of the page")
    root = STATIC.resolve()
    path = (root / relative).resolve()
    if not path.is_relative_to(root) or not path.is_file():
        raise ApiError(404, "not_found", f"no such file of the page: {relative}")
    kind = _TYPES.get(path.suffix.lower()) or mimetypes.guess_type(path.name)[0]
    return FileResponse(
        path,
        media_type=kind or "application/octet-stream",
        headers={**SECURITY_HEADERS, "Cache-Control": "no-cache"},
    )


def _listener_port(request: Request) -> int:
    server = request.scope.get("server")
    if isinstance(server, tuple | list) and len(server) == 2 and server[1] is not None:
        return int(server[1])
    return 0


def add_page_routes(app: FastAPI, page: Page) -> None:
    """Serve the page and its sign-in over ``page``."""
    sessions = page.sessions

    @app.post(
        "/v1/ui/open",
        tags=["system"],
        responses=errors(400, 403, 409, 413, 415, 422, 503),
    )
    async def open_page(
        request: Request,
        body: Annotated[api.PageOpenRequest, Body()] = api.PageOpenRequest(),  # noqa: B008
    ) -> api.PageOpen:
        """Make the daemon's page reachable (a loopback TCP listener if the daemon has none)
        and mint a one-time sign-in link for a browser. Not for the page itself."""
        if request.scope.get("heron.auth") == "session":
            raise ApiError(403, "forbidden", "a page's session cannot mint sign-in links")
        return await page.open(body)

    @app.get(PAGE_ROOT, include_in_schema=False)
    async def page_root() -> Response:
        return RedirectResponse(PAGE_ROOT + "/", status_code=308, headers=SECURITY_HEADERS)

    @app.get(LOGIN_PATH, include_in_schema=False)
    async def login(request: Request, code: Annotated[str, Query(max_length=128)] = "") -> Response:
        session = sessions.sign_in(code) if code else None
        if session is None:
            return _page(
                "This sign-in link is not valid",
                "It was used already, has expired, or was mistyped. Run `heron ui` again "
                "for a new one.",
                401,
            )
        answer = RedirectResponse(
            PAGE_ROOT + "/",
            status_code=303,
            headers={**SECURITY_HEADERS, "Cache-Control": "no-store"},
        )
        answer.set_cookie(
            sessions.cookie_name(_listener_port(request)),
            session.secret,
            max_age=int(session.expires_at - page.clock()),
            path="/",
            httponly=True,
            samesite="strict",
        )
        return answer

    @app.get(PAGE_ROOT + "/session", include_in_schema=False)
    async def session_info(request: Request) -> JSONResponse:
        found = None
        secret = request.cookies.get(sessions.cookie_name(_listener_port(request)))
        if secret:
            found = sessions.session(secret)
        if found is None:
            raise ApiError(401, "unauthorized", "no page session: run `heron ui` to sign in")
        body = api.PageSession(
            csrf_token=found.csrf_token, version=__version__, expires_at=found.expires_at
        )
        return JSONResponse(
            body.model_dump(mode="json"), headers={**SECURITY_HEADERS, "Cache-Control": "no-store"}
        )

    @app.post(PAGE_ROOT + "/logout", include_in_schema=False)
    async def logout(request: Request) -> Response:
        name = sessions.cookie_name(_listener_port(request))
        secret = request.cookies.get(name)
        if secret:
            sessions.sign_out(secret)
        answer = Response(status_code=204, headers=SECURITY_HEADERS)
        answer.delete_cookie(name, path="/", httponly=True, samesite="strict")
        return answer

    @app.get(PAGE_ROOT + "/", include_in_schema=False)
    async def index() -> Response:
        return _file("index.html")

    @app.get(PAGE_ROOT + "/{relative:path}", include_in_schema=False)
    async def asset(relative: str) -> Response:
        return _file(relative)
