"""Human requests and the inbox: questions put to a person, and what a person's UI lists.

A request holds questions (each with optional suggested ``choices``) and/or a
free ``body``. A node with the ``ask`` scope files one with its ``ask-questions``
tool and sleeps (``dormant``) until a person responds; an application may file
one too, for a node or for nobody in particular. The inbox lists the open
requests as *tickets* (a ticket's id is its request's id) with their node's context.

Answers: one per question, in order. An answer picks from the question's
``choices`` (each one of them exactly; several only when ``multiple``) and/or
says something in ``text``. ``text`` is allowed unless the question sets
``free_text: false`` (then a choice must be picked); a question without choices
needs ``text``. An answer may also be a plain string: the choice it spells
(ignoring case and spacing), else words of one's own; so may ``text`` that
spells a choice when no choice is picked. A response may instead be a single
``text`` for the whole request when every question allows free text.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal, TypeAlias

from pydantic import Field, StringConstraints

from ._common import NodeId, ProfileName, RequestModel, WireModel

__all__ = [
    "HumanAnswer",
    "HumanAnswerInput",
    "HumanDismissRequest",
    "HumanProgress",
    "HumanProgressRequest",
    "HumanQuestion",
    "HumanQuestionInput",
    "HumanRequest",
    "HumanRequestCancel",
    "HumanRequestCreate",
    "HumanRequestReplace",
    "HumanRequestStatus",
    "HumanRespondRequest",
    "HumanResponse",
    "InboxNode",
    "InboxTicket",
]

MAX_QUESTIONS = 20
"""The most questions one request holds."""
MAX_CHOICES = 20
"""The most choices one question offers."""

HumanRequestStatus: TypeAlias = Literal["open", "answered", "dismissed", "cancelled"]
"""``open`` until a person answers or dismisses it, or its asker cancels it."""

_Title = Annotated[str, StringConstraints(min_length=1, max_length=512)]
_Line = Annotated[str, StringConstraints(max_length=4096)]
_Text = Annotated[str, StringConstraints(max_length=64 * 1024)]
_Choice = Annotated[str, StringConstraints(min_length=1, max_length=1024)]
_Who = Annotated[str, StringConstraints(min_length=1, max_length=256)]


class HumanQuestionInput(RequestModel):
    """One question in a request body (the ``ask-questions`` tool's shape, plus ``free_text``)."""

    question: Annotated[str, StringConstraints(min_length=1, max_length=4096)]
    """The question, complete on its own."""
    context: _Text = ""
    """Why it is asked, what depends on it."""
    choices: list[_Choice] = Field(default_factory=list, max_length=MAX_CHOICES)
    """Suggested answers (distinct)."""
    multiple: bool = False
    """Whether several choices may be picked (needs two or more choices)."""
    free_text: bool = True
    """Whether the person may answer in their own words (``False``: pick a choice)."""


class HumanQuestion(WireModel):
    """One question of a request."""

    question: str
    """The question."""
    context: str = ""
    """Why it is asked."""
    choices: list[str] = Field(default_factory=list)
    """Suggested answers."""
    multiple: bool = False
    """Whether several choices may be picked."""
    free_text: bool = True
    """Whether an answer in the person's own words is accepted."""


class HumanAnswerInput(RequestModel):
    """The answer to one question: picked choices and/or words of one's own."""

    choices: list[_Choice] = Field(default_factory=list, max_length=MAX_CHOICES)
    """Choices picked (each exactly one of the question's; one unless ``multiple``)."""
    text: _Text | None = None
    """An answer in the person's own words (if the question allows it)."""


class HumanAnswer(WireModel):
    """The answer a person gave to one question."""

    question: str
    """The question answered."""
    choices: list[str] = Field(default_factory=list)
    """The choices picked."""
    text: str | None = None
    """What the person wrote, if anything."""


class HumanResponse(WireModel):
    """A person's response to a request."""

    answers: list[HumanAnswer] | None = None
    """One answer per question, in order (``None``: the person answered in ``text`` only)."""
    text: str | None = None
    """A reply to the whole request, if given."""
    responded_by: str | None = None
    """Who responded, as the responder said."""
    responded_at: datetime
    """When."""


class HumanProgress(WireModel):
    """A progress note a person posted on a ticket they are working on."""

    note: str
    """What the person said."""
    percent: float | None = None
    """How far along (0-100), if said."""
    by: str | None = None
    """Who posted it."""
    at: datetime
    """When."""


class HumanRequest(WireModel):
    """A request for a person's answer, as the daemon keeps it."""

    request_id: str
    """Identifier (``hr_…``); also the inbox ticket's id."""
    node_id: str | None
    """The node waiting for the answer (``None``: filed by an application for nobody)."""
    profile: str
    """The profile it belongs to (its node's; ``default`` when none was named)."""
    status: HumanRequestStatus
    """Where it stands."""
    title: str
    """A one-line summary for an inbox."""
    body: str | None
    """More for the person to read (Markdown), if any."""
    questions: list[HumanQuestion]
    """The questions, in order (may be empty when ``body`` says it all)."""
    response: HumanResponse | None
    """The person's response, once answered."""
    progress: list[HumanProgress]
    """Progress notes a person posted, oldest first."""
    reason: str | None
    """Why it was dismissed or cancelled, if said."""
    revision: int
    """1 when filed; each replace adds one."""
    created_at: datetime
    """When it was filed."""
    updated_at: datetime
    """When it last changed."""
    resolved_at: datetime | None
    """When it stopped being open."""


class InboxNode(WireModel):
    """The node behind a ticket, as an inbox shows it."""

    node_id: str
    """Its id."""
    name: str | None
    """Its display name."""
    kind: str | None
    """Its persona."""
    status: str
    """Its status now (``dormant`` while it waits for the answer)."""
    prompt: str | None
    """The first line of its prompt (what it was asked to do)."""


class InboxTicket(HumanRequest):
    """A request as a person's inbox lists it: the request and its node's context."""

    ticket_id: str
    """The ticket's id (the request's id)."""
    node: InboxNode | None
    """The node waiting for the answer (``None`` when there is none, or it is gone)."""


class HumanRequestCreate(RequestModel):
    """``POST /v1/human/requests``: file a request (questions, a body, or both)."""

    title: _Title
    """A one-line summary for an inbox."""
    body: _Text | None = None
    """More for the person to read (Markdown)."""
    questions: list[HumanQuestionInput] = Field(default_factory=list, max_length=MAX_QUESTIONS)
    """The questions, in order."""
    node_id: NodeId | None = None
    """A live node to wake with the answer (it must exist and not have settled)."""
    profile: ProfileName | None = None
    """The profile it belongs to (default: the node's, else ``default``)."""


class HumanRequestReplace(RequestModel):
    """``PUT /v1/human/requests/{id}``: replace an open request's title, body and questions."""

    title: _Title
    """The new title."""
    body: _Text | None = None
    """The new body."""
    questions: list[HumanQuestionInput] = Field(max_length=MAX_QUESTIONS)
    """The new questions, all of them (required: ``[]`` drops them, so a replacement
    never deletes them by leaving the field out)."""
    revision: Annotated[int, Field(ge=1, le=2**53 - 1)] | None = None
    """Replace only if the request is still at this revision (``409 revision_conflict``)."""


class HumanRespondRequest(RequestModel):
    """A person's response: answers per question and/or a text for the whole request."""

    answers: Annotated[list[HumanAnswerInput | _Text], Field(max_length=MAX_QUESTIONS)] | None = (
        None
    )
    """One answer per question, in order: an object, or just a string (one of the
    question's choices if it spells one, else the person's own words)."""
    text: _Text | None = None
    """A reply to the whole request."""
    responded_by: _Who | None = None
    """Who is responding (shown to the node)."""
    revision: Annotated[int, Field(ge=1, le=2**53 - 1)] | None = None
    """Answer only if the request is still at this revision, the one the person read
    (``409 revision_conflict``): answers go by position, and a replace may have
    changed the questions since."""


class HumanDismissRequest(RequestModel):
    """``POST …/dismiss``: the person will not answer; the node is told (and why)."""

    reason: _Line | None = None
    """Why, if the person says."""


class HumanRequestCancel(RequestModel):
    """``POST …/cancel``: withdraw the request (the asker no longer needs it)."""

    reason: _Line | None = None
    """Why, if said."""


class HumanProgressRequest(RequestModel):
    """``POST /v1/human/inbox/{ticket}/progress``: a note on the person's progress."""

    note: Annotated[str, StringConstraints(min_length=1, max_length=4096)]
    """What the person wants the asker to know."""
    percent: Annotated[float, Field(ge=0, le=100)] | None = None
    """How far along (0-100)."""
    by: _Who | None = None
    """Who is posting."""
