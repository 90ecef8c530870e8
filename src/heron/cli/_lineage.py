"""``heron nodes`` verbs beyond create and watch: lineage (promote, demote, recycle,
relaunch-root, revive-all), orchestration (yield, wait, tree) and a node's parts
(reports, jobs, worktree). Same conventions as the other ``heron nodes`` commands:
one line saying what happened, ``--json`` for the daemon's answer."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any, get_args

import typer
from rich.console import Console
from rich.text import Text
from rich.tree import Tree

from .. import api
from ..api import parse_duration
from ._nodes import (
    _STATUS_STYLE,
    JsonOption,
    NodeIdArg,
    _check_id,
    _console,
    _count,
    _label,
    _node_action,
    _print_json,
    _say,
    _when,
    _with_client,
    duration,
    nodes_app,
)
from ._table import Cell, Column, print_table
from ._view import _one_line

if TYPE_CHECKING:
    from ..client import Heron

__all__ = ["jobs_app", "worktree_app"]

jobs_app = typer.Typer(
    help="A node's background commands (bash-start): list, cancel.", no_args_is_help=True
)
worktree_app = typer.Typer(
    help="A node's managed git worktree: close (keep the branch) or abandon.",
    no_args_is_help=True,
)
nodes_app.add_typer(jobs_app, name="jobs")
nodes_app.add_typer(worktree_app, name="worktree")

_MAX_WAIT_SECONDS = 7 * 86400
"""The longest ``nodes wait --timeout`` (a week, as the daemon takes)."""


# -- lineage -------------------------------------------------------------------------


@nodes_app.command("promote")
def promote(
    ctx: typer.Context,
    node_id: NodeIdArg,
    message: Annotated[
        str | None,
        typer.Option(help="Say the work to fan out (wakes a dormant node to read it)."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Make a node an orchestrator (it fans work out to children) from its next run."""
    _node_action(
        ctx,
        node_id,
        as_json,
        lambda c: c.nodes.promote(node_id, message=message),
        "node {id} promoted: an orchestrator from its next run ({status})",
        start=message is not None,
    )


@nodes_app.command("demote")
def demote(ctx: typer.Context, node_id: NodeIdArg, as_json: JsonOption = False) -> None:
    """Make a node hands-on again (no children of its own) from its next run."""
    _node_action(
        ctx,
        node_id,
        as_json,
        lambda c: c.nodes.demote(node_id),
        "node {id} demoted: hands-on from its next run ({status})",
    )


@nodes_app.command("recycle")
def recycle(ctx: typer.Context, node_id: NodeIdArg, as_json: JsonOption = False) -> None:
    """Same node, fresh context: it remembers only a summary of its conversation.

    Its model writes the summary now; refused while the node runs.
    """
    _check_id(ctx, node_id)

    def go(client: Heron) -> None:
        done = client.nodes.recycle(node_id)
        if as_json:
            _print_json(done)
            return
        _say(f"node {done.node.node_id} recycled ({done.node.status}); it remembers this summary:")
        console = _console()
        for line in done.summary.rstrip().splitlines():
            console.print(Text(f"  {line}", style="dim"), soft_wrap=True)

    _with_client(ctx, go)


@nodes_app.command("relaunch-root")
def relaunch_root(ctx: typer.Context, node_id: NodeIdArg, as_json: JsonOption = False) -> None:
    """Start a node's tree over from its root's original prompt.

    Everything below the root is closed; the root runs again in a fresh conversation.
    """
    _node_action(
        ctx,
        node_id,
        as_json,
        lambda c: c.nodes.relaunch_root(node_id),
        f"tree of {node_id} relaunched from its root {{id}} ({{status}})",
        start=True,
    )


@nodes_app.command("revive-all")
def revive_all(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Revive every node that stopped involuntarily.

    That is: interrupted by no request, or failed by its provider or a crash that
    could go differently.
    """

    def go(client: Heron) -> None:
        done = client.nodes.revive_all()
        if as_json:
            _print_json(done)
            return
        if not done.revived and not done.failed:
            _say("nothing to revive: no node stopped involuntarily")
            return
        _say(f"revived {_count(len(done.revived), 'node')}")
        for node in done.revived:
            _say(f"  {node.node_id} ({node.status}) {_label(node, 60)}")
        for failure in done.failed:
            line = f"  not revived {failure.node_id}: {failure.error.code}: {failure.error.message}"
            _console().print(Text(line, style="red"), soft_wrap=True)

    _with_client(ctx, go, start=True)


# -- orchestration ---------------------------------------------------------------------


@nodes_app.command("yield")
def yield_(
    ctx: typer.Context,
    node_id: NodeIdArg,
    reason: Annotated[str | None, typer.Option(help="Why, recorded with it.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Hand a running orchestrator's turn back while its children work.

    It sleeps (dormant); its children's outcomes wake it.
    """
    _node_action(
        ctx,
        node_id,
        as_json,
        lambda c: c.nodes.yield_(node_id, reason=reason),
        "node {id} yielded ({status}): its children's outcomes wake it",
    )


def _timeout(value: str) -> str:
    """``--timeout``: a duration (checked in words) of at most a week."""
    duration(value)
    if parse_duration(value) > _MAX_WAIT_SECONDS:
        raise typer.BadParameter(f"at most a week (7d), got {value!r}")
    return value


@nodes_app.command("wait")
def wait(
    ctx: typer.Context,
    node_id: NodeIdArg,
    children: Annotated[
        list[str],
        typer.Argument(metavar="CHILD...", help="Children of the node to wait for."),
    ],
    timeout: Annotated[
        str | None,
        typer.Option(
            parser=_timeout,
            metavar="DURATION",
            help="Wake it then with what has settled (30m, 2h; at most 7d).",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Park a node until these children of its own settle (their outcomes wake it)."""
    _check_id(ctx, node_id)
    ids = [_check_id(ctx, child, "child node id") for child in children]
    seconds = parse_duration(timeout) if timeout is not None else None

    def go(client: Heron) -> None:
        status = client.nodes.wait(node_id, ids, timeout_seconds=seconds)
        if as_json:
            _print_json(status)
            return
        if status.pending:
            line = f"node {status.node_id} waits ({status.status}) for "
            line += f"{_count(len(status.pending), 'child')}: {', '.join(status.pending)}"
        else:
            line = f"node {status.node_id}: every child had settled; their outcomes are on the way"
        if status.settled and status.pending:
            line += f" (settled already: {', '.join(status.settled)})"
        if status.deadline_at is not None:
            line += f"; gives up at {_when(status.deadline_at)}"
        _say(line)

    _with_client(ctx, go)


def _tree_json(node: api.Node, below: dict[str | None, list[api.Node]]) -> dict[str, Any]:
    return {
        "node": node.model_dump(mode="json"),
        "children": [_tree_json(child, below) for child in below.get(node.node_id, [])],
    }


def _tree_label(node: api.Node) -> Text:
    label = Text(node.node_id, style="bold")
    label.append(f"  {node.status}", style=_STATUS_STYLE.get(node.status, ""))
    if node.mode == "orchestrator":
        label.append("  orchestrator", style="magenta")
    label.append(f"  {_label(node, 60)}", style="dim")
    return label


def _grow(branch: Tree, node: api.Node, below: dict[str | None, list[api.Node]]) -> None:
    for child in below.get(node.node_id, []):
        _grow(branch.add(_tree_label(child)), child, below)


@nodes_app.command("tree")
def tree(
    ctx: typer.Context,
    node_id: Annotated[
        str | None,
        typer.Argument(
            metavar="[ID]", help="Draw this node's subtree (default: every tree with children)."
        ),
    ] = None,
    every: Annotated[bool, typer.Option("--all", help="Every root, with children or not.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Orchestrators and their children, as trees: id, status, mode, name.

    --json prints each tree as {"node": ..., "children": [...]}.
    """
    if node_id is not None:
        _check_id(ctx, node_id)

    def go(client: Heron) -> None:
        nodes = client.nodes.list()
        below: dict[str | None, list[api.Node]] = {}
        for node in nodes:
            below.setdefault(node.parent, []).append(node)
        if node_id is not None:
            tops = [node for node in nodes if node.node_id == node_id]
            if not tops:
                tops = [client.nodes.retrieve(node_id)]  # raises node_not_found
        else:
            known = {node.node_id for node in nodes}
            tops = [
                node
                for node in nodes
                if (node.parent is None or node.parent not in known)
                and (every or node.node_id in below)
            ]
        if as_json:
            trees = [_tree_json(top, below) for top in tops]
            typer.echo(json.dumps(trees, indent=2, ensure_ascii=False))
            return
        if not tops:
            _say("no node has children (--all lists every root)")
            return
        console = _console()
        for top in tops:
            root = Tree(_tree_label(top), guide_style="dim")
            _grow(root, top, below)
            console.print(root)

    _with_client(ctx, go)


# -- a node's parts ----------------------------------------------------------------------

_TIERS: tuple[str, ...] = get_args(api.ReportTier)


def _tier(value: str) -> str:
    if value not in _TIERS:
        raise typer.BadParameter(f"{value!r} is none of {', '.join(_TIERS)}")
    return value


def _report(console: Console, report: api.Report) -> None:
    head = Text(f"▍ report {report.report_id} · {report.tier}", style="magenta")
    if report.title:
        head.append(f" · {report.title}", style="bold")
    head.append(f" · {_when(report.created_at)}", style="dim")
    console.print(head, soft_wrap=True)
    for line in report.body.rstrip().splitlines():
        console.print(Text(f"  {line}"), soft_wrap=True)
    if report.path:
        console.print(Text(f"  (written to {report.path})", style="dim"), soft_wrap=True)


@nodes_app.command("reports")
def reports(
    ctx: typer.Context,
    node_id: NodeIdArg,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="At most this many.")] = 50,
    tier: Annotated[
        str | None,
        typer.Option(parser=_tier, metavar="TIER", help=f"Only this tier: {', '.join(_TIERS)}."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """The reports a node pushed, newest first."""
    _check_id(ctx, node_id)

    def go(client: Heron) -> None:
        found = client.nodes.reports.list(node_id, limit=limit, tier=tier)  # type: ignore[arg-type]
        if as_json:
            _print_json(found)
            return
        if not found:
            _say(f"node {node_id} pushed no reports" + (f" of tier {tier}" if tier else ""))
            return
        console = _console()
        for report in found:
            _report(console, report)

    _with_client(ctx, go)


@jobs_app.command("list")
def jobs_list(ctx: typer.Context, node_id: NodeIdArg, as_json: JsonOption = False) -> None:
    """A node's background commands, oldest first: status, exit, output size, command."""
    _check_id(ctx, node_id)

    def go(client: Heron) -> None:
        jobs = client.nodes.jobs.list(node_id)
        if as_json:
            _print_json(jobs)
            return
        if not jobs:
            _say(f"node {node_id} has no jobs (this daemon process knows of)")
            return
        columns = [
            Column("JOB", whole=True),
            Column("STATUS", whole=True),
            Column("EXIT", whole=True, drop=3),
            Column("STARTED", wrap_min=10, drop=2),
            Column("OUTPUT", whole=True, justify="right", drop=1),
            Column("COMMAND", wrap_min=16),
        ]
        rows: list[list[Cell]] = []
        for job in jobs:
            status = job.status + (" (children run)" if job.children_running else "")
            ended = str(job.exit_code) if job.exit_code is not None else job.signal or "-"
            rows.append(
                [
                    job.job_id,
                    status,
                    ended,
                    _when(job.started_at),
                    _count(job.output_lines, "line"),
                    _one_line(job.command, 200),
                ]
            )
        print_table(columns, rows)

    _with_client(ctx, go)


@jobs_app.command("cancel")
def jobs_cancel(
    ctx: typer.Context,
    node_id: NodeIdArg,
    job_id: Annotated[str, typer.Argument(metavar="JOB", help="The job's id (bash-1 ...).")],
    as_json: JsonOption = False,
) -> None:
    """Kill a node's job and everything it started."""
    _check_id(ctx, node_id)
    _check_id(ctx, job_id, "job id")

    def go(client: Heron) -> None:
        job = client.nodes.jobs.cancel(node_id, job_id)
        if as_json:
            _print_json(job)
        else:
            _say(f"job {job.job_id} of node {job.node_id} cancelled ({job.status})")

    _with_client(ctx, go)


@worktree_app.command("close")
def worktree_close(ctx: typer.Context, node_id: NodeIdArg, as_json: JsonOption = False) -> None:
    """Remove a node's worktree and keep its branch (refused with uncommitted changes)."""
    _node_action(
        ctx,
        node_id,
        as_json,
        lambda c: c.nodes.worktree.close(node_id),
        "worktree of node {id} closed; its branch stays",
    )


@worktree_app.command("abandon")
def worktree_abandon(ctx: typer.Context, node_id: NodeIdArg, as_json: JsonOption = False) -> None:
    """Remove a node's worktree, discarding its changes, and delete its branch."""
    _node_action(
        ctx,
        node_id,
        as_json,
        lambda c: c.nodes.worktree.abandon(node_id),
        "worktree of node {id} abandoned; its changes and branch are gone",
    )
