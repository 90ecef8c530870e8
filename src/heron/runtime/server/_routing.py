"""What every route module shares: documented error answers and path/query parameters."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import FastAPI, Path, Query

from ... import api

__all__ = [
    "ACTION",
    "MAX_INTEGER",
    "PROFILE_PATTERN",
    "READ",
    "WITH_BODY",
    "NodeIdPath",
    "Stopping",
    "Wait",
    "errors",
    "stopping",
]

MAX_INTEGER = 2**53 - 1
"""The largest integer a query or body may give where the database keeps it (64-bit
in SQLite and PostgreSQL; 2**53 - 1 is the largest every JSON reader keeps exactly):
larger ones are refused with 422."""

PROFILE_PATTERN = api.ID_PATTERN
"""A profile's name, as the spec documents it (checked by the profiles: a name that
does not match answers ``400 invalid_profile_name``)."""

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


class Stopping:
    """Said once when the daemon begins to stop: requests that would hold on (event
    streams, long polls) answer at once, rather than hold the server's graceful
    shutdown until it gives up and cancels them mid-answer."""

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self._callbacks: list[Callable[[], None]] = []

    def is_set(self) -> bool:
        """Whether the daemon is stopping."""
        return self._event.is_set()

    def set(self) -> None:
        """The daemon is stopping: wake every waiter and run every callback (once)."""
        if self._event.is_set():
            return
        self._event.set()
        for callback in self._callbacks:
            callback()

    def on_set(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` when the daemon starts to stop."""
        self._callbacks.append(callback)

    async def wait(self) -> None:
        """Return once the daemon is stopping."""
        await self._event.wait()


def stopping(app: FastAPI) -> Stopping:
    """The app's :class:`Stopping` (made on first use)."""
    found = getattr(app.state, "stopping", None)
    if not isinstance(found, Stopping):
        found = app.state.stopping = Stopping()
    return found
