"""``heron files read|write|list`` and ``heron bash``: the daemon's host, through the client.

Both reach the daemon as every ``heron`` command does (``HERON_BASE_URL``,
``HERON_SOCKET`` or ``$HERON_HOME/heron.sock``) and never start one: the files
and commands are the daemon's host's, which may not be this machine.
"""

from __future__ import annotations

import base64
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ._nodes import JsonOption, _console, _fail, _print_json, _with_client
from ._table import Column, print_table

if TYPE_CHECKING:
    from .. import api
    from ..client import Heron

__all__ = ["EXIT_TIMED_OUT", "bash", "files_app"]

EXIT_TIMED_OUT = 124
"""Exit status of ``heron bash`` when the command ran out of time (as ``timeout(1)``)."""

files_app = typer.Typer(
    help="Files on the daemon's host, by absolute path: read, write (atomically), list.",
    no_args_is_help=True,
)

PathArg = Annotated[
    str, typer.Argument(metavar="PATH", help="An absolute path on the daemon's host.")
]


def _note(text: str) -> None:
    """A remark for the person, on stderr (stdout carries the content)."""
    typer.echo(f"heron: {text}", err=True)


def _binary_on_terminal(ctx: typer.Context, page: api.FilePeek) -> None:
    """Refuse to write a binary file's bytes to a terminal (they can garble it)."""
    if page.encoding == "base64" and sys.stdout.isatty():
        _fail(
            ctx,
            f"{page.path} holds binary data ({page.size} bytes), which is not written to a "
            f"terminal: redirect it (heron files read {page.path} > FILE) or use --json",
        )


def _write_out(page: api.FilePeek) -> None:
    if page.encoding == "base64":
        sys.stdout.buffer.write(base64.b64decode(page.content))
        sys.stdout.buffer.flush()
    else:
        sys.stdout.write(page.content)
        sys.stdout.flush()


@files_app.command("read")
def read(
    ctx: typer.Context,
    path: PathArg,
    offset: Annotated[int, typer.Option(min=0, help="First byte to read.")] = 0,
    limit: Annotated[
        int | None, typer.Option(min=1, help="Bytes per read (default 256 KiB, at most 1 MiB).")
    ] = None,
    whole: Annotated[
        bool, typer.Option("--all", help="Read on to the end of the file, window after window.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Print a file's content (its bytes as they are; a note on stderr if more follows).

    A binary file is not written to a terminal: redirect it to a file, or use --json.
    """
    if whole and as_json:
        _fail(ctx, "--all prints the whole content; --json prints one answer: choose one")

    def go(client: Heron) -> None:
        page = client.files.read(path, offset=offset, limit=limit)
        if as_json:
            _print_json(page)
            return
        _binary_on_terminal(ctx, page)
        _write_out(page)
        while whole and page.truncated and page.next_offset is not None:
            page = client.files.read(path, offset=page.next_offset, limit=limit)
            _write_out(page)
        if page.truncated:
            _note(
                f"{page.path}: showed bytes {page.offset}-{page.offset + page.length} of "
                f"{page.size}; more with --offset {page.next_offset} (or --all)"
            )

    _with_client(ctx, go)


@files_app.command("write")
def write(
    ctx: typer.Context,
    path: PathArg,
    content: Annotated[
        str | None, typer.Option("--content", "-c", help="The new content (text).")
    ] = None,
    source: Annotated[
        Path | None,
        typer.Option("--from", help="Take the content from this local file.", dir_okay=False),
    ] = None,
    create_parents: Annotated[
        bool, typer.Option("--create-parents", "-p", help="Create missing directories.")
    ] = False,
    no_overwrite: Annotated[
        bool, typer.Option("--no-overwrite", help="Refuse to replace an existing file.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Replace or create a file atomically with --content, --from FILE, or standard input
    (at most 1 MiB)."""
    if content is not None and source is not None:
        _fail(ctx, "give the content once: --content or --from")
    data: str | bytes
    if content is not None:
        data = content
    elif source is not None:
        try:
            data = source.read_bytes()
        except OSError as exc:
            _fail(ctx, f"cannot read {source}: {exc.strerror or exc}")
    elif sys.stdin.isatty():
        _fail(ctx, "no content: give --content TEXT, --from FILE, or pipe it in")
    else:
        data = sys.stdin.buffer.read()

    def go(client: Heron) -> None:
        written = client.files.write(
            path,
            data,
            create_parents=create_parents or None,
            overwrite=False if no_overwrite else None,
        )
        if as_json:
            _print_json(written)
        else:
            verb = "created" if written.created else "wrote"
            _console().print(f"{verb} {written.path} ({written.size} bytes)", soft_wrap=True)

    _with_client(ctx, go)


def _size(entry: api.FileEntry) -> str:
    return "" if entry.size is None else f"{entry.size:,}"


def _name(entry: api.FileEntry) -> str:
    if entry.type == "directory":
        return f"{entry.name}/"
    if entry.type == "symlink":
        return f"{entry.name} -> {entry.target or '?'}"
    return entry.name


@files_app.command("list")
def list_(
    ctx: typer.Context,
    path: PathArg,
    limit: Annotated[
        int | None, typer.Option(min=1, help="At most this many entries (default 1000).")
    ] = None,
    hidden: Annotated[
        bool, typer.Option("--hidden", "-a", help="Include names starting with '.'.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """List a directory: directories first, then the rest, each by name."""

    def go(client: Heron) -> None:
        listing = client.files.list(path, limit=limit, hidden=hidden or None)
        if as_json:
            _print_json(listing)
            return
        columns = [
            Column("TYPE", whole=True),
            Column("SIZE", whole=True, justify="right"),
            Column("MODIFIED", drop=1, wrap_min=10),
            Column("NAME", whole=True),
        ]
        rows = [
            [
                entry.type,
                _size(entry),
                entry.modified_at.astimezone().strftime("%Y-%m-%d %H:%M"),
                _name(entry),
            ]
            for entry in listing.entries
        ]
        console = _console()
        if listing.entries:
            print_table(columns, rows)
        else:
            console.print(f"{listing.path} is empty", soft_wrap=True)
        if listing.truncated:
            _note(f"showed {len(listing.entries)} of {listing.total} entries (--limit for more)")

    _with_client(ctx, go)


def bash(
    ctx: typer.Context,
    command: Annotated[
        list[str],
        typer.Argument(metavar="COMMAND...", help="The command line (words are joined by spaces)."),
    ],
    cwd: Annotated[
        str | None,
        typer.Option(help="Working directory on the daemon's host (default: the current one)."),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(min=0.001, max=3600, help="Seconds it may run (default 60)."),
    ] = None,
    stdin: Annotated[
        bool, typer.Option("--stdin", help="Send this command's standard input to it.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Run a command on the daemon's host with bash -c and wait for it.

    Its output goes to stdout and stderr and heron exits with its exit status
    (128 + N when signal N ended it, 124 when it timed out, 1 for heron's own errors).
    """
    line = " ".join(command)
    if not line.strip():
        _fail(ctx, "the command is empty")
    where = cwd if cwd is not None else os.getcwd()
    # Bytes that are not UTF-8 become U+FFFD (the wire carries text), not a traceback.
    text = sys.stdin.buffer.read().decode("utf-8", "replace") if stdin else None

    def go(client: Heron) -> int:
        result = client.bash.run(line, cwd=where, timeout=timeout, stdin=text)
        if as_json:
            _print_json(result)
        else:
            sys.stdout.write(result.stdout)
            sys.stdout.flush()
            sys.stderr.write(result.stderr)
            sys.stderr.flush()
            for stream in ("stdout", "stderr"):
                if getattr(result, f"{stream}_truncated"):
                    _note(f"{stream} was cut at 1 MiB (the rest was dropped)")
        return _exit_status(result)

    raise typer.Exit(_with_client(ctx, go))


def _exit_status(result: api.BashResult) -> int:
    if result.timed_out:
        _note("the command timed out and was killed, with everything it started")
        return EXIT_TIMED_OUT
    if result.signal is not None:
        try:
            return 128 + signal.Signals[result.signal]
        except KeyError:
            return 128
    return result.exit_code if result.exit_code is not None else 1
