"""The daemon's HTTP API: FastAPI routes over the :class:`Engine`, typed by ``heron.api``."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Annotated, Any

from fastapi import Body, FastAPI, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.routing import Match, Route
from starlette.types import ASGIApp

from .. import __version__, api
from ._engine import Engine
from ._errors import ApiError
from ._http import BearerAuth, BodyLimit, BodyTooLarge

__all__ = ["build_app", "wrap"]

log = logging.getLogger("heron.runtime")

_STATUS_TEXT = {
    400: "Malformed request: the body is not JSON, or an id is not a valid id",
    401: "Missing or wrong bearer token (TCP listener only)",
    404: "No such node",
    409: "The node's state does not allow it, or its id is taken",
    413: "Request body over the daemon's limit",
    415: "The body is not JSON (send Content-Type: application/json)",
    422: "The request does not match the schema",
}

_ERROR_CODES = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    413: BodyTooLarge.code,
    415: "unsupported_media_type",
}


def _errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The error answers a route documents; 401 (TCP without the token) applies to all."""
    return {
        status: {"model": api.ErrorResponse, "description": _STATUS_TEXT[status]}
        for status in sorted({401, *statuses})
    }


_READ = _errors(400, 404)
"""A route reading one node."""
_ACTION = _errors(400, 404, 409)
"""A bodiless action on one node."""
_WITH_BODY = _errors(400, 404, 409, 413, 415, 422)
"""A route taking a JSON body about one node."""

NodeIdPath = Annotated[
    str,
    Path(
        description="The node's id (letters, digits, `_`, `.`, `-`; up to 128).",
        # Documented, but checked by the engine: a bad id answers 400 invalid_node_id.
        json_schema_extra={"pattern": api.ID_PATTERN},
    ),
]
Wait = Annotated[int, Query(ge=0, le=25, description="Seconds to hold the poll open (0-25).")]


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
    )
    _install_error_handlers(app)
    _own_validation_errors(app)

    @app.get("/healthz", tags=["system"], responses=_errors())
    async def healthz() -> api.Health:
        """Liveness: answers as soon as the daemon serves requests."""
        return api.Health(version=__version__)

    @app.get("/v1/status", tags=["system"], responses=_errors())
    async def status() -> api.SystemStatus:
        """Version, uptime, node counts by status, database and listeners."""
        return await engine.status()

    @app.post("/v1/nodes", status_code=201, tags=["nodes"], responses=_WITH_BODY)
    async def create_node(
        request: Annotated[api.NodeCreateRequest, Body()] = api.NodeCreateRequest(),  # noqa: B008
    ) -> api.Node:
        """Create a node; it is already running when this returns."""
        return await engine.create(request)

    @app.get("/v1/nodes", tags=["nodes"], responses=_errors(422))
    async def list_nodes(
        status: Annotated[list[api.NodeStatus] | None, Query()] = None,
        root: bool | None = None,
    ) -> list[api.Node]:
        """Every node, oldest first (a plain array), optionally by status and root."""
        return await engine.nodes(status=list(status) if status else None, root=root)

    @app.get("/v1/nodes/{node_id}", tags=["nodes"], responses=_READ)
    async def get_node(node_id: NodeIdPath) -> api.Node:
        """One node."""
        return await engine.node(node_id)

    @app.get("/v1/nodes/{node_id}/outcome", tags=["nodes"], responses=_errors(400, 404, 422))
    async def outcome(node_id: NodeIdPath, wait: Wait = 0) -> api.OutcomePoll:
        """One long poll: answers when the node settles or after ``wait`` seconds."""
        return await engine.outcome(node_id, wait)

    @app.post("/v1/nodes/{node_id}/messages", status_code=202, tags=["nodes"], responses=_WITH_BODY)
    async def message(node_id: NodeIdPath, body: api.MessageRequest) -> api.MessageAccepted:
        """Send a follow-up: a dormant node wakes; a running one reads it next turn."""
        return await engine.message(node_id, body.body)

    @app.post("/v1/nodes/{node_id}/interrupt", tags=["nodes"], responses=_ACTION)
    async def interrupt(node_id: NodeIdPath) -> api.Node:
        """Stop the current turn and keep the node."""
        return await engine.interrupt(node_id)

    @app.post("/v1/nodes/{node_id}/close", tags=["nodes"], responses=_WITH_BODY)
    async def close(
        node_id: NodeIdPath,
        body: Annotated[api.CloseRequest | None, Body()] = None,
    ) -> api.Node:
        """Cancel the node and the subtree it owns (terminal)."""
        return await engine.close(node_id, body.reason if body is not None else None)

    @app.patch("/v1/nodes/{node_id}/config", tags=["nodes"], responses=_WITH_BODY)
    async def update_config(node_id: NodeIdPath, patch: api.NodeConfigPatch) -> api.Node:
        """Change the node's model, name, description or deadline."""
        return await engine.update_config(node_id, patch)

    @app.post("/v1/nodes/{node_id}/result", tags=["nodes"], responses=_WITH_BODY)
    async def submit_result(node_id: NodeIdPath, body: api.ResultSubmission) -> api.ResultAccepted:
        """The node's structured result (what its ``submit-result`` tool sends)."""
        return await engine.submit_result(node_id, body.result)

    return app


def wrap(app: ASGIApp, *, token: str | None, max_body_bytes: int) -> ASGIApp:
    """``app`` behind the body limit, TCP bearer auth and (with a token) CORS."""
    wrapped: ASGIApp = BodyLimit(app, max_body_bytes)
    wrapped = BearerAuth(wrapped, token)
    if token:
        # A browser reaches the daemon only over TCP, where the token is the credential.
        wrapped = CORSMiddleware(
            wrapped,
            allow_origins=["*"],
            allow_methods=["GET", "POST", "PATCH", "DELETE", "OPTIONS"],
            allow_headers=["authorization", "content-type", "last-event-id"],
        )
    return wrapped
