"""``heron canvas``: what needs a person, the live roster, pruning, and transcript history."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from ._nodes import _check_id, _with_client, duration
from ._table import Cell, Column, print_table
from ._view import _one_line

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ..client import Heron

__all__ = ["canvas_app"]

canvas_app = typer.Typer(
    help="The canvas: what needs a person, the live nodes, pruning, and transcript history.",
    no_args_is_help=True,
)
history_app = typer.Typer(
    help="Search, grep, read and count every node's transcript.", no_args_is_help=True
)
canvas_app.add_typer(history_app, name="history")

JsonOption = Annotated[bool, typer.Option("--json", help="Print the daemon's answer as JSON.")]
NodesOption = Annotated[
    list[str] | None,
    typer.Option("--node", "-n", help="Only this node (repeat for more).", show_default=False),
]
ProfileOption = Annotated[
    str | None, typer.Option("--profile", help="Only this profile.", show_default=False)
]

_REASON_STYLE = {
    "asking": "bold magenta",
    "interrupted": "yellow",
    "failed": "red",
    "deadline_exceeded": "red",
    "waiting": "blue",
}


def _console() -> Console:
    return Console(highlight=False)


def _json(value: BaseModel | list[Any]) -> None:
    if isinstance(value, list):
        data: Any = [item.model_dump(mode="json") for item in value]
    else:
        data = value.model_dump(mode="json")
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False))


def _nodes(ctx: typer.Context, nodes: list[str] | None) -> list[str] | None:
    """The ``--node`` ids (each checked as the client would: one error line if not one)."""
    return [_check_id(ctx, node_id) for node_id in nodes] if nodes else None


def _truncated(truncated: bool) -> None:
    if truncated:
        _console().print(Text("(more left out: narrow the search, or raise --limit)", "dim"))


@canvas_app.command("attention")
def attention(
    ctx: typer.Context,
    nodes: NodesOption = None,
    profile: ProfileOption = None,
    as_json: JsonOption = False,
) -> None:
    """What needs a person, most urgent first: reason, node, since, summary."""

    ids = _nodes(ctx, nodes)

    def go(client: Heron) -> None:
        items = client.canvas.attention(node_ids=ids, profile=profile)
        if as_json:
            _json(items)
            return
        if not items:
            _console().print("nothing needs attention")
            return
        columns = [
            Column("REASON", whole=True),
            Column("NODE", whole=True),
            Column("SINCE", drop=1, wrap_min=10),
            Column("SUMMARY", wrap_min=20),
        ]
        rows: list[list[Cell]] = [
            [
                Text(item.reason, style=_REASON_STYLE.get(item.reason, "")),
                item.node_id or f"(request {item.request_id})",
                item.since.astimezone().strftime("%Y-%m-%d %H:%M:%S"),
                _one_line(item.summary, 200),
            ]
            for item in items
        ]
        print_table(columns, rows)

    _with_client(ctx, go)


@canvas_app.command("roster")
def roster(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """The live nodes and what each is doing: status, run, last event, jobs, children."""

    def go(client: Heron) -> None:
        entries = client.canvas.roster()
        if as_json:
            _json(entries)
            return
        if not entries:
            _console().print("no live nodes")
            return
        columns = [
            Column("ID", whole=True),
            Column("STATUS", whole=True),
            Column("RUN", whole=True, drop=2),
            Column("LAST EVENT", drop=3, wrap_min=10),
            Column("JOBS", whole=True, justify="right", drop=4),
            Column("CHILDREN", whole=True, justify="right", drop=5),
            Column("NAME", drop=1, wrap_min=12),
        ]
        rows = [
            [
                entry.node_id,
                entry.status,
                f"{entry.run}{' (active)' if entry.run_active else ''}",
                entry.last_event_type or "-",
                str(entry.open_jobs),
                str(entry.live_children),
                _one_line(entry.name or "", 80) or "-",
            ]
            for entry in entries
        ]
        print_table(columns, rows)

    _with_client(ctx, go)


@canvas_app.command("prune")
def prune(
    ctx: typer.Context,
    older_than: Annotated[
        str | None,
        typer.Option(
            "--older-than",
            parser=duration,
            metavar="DURATION",
            help="Only nodes settled longer ago than this (7d, 12h, 30m); default 7d "
            "without --node.",
            show_default=False,
        ),
    ] = None,
    status: Annotated[
        list[str] | None,
        typer.Option(
            "--status", help="Only this settled status (repeat): completed, failed, cancelled."
        ),
    ] = None,
    nodes: NodesOption = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what would go; delete nothing.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Delete settled nodes and everything of theirs (try --dry-run first)."""

    ids = _nodes(ctx, nodes)

    def go(client: Heron) -> None:
        result = client.canvas.prune(
            older_than=older_than,
            statuses=status or None,  # type: ignore[arg-type]  # the daemon checks them
            node_ids=ids,
            dry_run=dry_run,
        )
        if as_json:
            _json(result)
            return
        console = _console()
        verb = "would prune" if result.dry_run else "pruned"
        console.print(f"{verb} {len(result.pruned)} node{'' if len(result.pruned) == 1 else 's'}")
        for node_id in result.pruned:
            console.print(f"  {node_id}")
        for skip in result.skipped:
            console.print(Text(f"  kept {skip.node_id}: {skip.reason}", "dim"))

    _with_client(ctx, go)


LimitOption = Annotated[int, typer.Option("--limit", min=1, max=500, help="At most this many.")]


@history_app.command("search")
def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="Words to find.", show_default=False)],
    nodes: NodesOption = None,
    profile: ProfileOption = None,
    limit: LimitOption = 20,
    as_json: JsonOption = False,
) -> None:
    """Messages holding the words, best first: node, message, role, snippet."""

    ids = _nodes(ctx, nodes)

    def go(client: Heron) -> None:
        found = client.canvas.history.search(query, node_ids=ids, profile=profile, limit=limit)
        if as_json:
            _json(found)
            return
        if not found.hits:
            _console().print(f"no message holds {query!r}")
        else:
            columns = [
                Column("NODE", whole=True),
                Column("#", whole=True, justify="right"),
                Column("ROLE", whole=True, drop=1),
                Column("SNIPPET", wrap_min=20),
            ]
            rows = [
                [hit.node_id, str(hit.index), hit.role, _one_line(hit.snippet, 200)]
                for hit in found.hits
            ]
            print_table(columns, rows)
        _truncated(found.truncated)

    _with_client(ctx, go)


@history_app.command("grep")
def grep(
    ctx: typer.Context,
    pattern: Annotated[str, typer.Argument(help="A regular expression.", show_default=False)],
    nodes: NodesOption = None,
    profile: ProfileOption = None,
    ignore_case: Annotated[
        bool, typer.Option("--ignore-case", "-i", help="Match regardless of case.")
    ] = False,
    context: Annotated[
        int, typer.Option("--context", "-C", min=0, max=10, help="Lines shown around each.")
    ] = 0,
    limit: LimitOption = 100,
    as_json: JsonOption = False,
) -> None:
    """Transcript lines matching the pattern, as NODE#MESSAGE:LINE: text (context lines
    with '-' for ':')."""

    ids = _nodes(ctx, nodes)

    def go(client: Heron) -> None:
        found = client.canvas.history.grep(
            pattern,
            node_ids=ids,
            profile=profile,
            ignore_case=ignore_case,
            context=context,
            limit=limit,
        )
        if as_json:
            _json(found)
            return
        for match in found.matches:
            where = f"{match.node_id}#{match.index}"
            first = match.line - len(match.before)
            for number, line in enumerate(match.before, first):
                typer.echo(f"{where}-{number}- {line}")
            typer.echo(f"{where}:{match.line}: {match.text}")
            for number, line in enumerate(match.after, match.line + 1):
                typer.echo(f"{where}-{number}- {line}")
        if not found.matches:
            _console().print(f"no line matches {pattern!r}")
        if found.timed_out:
            _console().print(Text("(the pattern took too long and was stopped)", "yellow"))
        else:
            _truncated(found.truncated)

    _with_client(ctx, go)


@history_app.command("read")
def read(
    ctx: typer.Context,
    node_id: Annotated[str, typer.Argument(help="The node.", show_default=False)],
    offset: Annotated[int, typer.Option("--offset", min=0, help="The first message.")] = 0,
    limit: LimitOption = 100,
    as_json: JsonOption = False,
) -> None:
    """A node's transcript (a running node's as it is now): each message with its role,
    text and tool calls."""

    node_id = _check_id(ctx, node_id)

    def go(client: Heron) -> None:
        page = client.canvas.history.read(node_id, offset=offset, limit=limit)
        if as_json:
            _json(page)
            return
        console = _console()
        for message in page.messages:
            label = message.role + (f" ({message.tool_name})" if message.tool_name else "")
            if message.is_error:
                label += " error"
            console.print(Text(f"#{message.index} {label}", "bold"))
            if message.text:
                console.print(Text(message.text))
            for call in message.tool_calls:
                arguments = json.dumps(call.arguments, ensure_ascii=False)
                console.print(Text(f"-> {call.name} {arguments}", "cyan"))
        if page.next_offset is not None:
            more = (
                f"(messages {page.next_offset}-{page.total - 1} left: --offset {page.next_offset})"
            )
            console.print(Text(more, "dim"))

    _with_client(ctx, go)


@history_app.command("stats")
def stats(
    ctx: typer.Context,
    nodes: NodesOption = None,
    profile: ProfileOption = None,
    as_json: JsonOption = False,
) -> None:
    """Messages by role, tool calls by tool, turns and tokens of the transcripts."""

    ids = _nodes(ctx, nodes)

    def go(client: Heron) -> None:
        found = client.canvas.history.stats(node_ids=ids, profile=profile)
        if as_json:
            _json(found)
            return
        console = _console()
        roles = ", ".join(f"{role} {n}" for role, n in found.messages_by_role.items())
        console.print(f"{found.nodes} nodes, {found.messages} messages ({roles or 'none'})")
        console.print(
            f"{found.turns} turns, {found.input_tokens} tokens in, {found.output_tokens} tokens out"
        )
        console.print(f"{found.tool_calls} tool calls, {found.tool_errors} failed")
        for tool, n in found.tool_calls_by_tool.items():
            console.print(f"  {tool} {n}")
        _truncated(found.truncated)

    _with_client(ctx, go)
