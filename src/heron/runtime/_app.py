"""The daemon's HTTP API: FastAPI routes over the :class:`Engine`, typed by ``heron.api``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Body, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp

from .. import __version__, api
from ._engine import Engine
from ._errors import ApiError
from ._http import BearerAuth, BodyLimit

__all__ = ["build_app"]

_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": api.ErrorResponse, "description": text}
    for status, text in [
        (400, "Malformed request (bad JSON, invalid id)"),
        (401, "Missing or wrong bearer token (TCP only)"),
        (404, "No such node"),
        (405, "Method not allowed"),
        (409, "The node's state does not allow it"),
        (413, "Request body too large"),
        (422, "Request does not match the schema"),
    ]
}

NodeIdPath = Annotated[str, "node id"]
Wait = Annotated[int, Query(ge=0, le=25, description="Seconds to hold the poll open (0-25).")]


def _error(status: int, code: str, message: str, details: Any = None) -> JSONResponse:
    body = api.ErrorResponse(error=api.ErrorBody(code=code, message=message, details=details))
    return JSONResponse(body.model_dump(mode="json"), status_code=status)


def build_app(engine: Engine) -> FastAPI:
    """The FastAPI application serving ``engine`` (auth and limits are added by :func:`wrap`)."""
    app = FastAPI(
        title="Heron daemon",
        version=__version__,
        description="Run agents as durable nodes: create, watch, message and collect outcomes.",
        responses=_ERRORS,
    )

    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return _error(exc.status, exc.code, exc.message, exc.details)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [
            {"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")}
            for e in exc.errors()
        ]
        if any(e["type"] == "json_invalid" for e in errors):
            return _error(400, "malformed_json", "the request body is not valid JSON", errors)
        return _error(422, "invalid_request", "the request does not match the schema", errors)

    @app.exception_handler(HTTPException)
    async def _http(_: Request, exc: HTTPException) -> JSONResponse:
        codes = {404: "not_found", 405: "method_not_allowed", 413: "body_too_large"}
        code = codes.get(exc.status_code, "bad_request")
        return _error(exc.status_code, code, str(exc.detail))

    @app.get("/healthz", tags=["system"])
    async def healthz() -> api.Health:
        """Liveness: answers as soon as the daemon serves requests."""
        return api.Health(version=__version__)

    @app.get("/v1/status", tags=["system"])
    async def status() -> api.SystemStatus:
        """Version, uptime, node counts by status, database and listeners."""
        return await engine.status()

    @app.post("/v1/nodes", status_code=201, tags=["nodes"])
    async def create_node(
        request: Annotated[api.NodeCreateRequest, Body()] = api.NodeCreateRequest(),  # noqa: B008
    ) -> api.Node:
        """Create a node; it is already running when this returns."""
        return await engine.create(request)

    @app.get("/v1/nodes", tags=["nodes"])
    async def list_nodes(
        status: Annotated[list[api.NodeStatus] | None, Query()] = None,
        root: bool | None = None,
    ) -> list[api.Node]:
        """Every node, oldest first (a plain array), optionally by status and root."""
        return await engine.nodes(status=list(status) if status else None, root=root)

    @app.get("/v1/nodes/{node_id}", tags=["nodes"])
    async def get_node(node_id: NodeIdPath) -> api.Node:
        """One node."""
        return await engine.node(node_id)

    @app.get("/v1/nodes/{node_id}/outcome", tags=["nodes"])
    async def outcome(node_id: NodeIdPath, wait: Wait = 0) -> api.OutcomePoll:
        """One long poll: answers when the node settles or after ``wait`` seconds."""
        return await engine.outcome(node_id, wait)

    @app.post("/v1/nodes/{node_id}/messages", status_code=202, tags=["nodes"])
    async def message(node_id: NodeIdPath, body: api.MessageRequest) -> api.MessageAccepted:
        """Send a follow-up: a dormant node wakes; a running one reads it next turn."""
        return await engine.message(node_id, body.body)

    @app.post("/v1/nodes/{node_id}/interrupt", tags=["nodes"])
    async def interrupt(node_id: NodeIdPath) -> api.Node:
        """Stop the current turn and keep the node."""
        return await engine.interrupt(node_id)

    @app.post("/v1/nodes/{node_id}/close", tags=["nodes"])
    async def close(
        node_id: NodeIdPath,
        body: Annotated[api.CloseRequest | None, Body()] = None,
    ) -> api.Node:
        """Cancel the node and the subtree it owns (terminal)."""
        return await engine.close(node_id, body.reason if body is not None else None)

    @app.patch("/v1/nodes/{node_id}/config", tags=["nodes"])
    async def update_config(node_id: NodeIdPath, patch: api.NodeConfigPatch) -> api.Node:
        """Change the node's model, name, description or deadline."""
        return await engine.update_config(node_id, patch)

    @app.post("/v1/nodes/{node_id}/result", tags=["nodes"])
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
