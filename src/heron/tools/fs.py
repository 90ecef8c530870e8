"""Filesystem tools: read, write, list, edit, glob and grep inside one root directory.

::

    agent = SimpleAgent(provider=provider, tools=filesystem_tools("./workspace"))

Every path the model gives is relative to the root (or absolute inside it);
``..``, absolute paths elsewhere and symbolic links leading out are refused
with an error naming the path. Paths in results are relative to the root.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, BinaryIO

import regex
from pydantic import Field

from .._core import ToolError, UserError
from ._fs_paths import SNIFF_BYTES, Workspace, is_binary
from ._fs_search import Entry, glob_paths, grep_tree, walk
from ._fs_search import compile_glob as _compile_glob
from ._tool import FunctionTool, Tool

__all__ = ["FileTool", "filesystem_tools"]

_MAX_DEPTH = 10


def filesystem_tools(
    root: str | os.PathLike[str] | None = None,
    *,
    max_read_chars: int = 50_000,
    max_entries: int = 500,
    max_matches: int = 200,
    grep_timeout: float = 10.0,
    hidden: Iterable[str | os.PathLike[str]] = (),
) -> list[Tool]:
    """The six filesystem tools, confined to ``root`` (default: the current directory now).

    ``fs-read-file``, ``fs-write-file``, ``fs-list-directory``,
    ``fs-edit-file``, ``fs-glob`` and ``fs-grep``. ``root`` must be an
    existing directory; it is resolved now, so a later ``chdir`` or a
    symlink swapped in for it does not move the tools. The limits keep one
    result from flooding the model's context: ``max_read_chars`` per read,
    ``max_entries`` per listing or glob, ``max_matches`` per grep; each
    result says when it hit its limit and how to see the rest.
    ``grep_timeout`` bounds the seconds one ``fs-grep`` spends matching, so
    a pattern that backtracks without end fails instead of hanging.
    ``hidden`` paths inside ``root`` are as good as absent: refused when named,
    never listed, globbed or searched (the daemon hides ``$HERON_HOME`` so).

    Two calls with the same (resolved) root, limits and hidden paths make equal tools
    (:meth:`~heron.Tool.same_definition`): skills that each bring their own
    set can share one agent, and equal sets share their file locks.
    """
    for name, value in [
        ("max_read_chars", max_read_chars),
        ("max_entries", max_entries),
        ("max_matches", max_matches),
    ]:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise UserError(f"{name} must be a positive integer, not {value!r}")
    if (
        isinstance(grep_timeout, bool)
        or not isinstance(grep_timeout, int | float)
        or not grep_timeout > 0
    ):
        raise UserError(f"grep_timeout must be a positive number of seconds, not {grep_timeout!r}")
    if isinstance(hidden, str | bytes | os.PathLike):
        raise UserError("hidden is a list of paths, not one path")
    workspace = Workspace(os.getcwd() if root is None else root, hidden)
    setup = (
        workspace.root,
        max_read_chars,
        max_entries,
        max_matches,
        float(grep_timeout),
        workspace.hidden,
    )

    def tool(name: str) -> Callable[[Callable[..., str]], FileTool]:
        return lambda func: FileTool(func, name=name, setup=setup)

    @tool("fs-read-file")
    def read_file(
        path: str,
        start_line: Annotated[int, Field(ge=1)] = 1,
        end_line: Annotated[int | None, Field(ge=1)] = None,
        skip_chars: Annotated[int, Field(ge=0)] = 0,
    ) -> str:
        """Read a text file (source code, notes, config) and return its content.

        Long files come back in parts: a note at the end says which lines were
        shown and where to read on from (a line too long for one read is read
        in parts with skip_chars).

        Args:
            path: The file, relative to the root directory.
            start_line: First line to return, counting from 1.
            end_line: Last line to return (inclusive); the end of the file by default.
            skip_chars: Characters of start_line to leave out, to read on in a line
                longer than one read.
        """
        real = workspace.resolve(path)
        shown = workspace.show(real)
        if end_line is not None and end_line < start_line:
            raise ToolError(f"end_line {end_line} is before start_line {start_line}")
        window = _Window(start_line, end_line, skip_chars, max_read_chars)
        with workspace.open_file(real, shown) as handle:
            return _read_lines(handle, shown, window)

    @tool("fs-write-file")
    def write_file(path: str, content: str) -> str:
        """Write (save) text to a file, creating it and its folders or replacing it whole.

        The file is replaced atomically: it never holds half the new text.

        Args:
            path: The file, relative to the root directory.
            content: The complete new content of the file.
        """
        real = workspace.resolve(path)
        shown = workspace.show(real)
        data = _encode(content)
        with workspace.locked(real):
            existed = workspace.write_bytes(real, shown, data)
        return f"{'replaced' if existed else 'created'} {shown} ({_bytes(len(data))})"

    @tool("fs-list-directory")
    def list_directory(
        path: str = ".",
        depth: Annotated[int, Field(ge=1, le=_MAX_DEPTH)] = 1,
    ) -> str:
        """List the files and folders in a directory, with their types and sizes.

        Args:
            path: The folder, relative to the root directory; the root itself by default.
            depth: How many levels to show: 1 for the folder's own entries, 2 to
                include its subfolders' entries, and so on.
        """
        real = workspace.resolve(path)
        shown = workspace.show(real)
        if not real.exists():
            raise ToolError(f"no such folder: {shown!r}")
        if not real.is_dir():
            raise ToolError(f"{shown!r} is a file, not a folder; read it with fs-read-file")
        lines: list[str] = []
        for entry in walk(workspace, real, max_depth=depth):
            if len(lines) == max_entries:
                lines.append(
                    f"[listing stopped at {max_entries} entries: list a subfolder "
                    "or use a smaller depth to see the rest]"
                )
                break
            lines.append(_describe(entry, workspace, depth))
        return "\n".join(lines) if lines else f"[{shown} is an empty folder]"

    @tool("fs-edit-file")
    def edit_file(
        path: str,
        old_text: Annotated[str, Field(min_length=1)],
        new_text: str,
        replace_all: bool = False,
    ) -> str:
        """Edit a text file: replace an exact piece of its text with new text.

        old_text must match the file exactly (spaces, indentation, line breaks)
        and only once, unless replace_all is set.

        Args:
            path: The file, relative to the root directory.
            old_text: The exact text to replace, copied from the file; include
                neighbouring lines when it occurs more than once.
            new_text: The text to put in its place (empty to delete it).
            replace_all: Replace every occurrence instead of requiring exactly one.
        """
        real = workspace.resolve(path)
        shown = workspace.show(real)
        if old_text == new_text:
            raise ToolError("old_text and new_text are the same: nothing would change")
        with workspace.locked(real):
            text = workspace.read_text(real, shown)
            old_text, new_text = _line_endings(text, old_text, new_text)
            starts = _occurrences(text, old_text)
            if not starts:
                raise ToolError(_absent(text, old_text, shown))
            if len(starts) > 1 and not replace_all:
                raise ToolError(
                    f"old_text occurs {len(starts)} times in {shown} "
                    f"(at lines {_line_list(text, starts)}): include more of the "
                    "surrounding text so it matches once, or set replace_all to "
                    "replace every occurrence"
                )
            workspace.write_bytes(real, shown, _encode(text.replace(old_text, new_text)))
        where = _line_list(text, starts)
        if len(starts) == 1:
            return f"edited {shown}: replaced 1 occurrence at line {where}"
        return f"edited {shown}: replaced {len(starts)} occurrences at lines {where}"

    @tool("fs-glob")
    def glob_files(pattern: str) -> str:
        """Find files and folders by name: paths matching a glob pattern such as **/*.py.

        * and ? match within one name, ** matches any number of folders,
        {a,b} either of two texts (src/*.{ts,tsx}); names starting with a dot
        match only when the pattern's part does.

        Args:
            pattern: The glob pattern, relative to the root directory.
        """
        matches: list[str] = []
        for entry in glob_paths(workspace, pattern):
            if len(matches) == max_entries:
                matches.append(
                    f"[stopped at {max_entries} paths: use a narrower pattern to see the rest]"
                )
                break
            matches.append(entry.relative + ("/" if entry.kind == "directory" else ""))
        return "\n".join(matches) if matches else f"[no paths match {pattern!r}]"

    @tool("fs-grep")
    def grep(
        pattern: Annotated[str, Field(min_length=1)],
        path: str = ".",
        glob: str | None = None,
        literal: bool = False,
        ignore_case: bool = False,
    ) -> str:
        """Search inside text files (code, logs) for lines that contain or mention some text.

        The pattern is a regular expression unless literal is set. Returns
        path:line:text for each matching line; binary files are skipped.

        Args:
            pattern: A Python regular expression, or plain text with literal set.
            path: A file, or a folder to search through; the root directory by default.
            glob: Only search files matching this glob: a name pattern such as *.py
                (at any depth), or a path pattern from the root such as src/**/*.ts.
            literal: Treat pattern as plain text rather than a regular expression.
            ignore_case: Match letters regardless of case.
        """
        flags = regex.IGNORECASE if ignore_case else 0
        try:
            compiled = regex.compile(regex.escape(pattern) if literal else pattern, flags)
        except regex.error as exc:
            raise ToolError(
                f"pattern {pattern!r} is not a valid regular expression ({exc}); "
                "set literal to search for the text as it is"
            ) from None
        only = None
        if glob is not None:
            only = _compile_glob(glob if "/" in glob else f"**/{glob}")
        real = workspace.resolve(path)
        shown = workspace.show(real)
        if not real.exists():
            raise ToolError(f"no such file or folder: {shown!r}")
        found = grep_tree(
            workspace, real, compiled, only=only, limit=max_matches, timeout=grep_timeout
        )
        if found.timed_out is not None and not found.lines:
            raise ToolError(
                f"pattern {pattern!r} took more than {grep_timeout:g} s to match "
                f"(in {found.timed_out}) and was stopped: it backtracks too much. "
                "Simplify it (avoid nested repeats such as (a+)+ or (a|aa)+), "
                "or set literal to search for plain text"
            )
        notes = []
        if found.timed_out is not None:
            notes.append(
                f"[stopped after {grep_timeout:g} s while searching {found.timed_out}: "
                "the pattern is slow to match; simplify it or narrow the path or glob]"
            )
        if found.truncated:
            notes.append(
                f"[stopped at {max_matches} matches: narrow the pattern, path or glob "
                "to see the rest]"
            )
        for kind, skipped in [("binary", found.binary), ("over 10 MB", found.large)]:
            if skipped:
                listed = ", ".join(skipped[:5]) + (", ..." if len(skipped) > 5 else "")
                files = "file" if len(skipped) == 1 else "files"
                notes.append(f"[skipped {len(skipped)} {kind} {files}: {listed}]")
        if not found.lines:
            searched = f"{found.files} file" + ("" if found.files == 1 else "s")
            notes.insert(0, f"[no matches for {pattern!r} in {searched} under {shown}]")
        return "\n".join([*found.lines, *notes])

    return [read_file, write_file, list_directory, edit_file, glob_files, grep]


@dataclass(frozen=True, slots=True)
class _Window:
    """Which part of a file one read returns."""

    start: int
    """The first line, counting from 1."""
    end: int | None
    """The last line (inclusive), or ``None`` for the end of the file."""
    skip: int
    """Characters of the first line left out."""
    limit: int
    """Characters returned at most."""


def _read_lines(handle: BinaryIO, shown: str, window: _Window) -> str:
    """The lines of an open file ``window`` asks for, at most ``window.limit`` characters."""
    if is_binary(handle.read(SNIFF_BYTES)):
        raise ToolError(f"{shown!r} is a binary file, not text; it cannot be read as text")
    handle.seek(0)
    start, end, limit = window.start, window.end, window.limit
    parts: list[str] = []
    used = 0
    total = 0
    stopped: int | None = None  # the first line left out for the limit
    cut: int | None = None  # the length of the one line shown, when it was cut short
    for total, raw in enumerate(handle, 1):  # total outlives the loop: the line count
        if total < start or (end is not None and total > end) or stopped is not None:
            continue
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolError(f"{shown!r} is not UTF-8 text (line {total})") from None
        length = len(line.rstrip("\r\n"))
        if total == start and window.skip:
            if window.skip >= length:
                raise ToolError(
                    f"skip_chars {window.skip} is past the end of line {start} of {shown} "
                    f"({length} characters)"
                )
            line = line[window.skip :]
        if used + len(line) > limit:
            stopped = total
            if not parts:
                parts.append(line[:limit])
                cut = length
            continue
        parts.append(line)
        used += len(line)
    if total == 0:
        return f"[{shown} is empty]"
    if start > total:
        raise ToolError(f"start_line {start} is past the end of {shown} ({total} lines)")
    last = min(end or total, total)
    text = "".join(parts)
    if text and not text.endswith("\n"):
        text += "\n"
    if cut is not None:
        shown_to = window.skip + limit
        next_line = f", or the next line with start_line={start + 1}" if start < total else ""
        return text + (
            f"[line {start} has {cut} characters, more than one read of {limit}: characters "
            f"{window.skip + 1}-{shown_to} shown; read on with start_line={start}, "
            f"skip_chars={shown_to}{next_line}]"
        )
    if stopped is not None:
        return text + (
            f"[truncated: lines {start}-{stopped - 1} of {total} shown ({limit} characters "
            f"at most per read); read on with start_line={stopped}]"
        )
    if start > 1 or last < total:
        return text + f"[lines {start}-{last} of {total}]"
    return text


def _line_endings(text: str, old_text: str, new_text: str) -> tuple[str, str]:
    """``old_text`` and ``new_text`` with the Windows line endings of ``text``, if it has them.

    Models (and the JSON they write) drop the ``\\r`` of ``\\r\\n``: an edit
    of a CRLF file would match nothing, and the replacement would mix endings.
    """
    if "\r\n" not in text or "\n" not in old_text or "\r" in old_text or old_text in text:
        return old_text, new_text
    crlf = old_text.replace("\n", "\r\n")
    if crlf not in text:
        return old_text, new_text
    return crlf, new_text if "\r" in new_text else new_text.replace("\n", "\r\n")


class FileTool(FunctionTool):
    """One of the filesystem tools: equal to the same tool made for the same root and limits."""

    def __init__(self, func: Callable[..., str], *, name: str, setup: tuple[object, ...]) -> None:
        super().__init__(func, name=name)
        self.setup = setup
        """The resolved root and the limits the tool was made with."""

    def same_definition(self, other: Tool) -> bool:
        """Whether ``other`` is the same file tool over the same root, with the same limits."""
        return (
            type(other) is type(self)
            and isinstance(other, FileTool)
            and (other.name, other.description, other.setup)
            == (self.name, self.description, self.setup)
        )


def _encode(content: str) -> bytes:
    try:
        return content.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ToolError(
            f"content is not valid Unicode text (unpaired surrogate at character {exc.start})"
        ) from None


def _bytes(size: int) -> str:
    return "1 byte" if size == 1 else f"{size} bytes"


def _describe(entry: Entry, workspace: Workspace, depth: int) -> str:
    if entry.kind == "directory":
        folded = not entry.entered and entry.depth < depth
        return f"{entry.relative}/ (folder{', not expanded' if folded else ''})"
    if entry.kind == "file":
        try:
            size = _bytes(os.stat(entry.path, follow_symlinks=False).st_size)
        except OSError:  # removed since the walk saw it
            size = "gone"
        return f"{entry.relative} (file, {size})"
    if entry.kind == "symlink":
        target = Path(os.path.realpath(entry.path))
        kind = "folder" if target.is_dir() else "file" if target.exists() else "missing"
        return f"{entry.relative} (symlink to {kind} {workspace.show(target)})"
    return f"{entry.relative} (special file)"


def _occurrences(text: str, needle: str) -> list[int]:
    starts, at = [], text.find(needle)
    while at != -1:
        starts.append(at)
        at = text.find(needle, at + len(needle))
    return starts


def _line_list(text: str, starts: list[int]) -> str:
    numbers = [text.count("\n", 0, at) + 1 for at in starts[:10]]
    return ", ".join(map(str, numbers)) + (", ..." if len(starts) > 10 else "")


def _absent(text: str, old_text: str, shown: str) -> str:
    """Why ``old_text`` is not in ``text``, with a hint when a near match is."""
    message = f"old_text was not found in {shown}"
    squeeze = re.compile(r"\s+")
    loose = squeeze.sub(" ", old_text).strip()
    if loose and loose in squeeze.sub(" ", text):
        message += (
            ": the same words are there with different spacing or line breaks; "
            "copy the exact text from fs-read-file"
        )
    else:
        message += "; read the file again and copy the exact text to replace"
    return message
