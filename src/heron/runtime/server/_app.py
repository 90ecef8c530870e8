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
from ..canvas._routes import add_canvas_routes
from ..crons._routes import add_cron_routes
from ..events._routes import add_event_routes
from ..files._routes import add_bash_routes, add_files_routes
from ..files._service import WRITE_BODY_LIMIT
from ..human._routes import add_human_routes
from ..jobs._routes import add_jobs_routes
from ..kinds._routes import add_kind_routes
from ..lineage._routes import add_lineage_routes
from ..memory._routes import add_memory_routes
from ..models._readiness import add_auth_routes
from ..models._routes import add_model_routes
from ..nodes._engine import Engine
from ..nodes._routes import add_node_routes
from ..orchestration._routes import add_orchestration_routes
from ..profiles._routes import add_profile_routes
from ..reports._routes import add_report_routes
from ..worktrees._routes import add_worktrees_routes
from ._errors import ApiError
from ._http import BearerAuth, BodyLimit, BodyTooLarge, NotUnicode, UnicodeRoute

__all__ = ["build_app", "wrap"]

log = logging.getLogger("heron.runtime")

_ERROR_CODES = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    413: BodyTooLarge.code,
    415: "unsupported_media_type",
}

ROUTES: tuple[Callable[[FastAPI, Engine], None], ...] = (
    add_node_routes,
    add_event_routes,
    add_lineage_routes,
    add_jobs_routes,
    add_worktrees_routes,
    add_kind_routes,
    add_profile_routes,
    add_orchestration_routes,
    add_report_routes,
    add_canvas_routes,
    add_memory_routes,
    add_cron_routes,
    add_auth_routes,
    add_files_routes,
    add_bash_routes,
    add_model_routes,
    add_human_routes,
)
"""Every route module's ``add_*_routes(app, engine)``, in the order they are added.

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
    return app


def wrap(app: ASGIApp, *, token: str | None, max_body_bytes: int) -> ASGIApp:
    """``app`` behind the body limit, TCP bearer auth and (with a token) CORS."""
    # A legal file write's JSON can be larger than the daemon's limit: that route
    # gets room enough, and itself refuses content over its own limit.
    wrapped: ASGIApp = BodyLimit(
        app,
        max_body_bytes,
        {"/v1/files/write": max(max_body_bytes, WRITE_BODY_LIMIT)},
    )
    wrapped = BearerAuth(wrapped, token)
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
