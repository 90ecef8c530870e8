"""``client.human``: requests for a person's answer (``requests``) and the inbox listing them.

A node with the ``ask`` scope files a request with its ``ask-questions`` tool and
sleeps until someone responds; an application may file one too. The inbox is
what a person's UI shows: the open tickets (a ticket's id is its request's id)
with their node's context. Ids are checked here (``TypeError``, nothing sent).

Example::

    for ticket in client.human.inbox.list():
        print(ticket.title, [q.question for q in ticket.questions])
        client.human.inbox.respond(ticket.ticket_id, answers=[{"choices": ["main"]}])
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from pydantic import BaseModel

from .. import api
from ._flow import Flow
from ._options import RequestOptions
from ._resource import M, Resource, check_id, endpoint

if TYPE_CHECKING:
    from ._drivers import Driver

__all__ = ["MAX_TICKETS", "Human", "HumanRequests", "Inbox"]

MAX_TICKETS = 1000
"""The most tickets one inbox listing returns."""

Question: TypeAlias = api.HumanQuestionInput | Mapping[str, Any]
"""A question: the model, or a mapping of its fields (``{"question": ..., "choices": [...]}``)."""
Answer: TypeAlias = api.HumanAnswerInput | Mapping[str, Any] | str
"""An answer: the model, a mapping (``{"choices": ["main"]}``, ``{"text": "..."}``), or a
plain string (the choice it spells, else the person's own words)."""


def _request_path(request_id: object, suffix: str = "") -> str:
    return f"/v1/human/requests/{check_id(request_id, 'human request id')}{suffix}"


def _ticket_path(ticket_id: object, suffix: str = "") -> str:
    return f"/v1/human/inbox/{check_id(ticket_id, 'inbox ticket id')}{suffix}"


def _dumped(item: BaseModel | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(item, BaseModel):
        return item.model_dump(mode="json", exclude_unset=True)
    if isinstance(item, Mapping):
        return dict(item)
    raise TypeError(f"expected a model or a mapping, not {type(item).__name__}")


def _fields(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


def _response_body(
    answers: Sequence[Answer] | None,
    text: str | None,
    responded_by: str | None,
    revision: int | None,
) -> dict[str, Any]:
    if answers is None and text is None:
        raise ValueError("a response needs answers (one per question) or a text")
    if isinstance(answers, str):  # a str is a Sequence[str] too
        raise TypeError("answers is a list with one answer per question, not a string")
    listed = (
        [a if isinstance(a, str) else _dumped(a) for a in answers] if answers is not None else None
    )
    return _fields(answers=listed, text=text, responded_by=responded_by, revision=revision)


def _listing(profile: str | None, node_id: str | None, limit: int | None) -> dict[str, Any]:
    if limit is not None and (
        isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_TICKETS
    ):
        raise ValueError(f"limit must be a whole number from 1 to {MAX_TICKETS}, got {limit!r}")
    return {
        "profile": check_id(profile, "profile name") if profile is not None else None,
        "node_id": check_id(node_id) if node_id is not None else None,
        "limit": limit,
    }


class HumanRequests(Resource[M]):
    """``client.human.requests``: file, read, change and resolve requests by id."""

    @endpoint
    def create(
        self,
        title: str,
        *,
        questions: Sequence[Question] = (),
        body: str | None = None,
        node_id: str | None = None,
        profile: str | None = None,
        options: RequestOptions | None = None,
    ) -> Flow[api.HumanRequest]:
        """``POST /v1/human/requests``: file a request (questions, a ``body``, or both).

        With ``node_id`` (a live node), the answer wakes that node as a message;
        without, the request is for nobody in particular (read the response back).
        """
        request = _fields(
            title=title,
            questions=[_dumped(q) for q in questions],
            body=body,
            node_id=check_id(node_id) if node_id is not None else None,
            profile=check_id(profile, "profile name") if profile is not None else None,
        )
        return self._call(
            "POST", "/v1/human/requests", api.HumanRequest, body=request, options=options
        )

    @endpoint
    def retrieve(
        self, request_id: str, *, options: RequestOptions | None = None
    ) -> Flow[api.HumanRequest]:
        """``GET /v1/human/requests/{id}``: one request, whatever its status."""
        return self._call("GET", _request_path(request_id), api.HumanRequest, options=options)

    @endpoint
    def replace(
        self,
        request_id: str,
        *,
        title: str,
        questions: Sequence[Question],
        body: str | None = None,
        revision: int | None = None,
        options: RequestOptions | None = None,
    ) -> Flow[api.HumanRequest]:
        """``PUT /v1/human/requests/{id}``: replace an open request's title, body and
        questions (its ``revision`` goes up). ``questions`` must be given, as the
        request's whole new list (``[]`` drops them): a replacement that left it out
        would delete them unnoticed. With ``revision``, only if it is still that one
        (``ConflictError`` ``revision_conflict`` otherwise)."""
        path = _request_path(request_id)
        request = _fields(
            title=title, questions=[_dumped(q) for q in questions], body=body, revision=revision
        )
        return self._call("PUT", path, api.HumanRequest, body=request, options=options)

    @endpoint
    def respond(
        self,
        request_id: str,
        *,
        answers: Sequence[Answer] | None = None,
        text: str | None = None,
        responded_by: str | None = None,
        revision: int | None = None,
        options: RequestOptions | None = None,
    ) -> Flow[api.HumanRequest]:
        """``POST /v1/human/requests/{id}/respond``: answer it (one answer per question,
        and/or a ``text``); its node wakes with the answers. ``ConflictError``
        (``request_not_open``) if it is no longer open. With ``revision`` (the one the
        person read), only if it is still that one (``revision_conflict`` otherwise)."""
        path = _request_path(request_id, "/respond")
        request = _response_body(answers, text, responded_by, revision)
        return self._call("POST", path, api.HumanRequest, body=request, options=options)

    @endpoint
    def dismiss(
        self, request_id: str, *, reason: str | None = None, options: RequestOptions | None = None
    ) -> Flow[api.HumanRequest]:
        """``POST /v1/human/requests/{id}/dismiss``: decline to answer; the node is told."""
        path = _request_path(request_id, "/dismiss")
        request = _fields(reason=reason)
        return self._call("POST", path, api.HumanRequest, body=request, options=options)

    @endpoint
    def cancel(
        self, request_id: str, *, reason: str | None = None, options: RequestOptions | None = None
    ) -> Flow[api.HumanRequest]:
        """``POST /v1/human/requests/{id}/cancel``: withdraw it; a waiting node is told."""
        path = _request_path(request_id, "/cancel")
        request = _fields(reason=reason)
        return self._call("POST", path, api.HumanRequest, body=request, options=options)


class Inbox(Resource[M]):
    """``client.human.inbox``: what a person's UI lists, and how the person acts on it."""

    @endpoint
    def list(
        self,
        *,
        profile: str | None = None,
        node_id: str | None = None,
        limit: int | None = None,
        options: RequestOptions | None = None,
    ) -> Flow[builtins.list[api.InboxTicket]]:
        """``GET /v1/human/inbox``: the open tickets, newest first (``limit`` 1-1000,
        default 50 by the daemon)."""
        query = _listing(profile, node_id, limit)
        result = builtins.list[api.InboxTicket]
        return self._call("GET", "/v1/human/inbox", result, query=query, options=options)

    @endpoint
    def history(
        self,
        *,
        profile: str | None = None,
        node_id: str | None = None,
        limit: int | None = None,
        options: RequestOptions | None = None,
    ) -> Flow[builtins.list[api.InboxTicket]]:
        """``GET /v1/human/inbox/history``: resolved tickets, last resolved first."""
        query = _listing(profile, node_id, limit)
        result = builtins.list[api.InboxTicket]
        return self._call("GET", "/v1/human/inbox/history", result, query=query, options=options)

    @endpoint
    def retrieve(
        self, ticket_id: str, *, options: RequestOptions | None = None
    ) -> Flow[api.InboxTicket]:
        """``GET /v1/human/inbox/{ticket}``: one ticket, open or resolved."""
        return self._call("GET", _ticket_path(ticket_id), api.InboxTicket, options=options)

    @endpoint
    def respond(
        self,
        ticket_id: str,
        *,
        answers: Sequence[Answer] | None = None,
        text: str | None = None,
        responded_by: str | None = None,
        revision: int | None = None,
        options: RequestOptions | None = None,
    ) -> Flow[api.InboxTicket]:
        """``POST /v1/human/inbox/{ticket}/respond``: answer the ticket (see
        ``human.requests.respond``)."""
        path = _ticket_path(ticket_id, "/respond")
        request = _response_body(answers, text, responded_by, revision)
        return self._call("POST", path, api.InboxTicket, body=request, options=options)

    @endpoint
    def progress(
        self,
        ticket_id: str,
        note: str,
        *,
        percent: float | None = None,
        by: str | None = None,
        options: RequestOptions | None = None,
    ) -> Flow[api.InboxTicket]:
        """``POST /v1/human/inbox/{ticket}/progress``: post a progress note on an open
        ticket (kept and shown with it; the node is not woken for it)."""
        path = _ticket_path(ticket_id, "/progress")
        request = _fields(note=note, percent=percent, by=by)
        return self._call("POST", path, api.InboxTicket, body=request, options=options)

    @endpoint
    def cancel(
        self, ticket_id: str, *, reason: str | None = None, options: RequestOptions | None = None
    ) -> Flow[api.InboxTicket]:
        """``POST /v1/human/inbox/{ticket}/cancel``: withdraw the ticket."""
        path = _ticket_path(ticket_id, "/cancel")
        request = _fields(reason=reason)
        return self._call("POST", path, api.InboxTicket, body=request, options=options)

    @endpoint
    def response(
        self, ticket_id: str, *, options: RequestOptions | None = None
    ) -> Flow[api.HumanResponse]:
        """``GET /v1/human/inbox/{ticket}/response``: the person's response;
        ``ConflictError`` (``no_response``) until the ticket is answered."""
        path = _ticket_path(ticket_id, "/response")
        return self._call("GET", path, api.HumanResponse, options=options)


class Human(Resource[M]):
    """``client.human``: requests for a person's answer, and the inbox listing them."""

    requests: HumanRequests[M]
    """``client.human.requests``: file, read, change and resolve requests by id."""
    inbox: Inbox[M]
    """``client.human.inbox``: what a person's UI lists."""

    def __init__(self, driver: Driver[M]) -> None:
        super().__init__(driver)
        self.requests = HumanRequests(driver)
        self.inbox = Inbox(driver)
