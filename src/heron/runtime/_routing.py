"""What every route module shares: documented error answers and path/query parameters."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path, Query

from .. import api

__all__ = ["ACTION", "READ", "WITH_BODY", "NodeIdPath", "Wait", "errors"]

_STATUS_TEXT = {
    400: "Malformed request: the body is not JSON, or an id is not a valid id",
    401: "Missing or wrong bearer token (TCP listener only)",
    403: "The daemon's user may not do that (a file's permissions)",
    404: "No such node (or other resource)",
    409: "The node's state does not allow it, or its id is taken",
    413: "Request body over the daemon's limit",
    415: "The body is not JSON (send Content-Type: application/json)",
    422: "The request does not match the schema",
    503: "The daemon is stopping",
    507: "No space left on the device",
}


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The error answers a route documents; 401 (TCP without the token) applies to all."""
    return {
        status: {"model": api.ErrorResponse, "description": _STATUS_TEXT[status]}
        for status in sorted({401, *statuses})
    }


READ = errors(400, 404)
"""A route reading one node."""
ACTION = errors(400, 404, 409)
"""A bodiless action on one node."""
WITH_BODY = errors(400, 404, 409, 413, 415, 422)
"""A route taking a JSON body about one node."""

NodeIdPath = Annotated[
    str,
    Path(
        description="The node's id (letters, digits, `_`, `.`, `-`; up to 128).",
        # Documented, but checked by the engine: a bad id answers 400 invalid_node_id.
        json_schema_extra={"pattern": api.ID_PATTERN},
    ),
]
"""A ``{node_id}`` path parameter."""

Wait = Annotated[int, Query(ge=0, le=25, description="Seconds to hold the poll open (0-25).")]
"""The ``wait`` of a long poll."""
