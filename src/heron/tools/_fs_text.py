"""The text work behind the file tools: reading windows of lines, edits, descriptions."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from .._core import ToolError
from ._fs_paths import SNIFF_BYTES, Workspace, is_binary
from ._fs_search import Entry

__all__ = [
    "Window",
    "absent",
    "describe",
    "encode",
    "line_endings",
    "line_list",
    "occurrences",
    "plural_bytes",
    "read_lines",
]


@dataclass(frozen=True, slots=True)
class Window:
    """Which part of a file one read returns."""

    start: int
    """The first line, counting from 1."""
    end: int | None
    """The last line (inclusive), or ``None`` for the end of the file."""
    skip: int
    """Characters of the first line left out."""
    limit: int
    """Characters returned at most."""


def read_lines(handle: BinaryIO, shown: str, window: Window) -> str:
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


def line_endings(text: str, old_text: str, new_text: str) -> tuple[str, str]:
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


def encode(content: str) -> bytes:
    """``content`` as UTF-8; text that cannot be encoded is a :class:`ToolError`."""
    try:
        return content.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ToolError(
            f"content is not valid Unicode text (unpaired surrogate at character {exc.start})"
        ) from None


def plural_bytes(size: int) -> str:
    """``size`` as "1 byte" or "N bytes"."""
    return "1 byte" if size == 1 else f"{size} bytes"


def describe(entry: Entry, workspace: Workspace, depth: int) -> str:
    """One line of a listing: the entry's path, kind and size (or link target)."""
    if entry.kind == "directory":
        folded = not entry.entered and entry.depth < depth
        return f"{entry.relative}/ (folder{', not expanded' if folded else ''})"
    if entry.kind == "file":
        try:
            size = plural_bytes(os.stat(entry.path, follow_symlinks=False).st_size)
        except OSError:  # removed since the walk saw it
            size = "gone"
        return f"{entry.relative} (file, {size})"
    if entry.kind == "symlink":
        target = Path(os.path.realpath(entry.path))
        kind = "folder" if target.is_dir() else "file" if target.exists() else "missing"
        return f"{entry.relative} (symlink to {kind} {workspace.show(target)})"
    return f"{entry.relative} (special file)"


def occurrences(text: str, needle: str) -> list[int]:
    """Where ``needle`` starts in ``text``, occurrences not overlapping."""
    starts, at = [], text.find(needle)
    while at != -1:
        starts.append(at)
        at = text.find(needle, at + len(needle))
    return starts


def line_list(text: str, starts: list[int]) -> str:
    """The line numbers of ``starts`` in ``text``, the first ten of them."""
    numbers = [text.count("\n", 0, at) + 1 for at in starts[:10]]
    return ", ".join(map(str, numbers)) + (", ..." if len(starts) > 10 else "")


def absent(text: str, old_text: str, shown: str) -> str:
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
