"""``heron memory``: a profile's notes on the daemon, by path, versioned and searchable.

Every command goes through :class:`heron.client.Heron` (``client.memory``) and
never starts a daemon. ``--json`` prints the daemon's answer; otherwise the
output is for people. Exit status: 0 done, 1 an error (refused, no daemon),
2 a usage error.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

from .. import api
from ._nodes import _check_id, _console, _fail, _print_json, _say, _when, _with_client
from ._table import Column, print_table

if TYPE_CHECKING:
    from ..client import Heron

__all__ = ["memory_app"]

memory_app = typer.Typer(
    help="Memory: a profile's notes by path (versioned, searchable).", no_args_is_help=True
)

IdArg = Annotated[str, typer.Argument(metavar="ID", help="The entry's id (mem_…).")]
ProfileOption = Annotated[
    str | None, typer.Option("--profile", help="The profile whose memory [default: default].")
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the daemon's answer as JSON.")]
BodyOption = Annotated[str | None, typer.Option("--body", help="The body (Markdown) as text.")]
FileOption = Annotated[
    str | None,
    typer.Option("--file", metavar="FILE", help="Read the body from FILE ('-': standard input)."),
]
TitleOption = Annotated[str | None, typer.Option("--title", help="A one-line title.")]
TagOption = Annotated[
    list[str] | None, typer.Option("--tag", help="A tag (repeat for more).", show_default=False)
]
ExpectedOption = Annotated[
    int | None,
    typer.Option("--expected-version", min=1, help="Refuse unless the entry is at this version."),
]


def _body(ctx: typer.Context, body: str | None, file: str | None, *, required: bool) -> str | None:
    """The body from ``--body`` or ``--file`` (``-``: stdin); one of them at most."""
    if body is not None and file is not None:
        _fail(ctx, "give the body with --body or --file, not both")
    if file == "-":
        return sys.stdin.read()
    if file is not None:
        try:
            return Path(file).expanduser().read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            _fail(ctx, f"cannot read --file {file}: {exc}")
    if body is None and required:
        _fail(ctx, "give the body with --body TEXT or --file FILE (--file - reads stdin)")
    return body


def _show(entry: api.MemoryEntry) -> None:
    """An entry for people: its fields, then its body."""
    lines = [("id", entry.entry_id), ("path", entry.path), ("profile", entry.profile)]
    if entry.title:
        lines.append(("title", entry.title))
    if entry.tags:
        lines.append(("tags", ", ".join(entry.tags)))
    lines.append(("version", f"{entry.version} (updated {_when(entry.updated_at)})"))
    if entry.deleted_at is not None:
        lines.append(("deleted", _when(entry.deleted_at)))
    for label, value in lines:
        _say(f"{label + ':':<9}{value}")
    typer.echo("")
    typer.echo(entry.body, nl=not entry.body.endswith("\n"))


def _entries(entries: list[api.MemoryEntrySummary]) -> None:
    columns = [
        Column("PATH", whole=True),
        Column("TITLE", drop=1, wrap_min=12),
        Column("TAGS", drop=2, wrap_min=10),
        Column("VER", whole=True, justify="right", drop=4),
        Column("UPDATED", drop=3, wrap_min=10),
        Column("ID", whole=True),
    ]
    rows = [
        [e.path, e.title or "", ", ".join(e.tags), str(e.version), _when(e.updated_at), e.entry_id]
        for e in entries
    ]
    print_table(columns, rows)


def _done(entry: api.MemoryEntry, as_json: bool, verb: str) -> None:
    if as_json:
        _print_json(entry)
    else:
        _say(f"{verb} {entry.path} ({entry.entry_id}, version {entry.version})")


@memory_app.command("list")
def list_(
    ctx: typer.Context,
    profile: ProfileOption = None,
    prefix: Annotated[str | None, typer.Option(help="Only entries at or under this path.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=200, help="Entries per page.")] = 50,
    cursor: Annotated[str | None, typer.Option(help="The page after this cursor.")] = None,
    every: Annotated[bool, typer.Option("--all", help="Every page, not just one.")] = False,
    tag: TagOption = None,
    as_json: JsonOption = False,
) -> None:
    """List the live entries in path order, a page at a time (--all: every one)."""

    def go(client: Heron) -> None:
        if every:
            entries = client.memory.list_all(profile=profile, prefix=prefix, tags=tag)
            next_cursor = None
            if as_json:
                _print_json(api.MemoryPage(items=entries, next_cursor=None))
                return
        else:
            page = client.memory.list(
                profile=profile, prefix=prefix, limit=limit, cursor=cursor, tags=tag
            )
            if as_json:
                _print_json(api.MemoryPage(items=page, next_cursor=page.next_cursor))
                return
            entries, next_cursor = page, page.next_cursor
        if not entries:
            _say("no memory entries" + (f" under {prefix}" if prefix else ""))
        else:
            _entries(entries)
        if next_cursor is not None:
            _say(f"more: heron memory list --cursor {next_cursor}", "dim")

    _with_client(ctx, go)


@memory_app.command("get")
def get(
    ctx: typer.Context, entry_id: IdArg, profile: ProfileOption = None, as_json: JsonOption = False
) -> None:
    """Show one entry: its fields, then its body."""
    _check_id(ctx, entry_id, "memory id")

    def go(client: Heron) -> None:
        entry = client.memory.retrieve(entry_id, profile=profile)
        _print_json(entry) if as_json else _show(entry)

    _with_client(ctx, go)


@memory_app.command("create")
def create(
    ctx: typer.Context,
    path: Annotated[str, typer.Argument(help="Where it goes: a/b/c.")],
    body: BodyOption = None,
    file: FileOption = None,
    title: TitleOption = None,
    tag: TagOption = None,
    profile: ProfileOption = None,
    as_json: JsonOption = False,
) -> None:
    """Create an entry at PATH (the body from --body, or --file; --file - reads stdin)."""
    text = _body(ctx, body, file, required=True)
    assert text is not None

    def go(client: Heron) -> None:
        entry = client.memory.create(path, text, title=title, tags=tag, profile=profile)
        _done(entry, as_json, "created")

    _with_client(ctx, go)


@memory_app.command("update")
def update(
    ctx: typer.Context,
    entry_id: IdArg,
    body: BodyOption = None,
    file: FileOption = None,
    title: TitleOption = None,
    no_title: Annotated[bool, typer.Option("--no-title", help="Clear the title.")] = False,
    tag: TagOption = None,
    no_tags: Annotated[bool, typer.Option("--no-tags", help="Remove every tag.")] = False,
    expected_version: ExpectedOption = None,
    profile: ProfileOption = None,
    as_json: JsonOption = False,
) -> None:
    """Change an entry's body, title or tags (what is not given stays)."""
    _check_id(ctx, entry_id, "memory id")
    fields: dict[str, Any] = {}
    text = _body(ctx, body, file, required=False)
    if text is not None:
        fields["body"] = text
    if title is not None and no_title:
        _fail(ctx, "--title and --no-title contradict each other")
    if title is not None or no_title:
        fields["title"] = title
    if tag and no_tags:
        _fail(ctx, "--tag and --no-tags contradict each other")
    if tag or no_tags:
        fields["tags"] = list(tag or [])
    if not fields:
        _fail(ctx, "nothing to change: give --body/--file, --title/--no-title or --tag/--no-tags")
    if expected_version is not None:
        fields["expected_version"] = expected_version

    def go(client: Heron) -> None:
        entry = client.memory.update(entry_id, profile=profile, **fields)
        _done(entry, as_json, "updated")

    _with_client(ctx, go)


@memory_app.command("delete")
def delete(
    ctx: typer.Context,
    entry_id: IdArg,
    expected_version: ExpectedOption = None,
    profile: ProfileOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete an entry (its history stays: heron memory history ID)."""
    _check_id(ctx, entry_id, "memory id")

    def go(client: Heron) -> None:
        entry = client.memory.delete(entry_id, profile=profile, expected_version=expected_version)
        _done(entry, as_json, "deleted")

    _with_client(ctx, go)


@memory_app.command("move")
def move(
    ctx: typer.Context,
    entry_id: IdArg,
    path: Annotated[str, typer.Argument(help="The new path.")],
    expected_version: ExpectedOption = None,
    profile: ProfileOption = None,
    as_json: JsonOption = False,
) -> None:
    """Give an entry a new path."""
    _check_id(ctx, entry_id, "memory id")

    def go(client: Heron) -> None:
        entry = client.memory.move(
            entry_id, path, profile=profile, expected_version=expected_version
        )
        _done(entry, as_json, "moved to")

    _with_client(ctx, go)


@memory_app.command("search")
def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help='Words, "a phrase", -excluded, or.')],
    limit: Annotated[int, typer.Option(min=1, max=100, help="At most this many hits.")] = 10,
    prefix: Annotated[str | None, typer.Option(help="Only entries at or under this path.")] = None,
    tag: TagOption = None,
    profile: ProfileOption = None,
    as_json: JsonOption = False,
) -> None:
    """Full-text search, best match first, with an excerpt of each."""

    def go(client: Heron) -> None:
        hits = client.memory.search(query, profile=profile, limit=limit, prefix=prefix, tags=tag)
        if as_json:
            typer.echo(_json_list(hits))
            return
        if not hits:
            _say(f"no memory entry matches {query!r}")
        for hit in hits:
            title = f" — {hit.entry.title}" if hit.entry.title else ""
            line = Text(f"{hit.entry.path}{title}", style="bold")
            line.append(f"  {hit.entry.entry_id} · score {hit.score:.3g}", style="dim")
            _console().print(line, soft_wrap=True)
            _say(f"  {' '.join(hit.snippet.split())}")

    _with_client(ctx, go)


@memory_app.command("history")
def history(
    ctx: typer.Context,
    entry_id: IdArg,
    profile: ProfileOption = None,
    limit: Annotated[
        int | None, typer.Option(min=1, max=1000, help="Only the newest this many.")
    ] = None,
    before: Annotated[int | None, typer.Option(min=1, help="Only versions older than this.")] = (
        None
    ),
    as_json: JsonOption = False,
) -> None:
    """The versions of an entry, newest first (a deleted entry's too)."""
    _check_id(ctx, entry_id, "memory id")

    def go(client: Heron) -> None:
        versions = client.memory.history(entry_id, profile=profile, limit=limit, before=before)
        if as_json:
            typer.echo(_json_list(versions))
            return
        columns = [
            Column("VER", whole=True, justify="right"),
            Column("OP", whole=True),
            Column("PATH", whole=True),
            Column("TITLE", drop=1, wrap_min=12),
            Column("BY", drop=2, wrap_min=8),
            Column("WHEN", drop=3, wrap_min=10),
        ]
        rows = [
            [str(v.version), v.op, v.path, v.title or "", v.author or "api", _when(v.created_at)]
            for v in versions
        ]
        print_table(columns, rows)

    _with_client(ctx, go)


@memory_app.command("resolve")
def resolve(
    ctx: typer.Context,
    path: Annotated[str | None, typer.Option(help="The entry's path.")] = None,
    slug: Annotated[str | None, typer.Option(help="The last segment of its path.")] = None,
    profile: ProfileOption = None,
    as_json: JsonOption = False,
) -> None:
    """Find the entry at --path, or by --slug (several with that slug: an error listing them)."""
    if (path is None) == (slug is None):
        _fail(ctx, "give exactly one of --path or --slug")

    def go(client: Heron) -> None:
        entry = client.memory.resolve(path=path, slug=slug, profile=profile)
        _print_json(entry) if as_json else _show(entry)

    _with_client(ctx, go)


def _json_list(items: list[api.MemorySearchHit] | list[api.MemoryVersion]) -> str:
    return json.dumps([i.model_dump(mode="json") for i in items], indent=2, ensure_ascii=False)
