"""Walking a confined tree: glob patterns, directory listings and grep.

Symbolic links are never followed into directories (a walk cannot loop or
leave the root that way); a linked file is included only when its target is
inside the root. Folders of tool and build state (``.git``, ``node_modules``,
virtual environments, caches) are shown but not entered unless a pattern
names them.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import regex

from .._core import ToolError
from ._fs_paths import SNIFF_BYTES, Workspace, is_binary

__all__ = [
    "NOT_ENTERED",
    "Entry",
    "GrepOutcome",
    "compile_glob",
    "glob_paths",
    "grep_tree",
    "walk",
]

NOT_ENTERED = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
    }
)
"""Folders walks list but do not enter (version control, dependencies, caches)."""

_MAGIC = re.compile(r"[*?\[{]")


@dataclass(frozen=True, kw_only=True, slots=True)
class Entry:
    """One thing found by a walk."""

    path: str
    """Where it is (symlinks not resolved)."""
    relative: str
    """The path relative to the root, ``/``-separated."""
    kind: str
    """``file``, ``directory``, ``symlink`` (to a file or folder) or ``other``."""
    depth: int
    """1 for the entries of the starting folder, 2 for theirs, ..."""
    entered: bool
    """For folders: whether the walk looked inside."""


def walk(
    workspace: Workspace,
    start: Path,
    *,
    max_depth: int | None = None,
    enter: frozenset[str] = frozenset(),
    shown: str | None = None,
) -> Iterator[Entry]:
    """Every entry below ``start``, depth first, each folder's names sorted.

    Folders named in :data:`NOT_ENTERED` are entered only if listed in ``enter``.
    Paths are relative to the root, or to ``shown``, the name ``start`` was
    reached by (a symbolic link to it, say).
    """
    if shown is None:
        shown = workspace.show(start)
    yield from _walk(
        workspace, str(start), "" if shown == "." else shown + "/", 1, max_depth, enter
    )


def _walk(
    workspace: Workspace,
    folder: str,
    prefix: str,
    depth: int,
    max_depth: int | None,
    enter: frozenset[str],
) -> Iterator[Entry]:
    # Plain strings rather than Path objects: a walk makes thousands of them.
    try:
        with os.scandir(folder) as scan:
            items = sorted(scan, key=lambda e: e.name)
    except OSError:
        return  # unreadable or vanished: nothing to show, nothing to search
    for item in items:
        try:
            kind = _kind(item)
        except OSError:
            continue  # removed while we looked
        if kind == "symlink" and not workspace.contains(Path(item.path)):
            continue  # leads out of the root: not ours to show
        if workspace.hidden and workspace.hides(item.path):
            continue  # hidden from the tools: as if it were not there
        entered = (
            kind == "directory"
            and (max_depth is None or depth < max_depth)
            and (item.name not in NOT_ENTERED or item.name in enter)
        )
        relative = prefix + item.name
        yield Entry(
            path=item.path,
            relative=relative,
            kind=kind,
            depth=depth,
            entered=entered,
        )
        if entered:
            yield from _walk(workspace, item.path, relative + "/", depth + 1, max_depth, enter)


def _kind(item: os.DirEntry[str]) -> str:
    # No stat() for a file's size here: most walks (glob, grep) never need it.
    if item.is_symlink():
        return "symlink"
    if item.is_dir():
        return "directory"
    return "file" if item.is_file() else "other"


# ---------------------------------------------------------------- glob patterns


def compile_glob(pattern: str) -> re.Pattern[str]:
    """A regex matching the root-relative paths ``pattern`` means.

    ``*`` and ``?`` stay within one path component, ``[abc]``/``[!abc]`` are
    character classes, ``{a,b}`` alternatives, and a ``**`` component matches
    any number of folders. As in a shell, wildcards do not match names that
    begin with a dot unless the pattern's component does.
    """
    parts = _components(pattern)
    regex = ""
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if part == "**":
            regex += r"(?:(?!\.)[^/]+/)*" + (r"(?!\.)[^/]+" if last else "")
        else:
            regex += _component(part) + ("" if last else "/")
    return re.compile(regex)


def _components(pattern: str) -> list[str]:
    text = pattern.strip()
    if not text:
        raise ToolError("the glob pattern is empty")
    if text.startswith("/"):
        raise ToolError(f"glob pattern {pattern!r} must be relative to the root directory")
    parts: list[str] = []
    for part in text.split("/"):
        # "**/**" means what "**" does, but each one more would multiply the
        # ways a path can match: merged, a pattern's cost stays linear.
        if part not in ("", ".") and not (part == "**" and parts[-1:] == ["**"]):
            parts.append(part)
    if ".." in parts:
        raise ToolError(f"glob pattern {pattern!r} may not contain '..'")
    if not parts:
        raise ToolError(f"glob pattern {pattern!r} matches nothing; try '*' or '**/*'")
    return parts


def _component(part: str) -> str:
    hidden_ok = part.startswith(".") or bool(re.match(r"\{(?:[^},]*,)*\.", part))
    return ("" if hidden_ok else r"(?!\.)") + _translate(part)


def _translate(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and (end := text.find("]", i + 2)) != -1:
            body = text[i + 1 : end]
            negate = body[0] in "!^"
            body = body[1:] if negate else body
            out.append(f"[{'^/' if negate else ''}{body.replace(chr(92), chr(92) * 2)}]")
            i = end
        elif char == "{" and (end := text.find("}", i)) != -1:
            choices = text[i + 1 : end].split(",")
            out.append("(?:" + "|".join(_translate(c) for c in choices) + ")")
            i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def glob_paths(workspace: Workspace, pattern: str) -> Iterator[Entry]:
    """Entries whose root-relative path matches ``pattern``, in walk order."""
    parts = _components(pattern)
    matcher = compile_glob(pattern)
    literal: list[str] = []
    for part in parts[:-1]:
        if _MAGIC.search(part):
            break
        literal.append(part)
    # The literal folders are followed even through a symbolic link (inside
    # the root, as resolve() checks), and results keep the names given.
    given = "/".join(literal) or "."
    start = workspace.resolve(given)
    if not start.is_dir():
        return
    rest = parts[len(literal) :]
    max_depth = None if "**" in rest else len(rest)
    entries = walk(workspace, start, max_depth=max_depth, enter=frozenset(parts), shown=given)
    for entry in entries:
        if matcher.fullmatch(entry.relative):
            yield entry


# ---------------------------------------------------------------- grep

_GREP_FILE_LIMIT = 10 * 1024 * 1024
_LINE_LIMIT = 400
_BEFORE_MATCH = 100  # characters shown before a match in a line cut to _LINE_LIMIT


@dataclass(kw_only=True, slots=True)
class GrepOutcome:
    """What a search found and what it left out."""

    lines: list[str]
    """``path:line:text`` for each match, in file then line order."""
    truncated: bool = False
    """Whether it stopped at the match limit."""
    binary: list[str]
    """Files skipped as binary."""
    large: list[str]
    """Files skipped for their size."""
    files: int = 0
    """Text files searched."""
    timed_out: str | None = None
    """The file being searched when the time for matching ran out, if it did."""


def grep_tree(
    workspace: Workspace,
    start: Path,
    pattern: regex.Pattern[str],
    *,
    only: re.Pattern[str] | None,
    limit: int,
    timeout: float,
) -> GrepOutcome:
    """Search the file ``start``, or every file below the folder ``start``.

    Matching gets ``timeout`` seconds in all. The ``regex`` engine checks
    the time while it backtracks and lets go of the GIL, so a pattern that
    would never finish stops there without freezing the process.
    """
    paths: Iterator[tuple[str, str]]
    if start.is_dir():
        # Linked files are left out, as grep -r does: their targets inside
        # the root are searched under their own names, once.
        files = (e for e in walk(workspace, start) if e.kind == "file")
        paths = ((e.path, e.relative) for e in files)
    elif start.is_file():
        paths = iter([(str(start), workspace.show(start))])
    else:
        raise ToolError(f"{workspace.show(start)!r} is not a regular file or a folder")
    outcome = GrepOutcome(lines=[], binary=[], large=[])
    search = _Search(pattern, time.monotonic() + timeout)
    for path, relative in paths:
        if only is not None and not only.fullmatch(relative):
            continue
        try:
            if _search_file(workspace, path, relative, search, outcome, limit):
                outcome.truncated = True
                break
        except TimeoutError:
            outcome.timed_out = relative
            break
    return outcome


class _Search:
    """A pattern, its whole-text form, and the moment matching must stop."""

    def __init__(self, pattern: regex.Pattern[str], deadline: float) -> None:
        self.pattern = pattern
        self.whole = _whole_text_search(pattern)
        self.deadline = deadline

    def left(self) -> float:
        """Seconds of matching left; :class:`TimeoutError` when none are."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("grep ran out of time")
        return left


def _whole_text_search(pattern: regex.Pattern[str]) -> regex.Pattern[str] | None:
    """A pattern finding in a whole file every match ``pattern`` finds in one of its lines.

    Most files hold no match: one search of the whole text rules them out
    far faster than a search of each line. ``^``/``$`` become line anchors; a
    pattern whose meaning depends on what lies beyond the line (``\\A``,
    ``\\Z``, lookarounds) is searched line by line only.
    """
    if re.search(r"\\[AZ]|\(\?<?[=!]", pattern.pattern):
        return None
    return regex.compile(pattern.pattern, pattern.flags | regex.MULTILINE)


def _search_file(
    workspace: Workspace,
    path: str,
    relative: str,
    search: _Search,
    outcome: GrepOutcome,
    limit: int,
) -> bool:
    """Add ``path``'s matches to ``outcome``; return whether ``limit`` was reached."""
    try:
        with workspace.open_found(path) as handle:
            if os.fstat(handle.fileno()).st_size > _GREP_FILE_LIMIT:
                outcome.large.append(relative)
                return False
            data = handle.read()
    except OSError:
        return False  # changed or vanished while the walk went on
    if is_binary(data[:SNIFF_BYTES]):
        outcome.binary.append(relative)
        return False
    outcome.files += 1
    text = data.decode("utf-8", errors="replace")
    whole = search.whole
    if whole is not None and not whole.search(text, concurrent=True, timeout=search.left()):
        return False
    # Lines end at "\n" only, as for grep and for the whole-text search's "$".
    for number, line in enumerate(text.split("\n"), 1):
        found = search.pattern.search(line, concurrent=True, timeout=search.left())
        if found is not None:
            if len(outcome.lines) == limit:
                return True
            outcome.lines.append(f"{relative}:{number}:{_excerpt(line, found.start())}")
    return False


def _excerpt(line: str, at: int) -> str:
    """``line`` as grep shows it: a long one cut to the part around its match at ``at``."""
    line = line.removesuffix("\r")
    if len(line) <= _LINE_LIMIT:
        return line
    begin = max(0, min(at - _BEFORE_MATCH, len(line) - _LINE_LIMIT))
    part = line[begin : begin + _LINE_LIMIT]
    return (
        f"{part} [line cut: characters {begin + 1}-{begin + len(part)} of {len(line)} "
        f"shown; fs-read-file with skip_chars reads the rest]"
    )
