"""``heron inbox``: the questions nodes (and applications) put to a person, answered here.

``heron inbox list`` shows the open tickets; ``show`` one with its questions;
``respond`` answers it, asking each question in turn (choices numbered: type a
number, several as ``1,3`` when the question allows it, or your own words), or
from ``--answer`` flags (one per question, in order) / ``--text``. The node that
asked wakes with the answers.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from .. import api
from ._nodes import JsonOption, _check_id, _console, _fail, _say, _when, _with_client
from ._table import Column, print_table
from ._view import _one_line

if TYPE_CHECKING:
    from ..client import Heron

__all__ = ["inbox_app", "parse_answer"]

inbox_app = typer.Typer(
    help="The inbox: questions waiting for a person's answer (list, show, respond).",
    no_args_is_help=True,
)

TicketArg = Annotated[
    str, typer.Argument(metavar="TICKET", help="The ticket's id (hr_…).", show_default=False)
]
ProfileOption = Annotated[str | None, typer.Option(help="Only this profile's tickets.")]
NodeOption = Annotated[str | None, typer.Option("--node", help="Only this node's tickets.")]
LimitOption = Annotated[int, typer.Option(min=1, max=1000, help="At most this many.")]
ByOption = Annotated[str | None, typer.Option("--by", help="Who you are (shown to the node).")]


def _ticket_id(ctx: typer.Context, value: str) -> str:
    return _check_id(ctx, value, "inbox ticket id")


def _print_json(value: api.WireModel | Sequence[api.WireModel]) -> None:
    data: Any = (
        [item.model_dump(mode="json") for item in value]
        if isinstance(value, Sequence)
        else value.model_dump(mode="json")
    )
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False))


def _table(tickets: list[api.InboxTicket], *, resolved: bool) -> None:
    """The open (or resolved) tickets: ids whole, the title wrapping."""
    columns = [
        Column("TICKET", whole=True),
        *([Column("STATUS", whole=True)] if resolved else []),
        Column("TITLE", wrap_min=16),
        Column("NODE", whole=True, drop=2),
        Column("Q", whole=True, justify="right", drop=3),
        Column("RESOLVED" if resolved else "FILED", drop=1, wrap_min=10),
    ]
    rows = []
    for ticket in tickets:
        # The node's id, whole: what `heron nodes watch` and the others take.
        who = ticket.node.node_id if ticket.node else "-"
        rows.append(
            [
                ticket.ticket_id,
                *([ticket.status] if resolved else []),
                _one_line(ticket.title, 120),
                who,
                str(len(ticket.questions)),
                _when(ticket.resolved_at if resolved else ticket.created_at),
            ]
        )
    print_table(columns, rows)


def _listing(
    ctx: typer.Context,
    profile: str | None,
    node: str | None,
    limit: int,
    as_json: bool,
    *,
    resolved: bool,
) -> None:
    if profile is not None:
        _check_id(ctx, profile, "profile name")
    if node is not None:
        _check_id(ctx, node)

    def go(client: Heron) -> None:
        inbox = client.human.inbox
        read = inbox.history if resolved else inbox.list
        tickets = read(profile=profile, node_id=node, limit=limit)
        if as_json:
            _print_json(tickets)
        elif not tickets:
            _say("no resolved tickets" if resolved else "no open tickets: nobody is waiting")
        else:
            _table(tickets, resolved=resolved)

    _with_client(ctx, go)


@inbox_app.command("list")
def list_(
    ctx: typer.Context,
    profile: ProfileOption = None,
    node: NodeOption = None,
    limit: LimitOption = 50,
    as_json: JsonOption = False,
) -> None:
    """List the open tickets, newest first."""
    _listing(ctx, profile, node, limit, as_json, resolved=False)


@inbox_app.command("history")
def history(
    ctx: typer.Context,
    profile: ProfileOption = None,
    node: NodeOption = None,
    limit: LimitOption = 50,
    as_json: JsonOption = False,
) -> None:
    """List resolved tickets (answered, dismissed, cancelled), last resolved first."""
    _listing(ctx, profile, node, limit, as_json, resolved=True)


def _show(console: Console, ticket: api.InboxTicket) -> None:
    console.print(Text(ticket.title, style="bold"), soft_wrap=True)
    status = f"{ticket.ticket_id} · {ticket.status} · filed {_when(ticket.created_at)}"
    if ticket.revision > 1:
        status += f" · revision {ticket.revision}"
    console.print(Text(status, style="dim"), soft_wrap=True)
    if ticket.node is not None:
        node = ticket.node
        line = f"from node {node.node_id} ({node.status})"
        if node.name:
            line += f" · {node.name}"
        if node.prompt:
            line += f" · asked to: {_one_line(node.prompt, 80)}"
        console.print(Text(line, style="dim"), soft_wrap=True)
    if ticket.body:
        console.print(Text(f"\n{ticket.body.rstrip()}"), soft_wrap=True)
    for number, question in enumerate(ticket.questions, start=1):
        console.print(Text(f"\n{number}. {question.question}", style="bold"), soft_wrap=True)
        for line in question.context.splitlines():
            console.print(Text(f"   {line}", style="dim"), soft_wrap=True)
        for index, choice in enumerate(question.choices, start=1):
            console.print(Text(f"   {index}) {choice}"), soft_wrap=True)
    for note in ticket.progress:
        percent = f" {note.percent:g}%" if note.percent is not None else ""
        by = f" ({note.by})" if note.by else ""
        console.print(Text(f"\n· progress{percent}{by}: {note.note}", style="cyan"))
    if ticket.reason:
        console.print(Text(f"\n{ticket.status}: {ticket.reason}", style="yellow"), soft_wrap=True)
    if ticket.response is not None:
        _show_response(console, ticket)


def _show_response(console: Console, ticket: api.InboxTicket) -> None:
    response = ticket.response
    assert response is not None
    by = f" by {response.responded_by}" if response.responded_by else ""
    console.print(Text(f"\nanswered{by} {_when(response.responded_at)}", style="green"))
    for number, answer in enumerate(response.answers or [], start=1):
        said = ", ".join(answer.choices)
        if answer.text:
            said = f"{said} — {answer.text}" if said else answer.text
        console.print(Text(f"  {number}. {said}"), soft_wrap=True)
    if response.text:
        console.print(Text(f"  {response.text}"), soft_wrap=True)


@inbox_app.command("show")
def show(ctx: typer.Context, ticket: TicketArg, as_json: JsonOption = False) -> None:
    """Show one ticket: its questions (choices numbered), its node, its response."""
    ticket_id = _ticket_id(ctx, ticket)

    def go(client: Heron) -> None:
        found = client.human.inbox.retrieve(ticket_id)
        if as_json:
            _print_json(found)
        else:
            _show(_console(), found)

    _with_client(ctx, go)


def numbered(question: api.HumanQuestion) -> bool:
    """Whether the question's choices are picked by number: not when a choice is a
    number itself (``3``, ``5``, ``7``: typing ``3`` must not pick the third)."""
    return bool(question.choices) and not any(
        c.replace(",", "").strip().isdigit() for c in question.choices
    )


def parse_answer(question: api.HumanQuestion, said: str) -> dict[str, Any]:
    """What a person typed for one question, as an answer: choice numbers (``2``,
    ``1,3``; unless the choices are numbers) or a choice's text pick choices;
    anything else is their own words."""
    said = said.strip()
    parts = [p.strip() for p in said.split(",")]
    if numbered(question) and parts and all(p.isdigit() for p in parts):
        numbers = [int(p) for p in parts]
        if not all(1 <= n <= len(question.choices) for n in numbers):
            raise ValueError(f"pick a number from 1 to {len(question.choices)}")
        if len(set(numbers)) > 1 and not question.multiple:
            raise ValueError("this question takes one choice")
        return {"choices": list(dict.fromkeys(question.choices[n - 1] for n in numbers))}
    spelled = {" ".join(c.split()).casefold(): c for c in question.choices}
    whole = spelled.get(" ".join(said.split()).casefold())
    if whole is not None:
        return {"choices": [whole]}
    picked = [spelled.get(" ".join(p.split()).casefold()) for p in parts]
    if question.multiple and len(parts) > 1 and all(picked):
        return {"choices": list(dict.fromkeys(c for c in picked if c is not None))}
    if not question.free_text:
        how = "by number" if numbered(question) else "as it is spelled"
        raise ValueError(f"this question takes one of its choices ({how})")
    if not said:
        raise ValueError("an empty answer")
    return {"text": said}


def _ask(console: Console, ticket: api.InboxTicket) -> list[dict[str, Any]]:
    """Ask each question on the terminal until it gets a usable answer."""
    answers = []
    for number, question in enumerate(ticket.questions, start=1):
        console.print(Text(f"\n{number}. {question.question}", style="bold"), soft_wrap=True)
        by_number = numbered(question)
        for index, choice in enumerate(question.choices, start=1):
            console.print(Text(f"   {index if by_number else '-'}) {choice}"), soft_wrap=True)
        hint = "number" if by_number else "choice" if question.choices else "answer"
        if question.multiple:
            hint = "numbers, e.g. 1,3" if by_number else "choices, comma-separated"
        while True:
            said = typer.prompt(f"   your {hint}", prompt_suffix=": ")
            try:
                answers.append(parse_answer(question, said))
                break
            except ValueError as exc:
                console.print(Text(f"   {exc}: try again", style="yellow"))
    return answers


@inbox_app.command("respond")
def respond(
    ctx: typer.Context,
    ticket: TicketArg,
    answer: Annotated[
        list[str] | None,
        typer.Option(
            "--answer",
            "-a",
            help="One question's answer, in order (repeat per question): a choice's number "
            "(1,3 for several; not when the choices are numbers), a choice, or your own words.",
        ),
    ] = None,
    text: Annotated[str | None, typer.Option("--text", help="A reply to the whole ticket.")] = None,
    by: ByOption = None,
    as_json: JsonOption = False,
) -> None:
    """Answer a ticket: asks each question unless --answer or --text is given."""
    ticket_id = _ticket_id(ctx, ticket)

    def go(client: Heron) -> None:
        inbox = client.human.inbox
        found = inbox.retrieve(ticket_id)
        if found.status != "open":
            _fail(ctx, f"ticket {ticket_id} is {found.status}: it takes no response")
        answers: list[dict[str, Any]] | None = None
        reply = text
        if answer:
            if len(answer) != len(found.questions):
                _fail(
                    ctx,
                    f"give one --answer per question: {len(found.questions)} asked, "
                    f"{len(answer)} given",
                )
            try:
                answers = [parse_answer(q, a) for q, a in zip(found.questions, answer, strict=True)]
            except ValueError as exc:
                _fail(ctx, str(exc))
        elif text is None:
            console = _console()
            _show(console, found)
            if found.questions:
                answers = _ask(console, found)
            else:
                reply = typer.prompt("\nyour reply", prompt_suffix=": ")
        # At the revision shown: answers go by position, and the questions may change.
        done = inbox.respond(
            ticket_id, answers=answers, text=reply, responded_by=by, revision=found.revision
        )
        _done(done, as_json)

    _with_client(ctx, go)


def _done(ticket: api.InboxTicket, as_json: bool) -> None:
    if as_json:
        _print_json(ticket)
        return
    woke = f": node {ticket.node.node_id} has the answers" if ticket.node else ""
    _say(f"answered {ticket.ticket_id}{woke}", "green")


def _act(
    ctx: typer.Context,
    ticket: str,
    as_json: bool,
    action: Callable[[Heron, str], api.HumanRequest],
    said: Callable[[api.HumanRequest], str],
) -> None:
    """Run ``action`` on the ticket; print its answer as JSON or as ``said`` puts it."""
    ticket_id = _ticket_id(ctx, ticket)

    def go(client: Heron) -> None:
        found = action(client, ticket_id)
        if as_json:
            _print_json(found)
        else:
            _say(said(found))

    _with_client(ctx, go)


@inbox_app.command("progress")
def progress(
    ctx: typer.Context,
    ticket: TicketArg,
    note: Annotated[str, typer.Argument(help="What the asker should know.")],
    percent: Annotated[
        float | None, typer.Option(min=0, max=100, help="How far along (0-100).")
    ] = None,
    by: ByOption = None,
    as_json: JsonOption = False,
) -> None:
    """Post a progress note on an open ticket (kept and shown with it)."""
    _act(
        ctx,
        ticket,
        as_json,
        lambda client, id: client.human.inbox.progress(id, note, percent=percent, by=by),
        lambda found: f"noted on {found.request_id} ({len(found.progress)} notes)",
    )


@inbox_app.command("cancel")
def cancel(
    ctx: typer.Context,
    ticket: TicketArg,
    reason: Annotated[str | None, typer.Option(help="Why it is withdrawn.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Withdraw a ticket; a node waiting on it wakes and is told."""
    _act(
        ctx,
        ticket,
        as_json,
        lambda client, id: client.human.inbox.cancel(id, reason=reason),
        lambda found: f"cancelled {found.request_id}",
    )


@inbox_app.command("dismiss")
def dismiss(
    ctx: typer.Context,
    ticket: TicketArg,
    reason: Annotated[str | None, typer.Option(help="Why you will not answer.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Decline to answer a ticket; the node that asked wakes and is told why."""
    _act(
        ctx,
        ticket,
        as_json,
        lambda client, id: client.human.requests.dismiss(id, reason=reason),
        lambda found: f"dismissed {found.request_id}",
    )
