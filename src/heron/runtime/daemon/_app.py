"""The daemon's HTTP API: FastAPI routes over the :class:`Engine`, typed by ``heron.api``."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.routing import Match, Route
from starlette.types import ASGIApp

from ... import api
from ..._core.version import __version__
from ..events import add_event_routes
from ..nodes import Engine, add_node_routes
from ..server import (
    ApiError,
    BearerAuth,
    BodyLimit,
    BodyTooLarge,
    BrowserSessions,
    NotUnicode,
    UnicodeRoute,
)

__all__ = ["build_app", "wrap"]

log = logging.getLogger("heron.runtime")

_ERROR_CODES = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    413: BodyTooLarge.code,
    415: "unsupported_media_type",
}

ROUTES: tuple[Callable[[FastAPI, Engine], None], ...] = (add_node_routes, add_event_routes)
"""The kernel's ``add_*_routes(app, engine)``, added before the features' routes (each
feature's :meth:`~heron.runtime.nodes._feature.Feature.routes`, in their order).

(Routes are added to the app itself, not mounted as routers: the 405 answer's
``Allow`` header is worked out from ``app.routes``.)"""


def _error(
    status: int,
    code: str,
    message: str,
    details: Any = None,
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    body = api.ErrorResponse(error=api.ErrorBody(code=code, message=message, details=details))
    return JSONResponse(body.model_dump(mode="json"), status_code=status, headers=headers)


def _is_json(content_type: str | None) -> bool:
    """Whether FastAPI reads a body of this type as JSON (it needs the type to say so)."""
    if not content_type:
        return False
    kind = content_type.split(";", 1)[0].strip().lower()
    return kind == "application/json" or (
        kind.startswith("application/") and kind.endswith("+json")
    )


def _allowed_methods(request: Request) -> list[str]:
    """Every method some route serves at this path.

    Starlette's own ``Allow`` names only the first route matching the path, and
    ``GET`` and ``POST /v1/nodes`` are two routes.
    """
    methods: set[str] = set()
    for route in request.app.routes:
        match, _ = route.matches(request.scope)
        if match is not Match.NONE and isinstance(route, Route | APIRoute) and route.methods:
            methods |= route.methods
    return sorted(methods)


def _install_error_handlers(app: FastAPI) -> None:
    """Answer every refusal as ``{"error": {code, message, details}}``, never a bare 500."""

    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return _error(exc.status, exc.code, exc.message, exc.details)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [
            {"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")}
            for e in exc.errors()
        ]
        if any(e["type"] == "json_invalid" for e in errors):
            return _error(400, "malformed_json", "the request body is not valid JSON", errors)
        content_type = request.headers.get("content-type")
        if not _is_json(content_type) and any(e["loc"][:1] == ["body"] for e in errors):
            # FastAPI hands a body not declared JSON over as raw bytes: say why it was not read.
            given = content_type or "no Content-Type"
            message = f"the body must be sent as Content-Type: application/json, not {given}"
            return _error(415, "unsupported_media_type", message)
        return _error(422, "invalid_request", "the request does not match the schema", errors)

    @app.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException) -> JSONResponse:
        if isinstance(exc, BodyTooLarge):
            return _error(413, exc.code, exc.detail, exc.details)
        if isinstance(exc, NotUnicode):
            return _error(400, exc.code, exc.detail, {"loc": ["body", *exc.where]})
        where = f"{request.method} {request.url.path}"
        headers = dict(exc.headers or {})
        message = str(exc.detail)
        if exc.status_code == 404:
            message = f"no route for {where}"
        elif exc.status_code == 405:
            headers["Allow"] = ", ".join(_allowed_methods(request))
            message = f"{where}: method not allowed (allowed: {headers['Allow']})"
        code = _ERROR_CODES.get(exc.status_code, "bad_request")
        return _error(exc.status_code, code, message, headers=headers)

    @app.exception_handler(Exception)
    async def _crash(request: Request, exc: Exception) -> JSONResponse:
        # Starlette still re-raises after this answer, so the traceback reaches the log.
        log.error("%s %s failed: %r", request.method, request.url.path, exc)
        return _error(500, "internal_error", f"the daemon failed: {type(exc).__name__}")


def _not_null(parameter: dict[str, Any]) -> None:
    """A path, query or header parameter cannot be JSON ``null``: an optional one is left
    out. FastAPI documents ``X | None`` as ``anyOf: [X, null]``, which a client could
    take for leave to send the text ``null``: only ``X`` is kept."""
    schema = parameter.get("schema", {})
    branches = schema.get("anyOf")
    if not isinstance(branches, list):
        return
    kept = [b for b in branches if b != {"type": "null"}]
    if len(kept) == 1 and len(kept) < len(branches):
        del schema["anyOf"]
        schema.update({**kept[0], **schema})


def _own_validation_errors(app: FastAPI) -> None:
    """Keep FastAPI's stock 422 (``HTTPValidationError``) out of the spec.

    FastAPI documents it on every route with parameters; this daemon never
    sends that shape (its 422 is an ``ErrorResponse``, documented where a 422
    can happen), so a client generated from the spec must not expect it.
    """
    stock = "#/components/schemas/HTTPValidationError"
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        spec = generate()
        for operations in spec.get("paths", {}).values():
            for operation in operations.values():
                answer = operation.get("responses", {}).get("422", {})
                schema = answer.get("content", {}).get("application/json", {}).get("schema", {})
                if schema.get("$ref") == stock:
                    del operation["responses"]["422"]
                for parameter in operation.get("parameters", []):
                    _not_null(parameter)
        schemas = spec.get("components", {}).get("schemas", {})
        for name in ("HTTPValidationError", "ValidationError"):
            schemas.pop(name, None)
        app.openapi_schema = spec
        return spec

    app.openapi = openapi  # type: ignore[method-assign]


def build_app(engine: Engine) -> FastAPI:
    """The FastAPI application serving ``engine`` (auth and limits are added by :func:`wrap`)."""
    app = FastAPI(
        title="Heron daemon",
        version=__version__,
        description="Run agents as durable nodes: create, watch, message and collect outcomes.",
        # No /docs or /redoc: FastAPI's pages load their scripts from a CDN, which a daemon
        # offline cannot reach. The spec itself is served at /openapi.json.
        docs_url=None,
        redoc_url=None,
    )
    # Every route refuses JSON strings that are not text before any handler runs.
    app.router.route_class = UnicodeRoute
    _install_error_handlers(app)
    _own_validation_errors(app)

    for add_routes in ROUTES:
        add_routes(app, engine)
    for feature in engine.features:
        feature.routes(app)
    return app


def wrap(
    app: ASGIApp,
    *,
    token: str | None,
    max_body_bytes: int,
    body_limits: Mapping[str, int] | None = None,
    sessions: BrowserSessions | None = None,
) -> ASGIApp:
    """``app`` behind the body limit, TCP auth (the bearer ``token``, the page's browser
    ``sessions``) and (with a token) CORS.

    ``body_limits``: the routes (by path) whose legal bodies can be larger than
    ``max_body_bytes`` (a file write's JSON): they get room enough, and refuse content
    over their own limit themselves.
    """
    limits = {path: max(max_body_bytes, limit) for path, limit in (body_limits or {}).items()}
    wrapped: ASGIApp = BodyLimit(app, max_body_bytes, limits)
    wrapped = BearerAuth(wrapped, token, sessions)
    if token:
        # A browser reaches the daemon only over TCP, where the token is the credential.
        wrapped = CORSMiddleware(
            wrapped,
            allow_origins=["*"],
            allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
            allow_headers=["authorization", "content-type", "last-event-id"],
            expose_headers=["heron-next-cursor"],  # a page of GET /v1/nodes?limit=
        )
    return wrapped
