"""Human requests in words and on the wire: checking questions and answers (the wire's rules,
:mod:`heron.api._human`), the messages a node gets, and rows as :class:`heron.api.HumanRequest`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ... import api
from ..nodes import NodeRow, maybe_when, when
from ..server import ApiError
from ._store import RequestRow, StoredAnswer, StoredQuestion

__all__ = [
    "answered_text",
    "check_answers",
    "check_questions",
    "dismissed_text",
    "first_line",
    "to_request",
    "to_ticket",
    "withdrawn_text",
]

TITLE_WIDTH = 200
"""The longest title made from a question."""


def _flat(text: str) -> str:
    return " ".join(text.split())


def first_line(text: str | None, width: int = TITLE_WIDTH) -> str | None:
    """The first non-blank line of ``text``, cut to ``width`` characters."""
    for line in (text or "").splitlines():
        if line.strip():
            flat = _flat(line)
            return flat if len(flat) <= width else flat[: width - 1] + "…"
    return None


def check_questions(questions: Sequence[api.HumanQuestionInput]) -> list[StoredQuestion]:
    """The questions as stored (spacing normalised), or ``422 invalid_questions``."""
    problems: list[str] = []
    stored: list[StoredQuestion] = []
    seen: dict[str, int] = {}
    for number, q in enumerate(questions, start=1):
        text = _flat(q.question)
        if not text:
            problems.append(f"question {number} is empty")
        elif seen.setdefault(text.casefold(), number) != number:
            problems.append(f"question {number} repeats question {seen[text.casefold()]}")
        choices = [_flat(c) for c in q.choices]
        if any(not c for c in choices):
            problems.append(f"question {number} has an empty choice")
        if len({c.casefold() for c in choices}) != len(choices):
            problems.append(f"question {number} lists the same choice twice")
        if q.multiple and len(choices) < 2:
            problems.append(f"question {number} allows several choices but lists fewer than two")
        if not q.free_text and not choices:
            problems.append(f"question {number} allows no free text, so it needs choices")
        stored.append(
            {
                "question": text,
                "context": q.context.strip(),
                "choices": choices,
                "multiple": q.multiple,
                "free_text": q.free_text,
            }
        )
    if problems:
        raise ApiError(422, "invalid_questions", "; ".join(problems), problems)
    return stored


def check_answers(
    questions: Sequence[StoredQuestion], respond: api.HumanRespondRequest
) -> tuple[list[StoredAnswer] | None, str | None]:
    """The answers as stored and the overall text, or ``422 invalid_response``."""
    text = respond.text.strip() if respond.text is not None and respond.text.strip() else None
    problems: list[str] = []
    answers: list[StoredAnswer] | None = None
    if respond.answers is None or (not respond.answers and not questions):
        if text is None:
            problems.append("a response needs answers or a text")
        for number, q in enumerate(questions, start=1):
            if not q.get("free_text", True):
                problems.append(
                    f"question {number} must be answered with one of its choices: "
                    "give answers, one per question"
                )
    elif len(respond.answers) != len(questions):
        problems.append(
            f"give one answer per question: {len(questions)} asked, {len(respond.answers)} answered"
        )
    else:
        answers = []
        for number, (q, given) in enumerate(zip(questions, respond.answers, strict=True), 1):
            answers.append(_answer(number, q, given, problems))
    if problems:
        raise ApiError(422, "invalid_response", "; ".join(problems), problems)
    return answers, text


def _answer(
    number: int, q: StoredQuestion, given: api.HumanAnswerInput | str, problems: list[str]
) -> StoredAnswer:
    spelled = {_flat(c).casefold(): c for c in q["choices"]}
    if isinstance(given, str):
        given = api.HumanAnswerInput(text=given)
    own = given.text.strip() if given.text is not None and given.text.strip() else None
    if own is not None and not given.choices and _flat(own).casefold() in spelled:
        # Words that spell a choice are that choice (a UI's text box, a plain string).
        given = api.HumanAnswerInput(choices=[own])
        own = None
    picked: list[str] = []
    for choice in given.choices:
        found = spelled.get(_flat(choice).casefold())
        if found is None:
            options = ", ".join(repr(c) for c in q["choices"]) or "none"
            problems.append(f"answer {number}: {choice!r} is not one of the choices ({options})")
        elif found in picked:
            problems.append(f"answer {number} picks {found!r} twice")
        else:
            picked.append(found)
    if len(picked) > 1 and not q["multiple"]:
        problems.append(f"answer {number} picks {len(picked)} choices: question {number} takes one")
    if own is not None and not q.get("free_text", True):
        problems.append(f"answer {number}: question {number} takes only its choices, not text")
    if own is None and not given.choices:
        problems.append(f"answer {number} is empty: pick a choice or write an answer")
    return {"question": q["question"], "choices": picked, "text": own}


def answered_text(row: RequestRow) -> str:
    """The message that brings a node the person's answers."""
    response = row["response"]
    who = response.get("responded_by") if response else None
    head = f"{who} answered" if who else "The person answered"
    lines = [f"{head} your request {row['request_id']} ({row['title']}):", ""]
    answers = (response.get("answers") if response else None) or []
    for number, answer in enumerate(answers, start=1):
        lines.append(f"{number}. {answer['question']}")
        parts = [", ".join(answer["choices"])] if answer["choices"] else []
        if own := answer.get("text"):
            parts.append(own)
        said = " — ".join(parts)
        lines.extend(f"   {line}" for line in f"Answer: {said}".splitlines())
    if response and (text := response.get("text")):
        if response.get("answers"):
            lines += ["", "They added:"]
        lines.append(text)
    return "\n".join(lines).rstrip()


def dismissed_text(row: RequestRow) -> str:
    """The message telling a node the person will not answer."""
    why = f" Their reason: {row['reason']}" if row["reason"] else ""
    return _unanswered(row, "The person dismissed your request {} without answering.", why)


def withdrawn_text(row: RequestRow) -> str:
    """The message telling a node its request was withdrawn (cancelled) for it."""
    why = f" Reason: {row['reason']}" if row["reason"] else ""
    return _unanswered(row, "Your request {} was withdrawn before anyone answered it.", why)


def _unanswered(row: RequestRow, what: str, why: str) -> str:
    request = f"{row['request_id']} ({row['title']})"
    return (
        f"{what.format(request)}{why}\nGo on without the answer if you can; otherwise "
        "finish and say what you still need."
    )


def to_request(row: RequestRow) -> api.HumanRequest:
    """A row of ``heron_human_requests`` on the wire."""
    return api.HumanRequest(**_fields(row))


def _fields(row: RequestRow) -> dict[str, Any]:
    response = row["response"]
    return {
        "request_id": row["request_id"],
        "node_id": row["node_id"],
        "profile": row["profile"],
        "status": row["status"],
        "title": row["title"],
        "body": row["body"],
        "questions": [api.HumanQuestion(**q) for q in row["questions"]],
        "response": (
            api.HumanResponse(
                answers=[api.HumanAnswer(**a) for a in answers]
                if (answers := response.get("answers")) is not None
                else None,
                text=response.get("text"),
                responded_by=response.get("responded_by"),
                responded_at=when(response["responded_at"]),
            )
            if response is not None
            else None
        ),
        "progress": [
            api.HumanProgress(
                note=p["note"], percent=p.get("percent"), by=p.get("by"), at=when(p["at"])
            )
            for p in row["progress"] or []
        ],
        "reason": row["reason"],
        "revision": row["revision"],
        "created_at": when(row["created_at"]),
        "updated_at": when(row["updated_at"]),
        "resolved_at": maybe_when(row["resolved_at"]),
    }


def to_ticket(row: RequestRow, node: NodeRow | None) -> api.InboxTicket:
    """A request and its node's row (if it has one) as an inbox ticket."""
    context = (
        api.InboxNode(
            node_id=node["node_id"],
            name=node["name"],
            kind=node["kind"],
            status=node["status"],
            prompt=first_line(node["prompt"]),
        )
        if node is not None
        else None
    )
    return api.InboxTicket(**_fields(row), ticket_id=row["request_id"], node=context)
