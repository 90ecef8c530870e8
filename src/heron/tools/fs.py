"""Filesystem tools: read, write, list, edit, glob and grep inside one root directory.

::

    agent = SimpleAgent(provider=provider, tools=filesystem_tools("./workspace"))
    notes = Skill(..., tools=[fs_read_file_tool("./notes"), fs_write_file_tool("./notes")])

Every path the model gives is relative to the root (or absolute inside it);
``..``, absolute paths elsewhere and symbolic links leading out are refused
with an error naming the path. Paths in results are relative to the root.
Each tool also has a factory of its own (``fs_read_file_tool(root)`` ...),
making the same tool :func:`filesystem_tools` includes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Annotated

import regex
from pydantic import Field

from .._core import ToolError, UserError
from ._fs_paths import Workspace
from ._fs_search import compile_glob as _compile_glob
from ._fs_search import glob_paths, grep_tree, walk
from ._fs_text import (
    Window,
    absent,
    describe,
    encode,
    line_endings,
    line_list,
    occurrences,
    plural_bytes,
    read_lines,
)
from ._tool import FunctionTool, Tool

__all__ = [
    "FileTool",
    "filesystem_tools",
    "fs_edit_file_tool",
    "fs_glob_tool",
    "fs_grep_tool",
    "fs_list_directory_tool",
    "fs_read_file_tool",
    "fs_write_file_tool",
]

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

    Tools made for the same (resolved) root, hidden paths and limits are
    equal (:meth:`~heron.Tool.same_definition`), whether they come from
    another call or from a single tool's factory (:func:`fs_read_file_tool`
    ...): skills that each bring their own share one agent, and equal tools
    share their file locks.
    """
    max_read_chars = _count("max_read_chars", max_read_chars)
    max_entries = _count("max_entries", max_entries)
    max_matches = _count("max_matches", max_matches)
    seconds = _seconds(grep_timeout)
    if isinstance(hidden, str | bytes | os.PathLike):
        raise UserError("hidden is a list of paths, not one path")
    workspace = Workspace(os.getcwd() if root is None else root, hidden)
    return [
        _read_file(workspace, max_read_chars),
        _write_file(workspace),
        _list_directory(workspace, max_entries),
        _edit_file(workspace),
        _glob(workspace, max_entries),
        _grep(workspace, max_matches, seconds),
    ]


def fs_read_file_tool(root: str | os.PathLike[str], *, max_read_chars: int = 50_000) -> FileTool:
    """``fs-read-file`` alone, confined to ``root``: for a skill that only reads.

    The same tool :func:`filesystem_tools` makes for ``root`` and
    ``max_read_chars`` (equal to it: an agent given both registers it once)::

        skill = Skill(name="reviewer", ..., tools=[fs_read_file_tool("./src")])
    """
    return _read_file(Workspace(root), _count("max_read_chars", max_read_chars))


def fs_write_file_tool(root: str | os.PathLike[str]) -> FileTool:
    """``fs-write-file`` alone, confined to ``root``: atomic writes, folders created.

    The same tool :func:`filesystem_tools` makes for ``root``.
    """
    return _write_file(Workspace(root))


def fs_list_directory_tool(root: str | os.PathLike[str], *, max_entries: int = 500) -> FileTool:
    """``fs-list-directory`` alone, confined to ``root``.

    The same tool :func:`filesystem_tools` makes for ``root`` and ``max_entries``.
    """
    return _list_directory(Workspace(root), _count("max_entries", max_entries))


def fs_edit_file_tool(root: str | os.PathLike[str]) -> FileTool:
    """``fs-edit-file`` alone, confined to ``root``: exact-match replacements.

    The same tool :func:`filesystem_tools` makes for ``root``.
    """
    return _edit_file(Workspace(root))


def fs_glob_tool(root: str | os.PathLike[str], *, max_entries: int = 500) -> FileTool:
    """``fs-glob`` alone, confined to ``root``.

    The same tool :func:`filesystem_tools` makes for ``root`` and ``max_entries``.
    """
    return _glob(Workspace(root), _count("max_entries", max_entries))


def fs_grep_tool(
    root: str | os.PathLike[str], *, max_matches: int = 200, grep_timeout: float = 10.0
) -> FileTool:
    """``fs-grep`` alone, confined to ``root``.

    The same tool :func:`filesystem_tools` makes for ``root``, ``max_matches``
    and ``grep_timeout``.
    """
    return _grep(Workspace(root), _count("max_matches", max_matches), _seconds(grep_timeout))


def _count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UserError(f"{name} must be a positive integer, not {value!r}")
    return value


def _seconds(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise UserError(f"grep_timeout must be a positive number of seconds, not {value!r}")
    return float(value)


def _file_tool(
    name: str, workspace: Workspace, *limits: object
) -> Callable[[Callable[..., str]], FileTool]:
    """Make a function the file tool ``name``, equal to others of its root and ``limits``."""
    return lambda func: FileTool(func, name=name, setup=(workspace.root, workspace.hidden, *limits))


def _read_file(workspace: Workspace, max_read_chars: int) -> FileTool:
    @_file_tool("fs-read-file", workspace, max_read_chars)
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
        window = Window(start_line, end_line, skip_chars, max_read_chars)
        with workspace.open_file(real, shown) as handle:
            return read_lines(handle, shown, window)

    return read_file


def _write_file(workspace: Workspace) -> FileTool:
    @_file_tool("fs-write-file", workspace)
    def write_file(path: str, content: str) -> str:
        """Write (save) text to a file, creating it and its folders or replacing it whole.

        The file is replaced atomically: it never holds half the new text.

        Args:
            path: The file, relative to the root directory.
            content: The complete new content of the file.
        """
        real = workspace.resolve(path)
        shown = workspace.show(real)
        data = encode(content)
        with workspace.locked(real):
            existed = workspace.write_bytes(real, shown, data)
        return f"{'replaced' if existed else 'created'} {shown} ({plural_bytes(len(data))})"

    return write_file


def _list_directory(workspace: Workspace, max_entries: int) -> FileTool:
    @_file_tool("fs-list-directory", workspace, max_entries)
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
            lines.append(describe(entry, workspace, depth))
        return "\n".join(lines) if lines else f"[{shown} is an empty folder]"

    return list_directory


def _edit_file(workspace: Workspace) -> FileTool:
    @_file_tool("fs-edit-file", workspace)
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
            old_text, new_text = line_endings(text, old_text, new_text)
            starts = occurrences(text, old_text)
            if not starts:
                raise ToolError(absent(text, old_text, shown))
            if len(starts) > 1 and not replace_all:
                raise ToolError(
                    f"old_text occurs {len(starts)} times in {shown} "
                    f"(at lines {line_list(text, starts)}): include more of the "
                    "surrounding text so it matches once, or set replace_all to "
                    "replace every occurrence"
                )
            workspace.write_bytes(real, shown, encode(text.replace(old_text, new_text)))
        where = line_list(text, starts)
        if len(starts) == 1:
            return f"edited {shown}: replaced 1 occurrence at line {where}"
        return f"edited {shown}: replaced {len(starts)} occurrences at lines {where}"

    return edit_file


def _glob(workspace: Workspace, max_entries: int) -> FileTool:
    @_file_tool("fs-glob", workspace, max_entries)
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

    return glob_files


def _grep(workspace: Workspace, max_matches: int, grep_timeout: float) -> FileTool:
    @_file_tool("fs-grep", workspace, max_matches, grep_timeout)
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

    return grep


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
