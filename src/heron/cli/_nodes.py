"""``heron nodes``: create, list, watch and steer the daemon's nodes with the typed client.

Every command talks to the daemon through :class:`heron.client.Heron` (never HTTP
of its own), so it reaches it as any client does: ``HERON_BASE_URL`` (+ token),
``HERON_SOCKET`` or ``$HERON_HOME/heron.sock``. Only the commands that set work
going (``create``, ``message``, ``fork``, ``revive``) start a daemon on a cold
socket, and say so on stderr: a daemon resumes the runs it left, so ``list`` or
``get`` starting one would set nodes running behind the user's back.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar, cast, get_args

import typer
from rich.console import Console
from rich.text import Text

from .. import api
from ._table import Cell, Column, print_table
from ._view import _one_line, fail
from ._watch import NodeView, outcome_lines

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ..client import APIError, ForkParams, Heron, NodeCreateParams

__all__ = ["api_error_text", "nodes_app"]

T = TypeVar("T")

EXIT_ERROR = 1
"""Exit status of an error: an unknown or invalid node, no daemon, a refused request."""
EXIT_FAILURE_OUTCOME = 3
"""Exit status of ``outcome``/``watch`` when the node settled with a failure (not 2:
that is Click's status for a usage error, which a script must tell apart)."""
EXIT_PENDING = 4
"""Exit status of ``outcome`` when the node has not settled yet."""
EXIT_INTERRUPTED = 130
"""Exit status after Ctrl-C stopped the watching (128 + SIGINT, as shells report it)."""

_EXIT_HELP = (
    f"Exit status: 0 the node settled with a result; {EXIT_FAILURE_OUTCOME} it settled "
    f"with a failure; {EXIT_ERROR} an error (an unknown node, no daemon); 2 a usage error"
)

nodes_app = typer.Typer(
    help="Nodes: durable agent runs on the daemon (create, list, watch, steer).",
    no_args_is_help=True,
)

NodeIdArg = Annotated[str, typer.Argument(metavar="ID", help="The node's id.", show_default=False)]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the daemon's answer as JSON.")]


# -- plumbing ------------------------------------------------------------------


def _fail(ctx: typer.Context, message: str) -> NoReturn:
    fail(message, debug=bool(ctx.obj and ctx.obj.get("debug")))


def api_error_text(exc: APIError) -> str:
    """``code: message``, with the fields a ``422 invalid_request`` names."""
    text = f"{exc.code}: {exc.message}"
    details = exc.details
    if exc.code == "invalid_request" and isinstance(details, list):
        problems = [
            f"{'.'.join(str(part) for part in item.get('loc', [])[1:]) or 'body'}: "
            f"{item.get('msg', '')}"
            for item in details[:3]
            if isinstance(item, dict)
        ]
        if problems:
            text += f" ({'; '.join(problems)})"
    return text


def _with_client(ctx: typer.Context, action: Callable[[Heron], T], *, start: bool = False) -> T:
    """Run ``action`` on a client; an API error becomes ``heron: error: code: message``.

    With ``start``, a cold Unix socket gets a daemon started (said on stderr);
    without it, the command fails saying none runs. The client itself never starts
    one: a daemon that dies mid-command is an error, not silently replaced.
    """
    from ..client import APIError, Heron

    try:
        client = Heron(auto_start=False)
    except (TypeError, ValueError) as exc:  # a malformed HERON_BASE_URL, say
        _fail(ctx, str(exc))
    with client:
        try:
            _ensure_daemon(ctx, client, start)
            return action(client)
        except APIError as exc:
            _fail(ctx, api_error_text(exc))
        except KeyboardInterrupt:
            _fail(ctx, "interrupted")


def _ensure_daemon(ctx: typer.Context, client: Heron, start: bool) -> None:
    """Make sure a daemon answers on ``client``'s Unix socket, starting one if ``start``."""
    from ..client import APIConnectionError, start_daemon

    if client.settings.socket_path is None:
        return  # a TCP listener is someone else's daemon: never started from here
    try:
        client.system.health()
        return
    except APIConnectionError as exc:
        if exc.code != "daemon_unavailable":
            raise
    address = client.settings.address
    if not start:
        _fail(ctx, f"no Heron daemon is running at {address} (start one: heron daemon start)")
    Console(stderr=True, highlight=False).print(
        Text(f"heron: no daemon was running at {address}: starting one", style="yellow"),
        soft_wrap=True,
    )
    start_daemon(client.settings)  # what the client does on a cold socket; waits for it
    Console(stderr=True, highlight=False).print(
        Text("heron: daemon started (heron daemon stop stops it)", style="yellow"),
        soft_wrap=True,
    )


def duration(value: str) -> str:
    """A Typer ``parser`` for duration options (``--deadline 1d``, ``--older-than 7d``):
    the value as given, or a usage error in words (exit 2)."""
    from ..api import parse_duration

    try:
        parse_duration(value)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    return value


def _check_id(ctx: typer.Context, value: str, what: str = "node id") -> str:
    """``value``, or one error line (the client's own check, before any client is built)."""
    from ..client import check_id

    try:
        return check_id(value, what)
    except TypeError as exc:
        _fail(ctx, str(exc))


def _console() -> Console:
    return Console(highlight=False)


def _say(text: str, style: str | None = None) -> None:
    _console().print(Text(text, style=style or ""), soft_wrap=True)


def _print_json(value: BaseModel | Sequence[BaseModel]) -> None:
    if isinstance(value, Sequence):
        data: Any = [item.model_dump(mode="json") for item in value]
    else:
        data = value.model_dump(mode="json")
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False))


def _when(moment: datetime | None) -> str:
    return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S") if moment else "-"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _label(node: api.Node, width: int = 48) -> str:
    """The node's name, else the start of its prompt."""
    return _one_line(node.name or node.prompt or "", width) or "-"


# -- watching ------------------------------------------------------------------


def _watch(
    client: Heron, node_id: str, after: int | None, *, created: api.Node | None = None
) -> int:
    """Render the node's events until it settles; the exit status to end with.

    ``created``: the node just created (its status was said, and it has no turns yet).
    """
    console = _console()
    if created is not None:
        view = NodeView(console, node_id, status=created.status, turns=0)
    elif after is None:
        view = _now(client, console, node_id)
    else:
        # From the start, every turn is counted; after N, how many came before is unknown.
        view = NodeView(console, node_id, turns=0 if after == 0 else None)
    try:
        with client.nodes.events(node_id, after=after) as stream:
            for event in stream:
                view.feed(event)
    except KeyboardInterrupt:
        # Leaving the `with` disconnected the stream; the node never hears of it.
        view.close()
        resume = f" --after {view.last_sequence}" if view.last_sequence else ""
        console.print(
            Text(
                f"stopped watching; node {node_id} keeps running "
                f"(heron nodes watch {node_id}{resume} to watch again)",
                style="yellow",
            ),
            soft_wrap=True,
        )
        return EXIT_INTERRUPTED
    finally:
        view.close()
    if view.outcome is None:  # the stream raises when it cannot go on: this is a daemon fault
        Console(stderr=True, highlight=False).print(
            Text(f"heron: error: the stream of node {node_id} ended before it settled", "red")
        )
        return 1
    _stopped(console, view.outcome)
    _summary(client, console, node_id)
    return 0 if isinstance(view.outcome, api.NodeResult) else EXIT_FAILURE_OUTCOME


def _stopped(console: Console, outcome: api.NodeOutcome) -> None:
    """``stopped: max_tokens (...)`` under a result whose last turn did not end as usual."""
    why = _STOP_REASONS.get(getattr(outcome, "stop_reason", None) or "")
    if why is not None:
        console.print(Text(f"stopped: {why}", style="yellow"), soft_wrap=True)


def _now(client: Heron, console: Console, node_id: str) -> NodeView:
    """Before the stream: what a running node is doing, at once (its text may be
    seconds away while the model reads its prompt); the view to draw the stream with.

    A node that has an outcome is replayed from its start, as the daemon does it; one
    without is joined where it is (its finished turns are not sent again, so the view
    counts on from the node's).
    """
    node = client.nodes.retrieve(node_id)
    if node.settled_at is not None or node.status in ("completed", "failed", "cancelled"):
        return NodeView(console, node_id, turns=0)
    if node.status != "running":
        # The stream's first event says it (dormant, with how to wake it).
        return NodeView(console, node_id, turns=node.turns)
    line = f"{node.node_id} is running · {_count(node.runs, 'run')} · "
    line += f"{_count(node.turns, 'turn')} so far · tokens {node.input_tokens} in / "
    line += f"{node.output_tokens} out"
    console.print(Text(line, style="dim"), soft_wrap=True)
    return NodeView(console, node_id, status="running", turns=node.turns)


def _summary(client: Heron, console: Console, node_id: str) -> None:
    """``n-1 · completed · 2 turns · tokens 120 in / 30 out`` after the outcome."""
    node = client.nodes.retrieve(node_id)
    line = f"{node.node_id} · {node.status} · {_count(node.turns, 'turn')} · "
    line += f"tokens {node.input_tokens} in / {node.output_tokens} out"
    console.print(Text(line, style="dim"), soft_wrap=True)


# -- commands ------------------------------------------------------------------


def _schema(ctx: typer.Context, value: str | None) -> dict[str, Any] | None:
    """``--schema``: a file holding a JSON schema, or the schema itself as JSON."""
    if value is None:
        return None
    path = Path(value).expanduser()
    source = f"--schema file {path}"
    text = value
    if not value.lstrip().startswith("{") and path.is_file():
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            _fail(ctx, f"cannot read {source}: {exc}")
    else:
        source = "--schema"
    try:
        schema = json.loads(text)
    except json.JSONDecodeError as exc:
        hint = "" if source != "--schema" else " (and no such file)"
        _fail(ctx, f"{source} is not valid JSON{hint}: {exc}")
    if not isinstance(schema, dict):
        _fail(ctx, f"{source} must hold a JSON object (a JSON schema)")
    return schema


def _scope(value: str) -> str:
    if value not in api.SCOPES:
        hint = " (--no-scopes grants none)" if value.strip().lower() in ("", "none") else ""
        raise typer.BadParameter(
            f"unknown scope {value!r}{hint}; known scopes: {', '.join(api.SCOPES)}"
        )
    return value


@nodes_app.command("create")
def create(
    ctx: typer.Context,
    prompt: Annotated[str, typer.Argument(help="The node's brief: its first message.")],
    model: Annotated[
        str | None, typer.Option(help="Model (provider spec), e.g. openai:gpt-4o.")
    ] = None,
    kind: Annotated[
        str | None, typer.Option(help="Persona (the profile's default if unset).")
    ] = None,
    profile: Annotated[str | None, typer.Option(help="Profile: store, memory, purview.")] = None,
    cwd: Annotated[
        Path | None,
        typer.Option(help="Working directory (default: the current one).", show_default=False),
    ] = None,
    name: Annotated[str | None, typer.Option(help="Display label.")] = None,
    deadline: Annotated[
        str | None,
        typer.Option(
            parser=duration,
            metavar="DURATION",
            help="Wall clock from now (1d, 2h, 1h30m); expiry cancels it.",
        ),
    ] = None,
    schema: Annotated[
        str | None,
        typer.Option(help="JSON schema the result must satisfy: a FILE or the JSON itself."),
    ] = None,
    scope: Annotated[
        list[str] | None,
        typer.Option(
            "--scope",
            parser=_scope,
            help=f"Allow only this scope (repeat for more): {', '.join(api.SCOPES)}; default: all.",
        ),
    ] = None,
    no_scopes: Annotated[
        bool, typer.Option("--no-scopes", help="Grant no scopes (no file, shell, ask ... tools).")
    ] = False,
    node_id: Annotated[
        str | None, typer.Option("--node-id", help="Create at this id (retry-safe).")
    ] = None,
    no_kickoff: Annotated[
        bool, typer.Option("--no-kickoff", help="Create it dormant: it reads PROMPT when woken.")
    ] = False,
    watch: Annotated[
        bool, typer.Option("--watch", help="Then watch it until it settles (as `watch`).")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Create a node (an agent run on the daemon) on PROMPT.

    With --watch the exit status is watch's: 0 result, 3 failure, 130 Ctrl-C, 1 error.
    Starts a daemon (and says so on stderr) when none is running.
    """
    if not prompt.strip():
        _fail(ctx, "the prompt is empty")
    if watch and as_json:
        _fail(ctx, "--watch draws the run; --json prints the created node: choose one")
    if node_id is not None:
        _check_id(ctx, node_id)
    if no_scopes and scope:
        _fail(ctx, "--no-scopes and --scope do not go together")
    body: dict[str, Any] = {
        "prompt": prompt,
        "cwd": os.fspath((cwd or Path.cwd()).expanduser().resolve()),
        "model": model,
        "kind": kind,
        "profile": profile,
        "name": name,
        "deadline": deadline,
        "output_schema": _schema(ctx, schema),
        "scopes": [] if no_scopes else scope or None,
        "node_id": node_id,
    }
    body = {key: value for key, value in body.items() if value is not None}
    if no_kickoff:
        body["no_kickoff"] = True

    def go(client: Heron) -> int:
        node = client.nodes.create(cast("NodeCreateParams", body))  # the daemon checks it
        if as_json:
            _print_json(node)
            return 0
        _say(f"created node {node.node_id} ({node.status})")
        if not watch:
            _say(f"watch it: heron nodes watch {node.node_id}", "dim")
            return 0
        # From the start: joined later, a running node's finished tool steps are not
        # sent again, and the first turn may be over by the time the stream opens.
        return _watch(client, node.node_id, 0, created=node)

    raise typer.Exit(_with_client(ctx, go, start=True))


_STATUSES: tuple[str, ...] = get_args(api.NodeStatus)


def _status(value: str) -> str:
    if value not in _STATUSES:
        raise typer.BadParameter(f"{value!r} is none of {', '.join(_STATUSES)}")
    return value


@nodes_app.command("list")
def list_(
    ctx: typer.Context,
    status: Annotated[
        list[str] | None,
        typer.Option(
            "--status",
            parser=_status,
            help=f"Only nodes with this status (repeat for more): {', '.join(_STATUSES)}.",
        ),
    ] = None,
    root: Annotated[
        bool | None,
        typer.Option(
            "--root/--children",
            help="Only roots (nodes no other node started), or only children.",
            show_default=False,
        ),
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option("--limit", min=1, max=1000, help="At most this many nodes (1-1000)."),
    ] = None,
    after: Annotated[
        str | None,
        typer.Option("--after", help="Continue after this cursor (what --limit printed)."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """List the nodes, oldest first: id, status, parent, name (or prompt), created, turns.

    Ids are shown whole; on a narrow terminal the name wraps and the columns that do
    not fit are left out (--json has every field). With --limit, the command for the
    next page is printed on stderr when there is one.
    """

    def go(client: Heron) -> None:
        wanted = cast("list[api.NodeStatus]", status or [])
        nodes = client.nodes.list(status=wanted or None, root=root, limit=limit, after=after)
        if nodes.next_cursor is not None:
            statuses = "".join(f" --status {s}" for s in status or [])
            roots = {None: "", True: " --root", False: " --children"}[root]
            typer.echo(
                f"more: heron nodes list{statuses}{roots} --limit {limit}"
                f" --after {nodes.next_cursor}",
                err=True,
            )
        if as_json:
            _print_json(nodes)
            return
        if not nodes:
            which = f" with status {', '.join(status)}" if status else ""
            kind = {True: " (roots)", False: " (children)", None: ""}[root]
            _say(f"no nodes{which}{kind}")
            return
        _node_table(nodes)

    _with_client(ctx, go)


def _node_table(nodes: list[api.Node]) -> None:
    """The ``list`` table; a PARENT column only when some node has a parent."""
    parents = any(node.parent for node in nodes)
    columns = [
        Column("ID", whole=True),
        Column("STATUS", whole=True),
        *([Column("PARENT", whole=True, drop=2)] if parents else []),
        Column("NAME / PROMPT", drop=1, wrap_min=16),
        Column("CREATED", drop=3, wrap_min=10),
        Column("TURNS", whole=True, justify="right"),
    ]
    rows: list[list[Cell]] = [
        [
            node.node_id,
            Text(node.status, style=_STATUS_STYLE.get(node.status, "")),
            *([node.parent or "-"] if parents else []),
            _label(node, 60),
            _when(node.created_at),
            str(node.turns),
        ]
        for node in nodes
    ]
    print_table(columns, rows)


_STATUS_STYLE = {
    "running": "cyan",
    "dormant": "blue",
    "interrupted": "yellow",
    "completed": "green",
    "failed": "red",
    "cancelled": "magenta",
}
"""How ``list`` colours each status."""


def _node_lines(node: api.Node) -> list[tuple[str, str]]:
    """The fields ``get`` shows, as (label, value) pairs; unset ones are left out."""
    rows: list[tuple[str, str | None]] = [
        ("id", node.node_id),
        ("status", node.status),
        ("name", node.name),
        ("prompt", _one_line(node.prompt, 200) if node.prompt else None),
        ("model", node.model),
        ("kind", node.kind),
        ("profile", node.profile),
        ("cwd", node.cwd + (" (pinned)" if node.pin_cwd else "") if node.cwd else None),
        ("mode", f"{node.mode}, {'root' if node.root else 'child'} ({node.root_lifecycle})"),
        ("parent", node.parent),
        ("forked from", node.forked_from),
        ("scopes", ", ".join(node.scopes) if node.scopes is not None else None),
        ("schema", "the result must satisfy an output schema" if node.has_output_schema else None),
        ("worktree", node.worktree.path if node.worktree else None),
        ("created", _when(node.created_at)),
        ("updated", _when(node.updated_at)),
        ("deadline", _when(node.deadline_at) if node.deadline_at else None),
        ("settled", _when(node.settled_at) if node.settled_at else None),
        ("work", f"{_count(node.runs, 'run')} · {_count(node.turns, 'turn')}"),
        ("tokens", f"{node.input_tokens} in / {node.output_tokens} out"),
    ]
    return [(label, value) for label, value in rows if value is not None]


@nodes_app.command("get")
def get(ctx: typer.Context, node_id: NodeIdArg, as_json: JsonOption = False) -> None:
    """Show one node."""
    _check_id(ctx, node_id)

    def go(client: Heron) -> None:
        node = client.nodes.retrieve(node_id)
        if as_json:
            _print_json(node)
            return
        width = max(len(label) for label, _ in _node_lines(node))
        for label, value in _node_lines(node):
            _say(f"{label:<{width}}  {value}")

    _with_client(ctx, go)


@nodes_app.command("watch", epilog=f"{_EXIT_HELP}; 130 stopped by Ctrl-C.")
def watch(
    ctx: typer.Context,
    node_id: NodeIdArg,
    after: Annotated[
        int | None,
        typer.Option(min=0, help="Start after this event number (default: from the start)."),
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print each event as one line of JSON, as it comes."),
    ] = False,
) -> None:
    """Watch a node's work live until it settles: text, tool steps, reports, the outcome.

    Ctrl-C stops watching; the node keeps running.
    """
    _check_id(ctx, node_id)
    if as_json:
        raise typer.Exit(_with_client(ctx, lambda client: _watch_json(client, node_id, after)))
    raise typer.Exit(_with_client(ctx, lambda client: _watch(client, node_id, after)))


def _watch_json(client: Heron, node_id: str, after: int | None) -> int:
    """``watch --json``: each event as a line of JSON (the stream's ``data`` with its
    ``type``), flushed as it comes, so a program can follow it; the exit status is
    ``watch``'s. Notes for people go to stderr."""
    outcome: api.NodeOutcome | None = None
    last: int | None = None
    try:
        with client.nodes.events(node_id, after=after) as stream:
            for event in stream:
                # (echo flushes: a program reading the pipe gets each line at once)
                typer.echo(json.dumps(event.model_dump(mode="json"), ensure_ascii=False))
                if not isinstance(event, api.StreamError):
                    last = event.sequence_number
                if isinstance(event, api.NodeSettled):
                    outcome = event.outcome
    except KeyboardInterrupt:
        resume = f" --after {last}" if last else ""
        _warn(
            f"stopped watching; node {node_id} keeps running "
            f"(heron nodes watch {node_id} --json{resume} to watch again)"
        )
        return EXIT_INTERRUPTED
    if outcome is None:
        _warn(f"heron: error: the stream of node {node_id} ended before it settled", "red")
        return EXIT_ERROR
    return 0 if isinstance(outcome, api.NodeResult) else EXIT_FAILURE_OUTCOME


def _warn(text: str, style: str = "yellow") -> None:
    Console(stderr=True, highlight=False).print(Text(text, style=style), soft_wrap=True)


_STOP_REASONS = {
    "max_tokens": "max_tokens (the answer was cut off at the model's token limit)",
    "max_turns": "max_turns (the run reached its turn limit)",
}
"""How ``outcome`` explains a result that did not end with the model finishing its answer."""


@nodes_app.command(
    "outcome", epilog=f"{_EXIT_HELP}; {EXIT_PENDING} not settled yet; 130 stopped by Ctrl-C."
)
def outcome(
    ctx: typer.Context,
    node_id: NodeIdArg,
    wait: Annotated[
        int,
        typer.Option(help="Wait up to this many seconds (0-25) for the node to settle."),
    ] = 0,
    follow: Annotated[
        bool, typer.Option("--follow", help="Wait as long as it takes (Ctrl-C stops waiting).")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """How a node settled: its result, or why it failed."""
    _check_id(ctx, node_id)
    if not 0 <= wait <= 25:
        raise typer.BadParameter(
            f"must be 0 to 25 seconds, got {wait} (use --follow to wait longer)",
            param_hint="--wait",
        )
    if follow and wait:
        raise typer.BadParameter("--wait and --follow do not go together", param_hint="--wait")

    def go(client: Heron) -> int:
        poll = client.nodes.outcome(node_id, wait=wait)
        try:
            # --follow long-polls the same route, so --json prints the same shape.
            while follow and poll.outcome is None:
                poll = client.nodes.outcome(node_id, wait=25)
        except KeyboardInterrupt:
            _say(f"stopped waiting; node {node_id} keeps running", "yellow")
            return EXIT_INTERRUPTED
        if as_json:
            _print_json(poll)
        elif poll.outcome is None:
            _say(f"pending: node {node_id} is {poll.node_status}")
        else:
            console = _console()
            for line in outcome_lines(poll.outcome, markdown=console.is_terminal):
                console.print(line, soft_wrap=isinstance(line, Text))
            _stopped(console, poll.outcome)
        if poll.outcome is None:
            return EXIT_PENDING
        return 0 if isinstance(poll.outcome, api.NodeResult) else EXIT_FAILURE_OUTCOME

    raise typer.Exit(_with_client(ctx, go))


@nodes_app.command("message")
def message(
    ctx: typer.Context,
    node_id: NodeIdArg,
    text: Annotated[str, typer.Argument(metavar="TEXT", help="The message.")],
    as_json: JsonOption = False,
) -> None:
    """Send a node a message: a dormant node wakes; a running one reads it next turn."""
    _check_id(ctx, node_id)
    if not text.strip():
        _fail(ctx, "the message is empty")

    def go(client: Heron) -> None:
        accepted = client.nodes.message(node_id, text)
        if as_json:
            _print_json(accepted)
        elif accepted.delivery == "woke":
            _say(f"message {accepted.message_id} sent: node {node_id} woke to read it")
        else:
            _say(f"message {accepted.message_id} queued: node {node_id} reads it next turn")

    _with_client(ctx, go, start=True)


def _node_action(
    ctx: typer.Context,
    node_id: str,
    as_json: bool,
    call: Callable[[Heron], api.Node],
    done: str,
    *,
    start: bool = False,
) -> None:
    """Run an action on ``node_id`` answering a node; print that node as JSON, or
    ``done`` with its id and status. ``start``: the action sets work going, so a
    daemon is started if none runs."""
    _check_id(ctx, node_id)

    def go(client: Heron) -> None:
        node = call(client)
        if as_json:
            _print_json(node)
        else:
            text = done.format(id=node.node_id, status=node.status)
            # "interrupted (interrupted)" says one thing twice: the status only when it adds.
            _say(text.replace(f" ({node.status})", "") if f"{node.status} (" in text else text)

    _with_client(ctx, go, start=start)


@nodes_app.command("interrupt")
def interrupt(ctx: typer.Context, node_id: NodeIdArg, as_json: JsonOption = False) -> None:
    """Stop the node's current turn and keep the node (revive or message it to go on)."""
    _node_action(
        ctx,
        node_id,
        as_json,
        lambda c: c.nodes.interrupt(node_id),
        "node {id} interrupted ({status}): heron nodes revive {id} goes on",
    )


@nodes_app.command("cancel")
def cancel(
    ctx: typer.Context,
    node_id: NodeIdArg,
    reason: Annotated[str | None, typer.Option(help="Why, recorded on its outcome.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Cancel a node and the subtree it owns, for good."""
    _node_action(
        ctx,
        node_id,
        as_json,
        lambda c: c.nodes.cancel(node_id, reason=reason),
        "node {id} cancelled ({status})",
    )


@nodes_app.command("fork")
def fork(
    ctx: typer.Context,
    node_id: NodeIdArg,
    prompt: Annotated[
        str | None, typer.Option(help="A first message for the fork (it runs at once).")
    ] = None,
    name: Annotated[str | None, typer.Option(help="The fork's display label.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Fork a node: a new node with a copy of its conversation and settings.

    Without --prompt the fork waits, dormant, for a message.
    """
    fields = {key: value for key, value in (("prompt", prompt), ("name", name)) if value}
    _node_action(
        ctx,
        node_id,
        as_json,
        lambda c: c.nodes.fork(node_id, cast("ForkParams", fields)),
        f"forked {node_id} into node {{id}} ({{status}})",
        start=True,
    )


@nodes_app.command("revive")
def revive(
    ctx: typer.Context,
    node_id: NodeIdArg,
    message: Annotated[
        str | None, typer.Option(help="What the revived run reads first (default: go on).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Revive a settled or interrupted node: it runs again from where it stopped."""
    _node_action(
        ctx,
        node_id,
        as_json,
        lambda c: c.nodes.revive(node_id, message=message),
        "node {id} revived ({status})",
        start=True,
    )
