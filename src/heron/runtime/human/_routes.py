"""Human requests and the inbox: ``/v1/human/requests…`` and ``/v1/human/inbox…``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from fastapi import Body, FastAPI, Path, Query

from ... import api
from ..server import PROFILE_PATTERN, errors

if TYPE_CHECKING:
    from ._service import Human

__all__ = ["add_human_routes"]

DEFAULT_LIMIT = 50
"""Tickets listed when no ``limit`` is given."""

RequestIdPath = Annotated[
    str,
    Path(
        description="The request's id (`hr_…`; letters, digits, `_`, `.`, `-`; up to 128).",
        # Documented, but checked by the feature: a bad id answers 400 invalid_request_id.
        json_schema_extra={"pattern": api.ID_PATTERN},
    ),
]
"""A ``{request_id}`` path parameter."""

TicketPath = Annotated[
    str,
    Path(
        description="The ticket's id (its request's id, `hr_…`).",
        json_schema_extra={"pattern": api.ID_PATTERN},
    ),
]
"""A ``{ticket}`` path parameter."""

Limit = Annotated[int, Query(ge=1, le=1000, description="At most this many (1-1000).")]
Profile = Annotated[
    str | None,
    Query(
        description="Only this profile's tickets.", json_schema_extra={"pattern": PROFILE_PATTERN}
    ),
]
NodeFilter = Annotated[
    str | None,
    Query(description="Only this node's tickets.", json_schema_extra={"pattern": api.ID_PATTERN}),
]

CHANGE = errors(400, 404, 409, 413, 415, 422)
"""A route changing one request with a JSON body."""


def add_human_routes(app: FastAPI, human: Human) -> None:
    """Serve the human-request and inbox routes."""

    @app.post("/v1/human/requests", status_code=201, tags=["human"], responses=CHANGE)
    async def create_request(body: api.HumanRequestCreate) -> api.HumanRequest:
        """File a request for a person (for a live node, whose answer wakes it, or for nobody)."""
        return await human.create(body)

    @app.get("/v1/human/requests/{request_id}", tags=["human"], responses=errors(400, 404))
    async def get_request(request_id: RequestIdPath) -> api.HumanRequest:
        """One request, whatever its status."""
        return await human.get(request_id)

    @app.put("/v1/human/requests/{request_id}", tags=["human"], responses=CHANGE)
    async def replace_request(
        request_id: RequestIdPath, body: api.HumanRequestReplace
    ) -> api.HumanRequest:
        """Replace an open request's title, body and questions (``revision`` goes up)."""
        return await human.replace(request_id, body)

    @app.post("/v1/human/requests/{request_id}/respond", tags=["human"], responses=CHANGE)
    async def respond_request(
        request_id: RequestIdPath, body: api.HumanRespondRequest
    ) -> api.HumanRequest:
        """Answer an open request; its node wakes with the answers."""
        return await human.respond(request_id, body)

    @app.post("/v1/human/requests/{request_id}/dismiss", tags=["human"], responses=CHANGE)
    async def dismiss_request(
        request_id: RequestIdPath,
        body: Annotated[api.HumanDismissRequest | None, Body()] = None,
    ) -> api.HumanRequest:
        """Decline to answer; its node wakes and is told (with the reason, if given)."""
        return await human.dismiss(request_id, body.reason if body else None)

    @app.post("/v1/human/requests/{request_id}/cancel", tags=["human"], responses=CHANGE)
    async def cancel_request(
        request_id: RequestIdPath,
        body: Annotated[api.HumanRequestCancel | None, Body()] = None,
    ) -> api.HumanRequest:
        """Withdraw the request; a node waiting on it wakes and is told."""
        return await human.cancel(request_id, body.reason if body else None)

    # -- the inbox: what a person's UI lists ------------------------------------------

    @app.get("/v1/human/inbox", tags=["inbox"], responses=errors(400, 422))
    async def inbox(
        profile: Profile = None, node_id: NodeFilter = None, limit: Limit = DEFAULT_LIMIT
    ) -> list[api.InboxTicket]:
        """The open tickets, newest first, each with its node's context."""
        return await human.inbox(profile=profile, node_id=node_id, limit=limit)

    # Before /{ticket}: "history" is not a ticket id.
    @app.get("/v1/human/inbox/history", tags=["inbox"], responses=errors(400, 422))
    async def inbox_history(
        profile: Profile = None, node_id: NodeFilter = None, limit: Limit = DEFAULT_LIMIT
    ) -> list[api.InboxTicket]:
        """Resolved tickets (answered, dismissed, cancelled), last resolved first."""
        return await human.inbox(resolved=True, profile=profile, node_id=node_id, limit=limit)

    @app.get("/v1/human/inbox/{ticket}", tags=["inbox"], responses=errors(400, 404))
    async def inbox_ticket(ticket: TicketPath) -> api.InboxTicket:
        """One ticket, open or resolved."""
        return await human.ticket(ticket)

    @app.post("/v1/human/inbox/{ticket}/respond", tags=["inbox"], responses=CHANGE)
    async def inbox_respond(ticket: TicketPath, body: api.HumanRespondRequest) -> api.InboxTicket:
        """Answer the ticket (as ``POST /v1/human/requests/{id}/respond``)."""
        await human.respond(ticket, body)
        return await human.ticket(ticket)

    @app.post("/v1/human/inbox/{ticket}/progress", tags=["inbox"], responses=CHANGE)
    async def inbox_progress(ticket: TicketPath, body: api.HumanProgressRequest) -> api.InboxTicket:
        """Post a progress note on an open ticket (kept and shown with it)."""
        return await human.progress(ticket, body)

    @app.post("/v1/human/inbox/{ticket}/cancel", tags=["inbox"], responses=CHANGE)
    async def inbox_cancel(
        ticket: TicketPath,
        body: Annotated[api.HumanRequestCancel | None, Body()] = None,
    ) -> api.InboxTicket:
        """Withdraw the ticket (as ``POST /v1/human/requests/{id}/cancel``)."""
        await human.cancel(ticket, body.reason if body else None)
        return await human.ticket(ticket)

    @app.get("/v1/human/inbox/{ticket}/response", tags=["inbox"], responses=errors(400, 404, 409))
    async def inbox_response(ticket: TicketPath) -> api.HumanResponse:
        """The person's response; ``409 no_response`` until the ticket is answered."""
        return await human.response(ticket)
