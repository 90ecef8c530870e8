"""The README checks' parsing: its code blocks, its command lines, and the CLI they must name."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from heron.cli import app

README = Path(__file__).resolve().parents[2] / "README.md"
"""The repository's README."""


@functools.cache
def cli_tree() -> Any:
    """The ``heron`` app as click commands (built once: the tests compare commands by id)."""
    return typer.main.get_command(app)


def is_group(command: Any) -> bool:
    """A command with subcommands (Typer carries its own copy of click: no isinstance;
    the root's commands are a mapping that builds each group on first use)."""
    return isinstance(getattr(command, "commands", None), Mapping)


def command_lines(text: str) -> Iterator[tuple[str, str]]:
    """``(command line, comment)`` for each ``heron ...`` command of a block's text; a
    comment-only line goes with the command above it (``# --model --kind``)."""
    last: str | None = None
    for raw in text.splitlines():
        line = raw.strip().removeprefix("$ ")
        code, _, comment = line.partition("  #")
        if not code.strip() and line.startswith("#") and last is not None:
            yield last, line
            continue
        for command in code.split(" ; "):
            command = command.strip()
            if command.startswith("heron ") or command == "heron":
                last = command
                yield command, comment


def check_command_line(line: str, comment: str, reached: set[int] | None = None) -> list[str]:
    """What in ``line`` (and options in its ``comment``) the ``heron`` app lacks.

    ``heron a b [--x] | c | d --y``: ``c`` and ``d`` are siblings of ``b`` (or of a
    command above it: ``jobs list ID | jobs cancel ID``); a segment starting with an
    option is another option of the command before it. The ``id`` of every command
    named goes into ``reached``.
    """
    reached = set() if reached is None else reached
    root = cli_tree()
    problems: list[str] = []
    segments = _split_outside_brackets(line.removeprefix("heron").strip(), " | ")
    groups: list[Any] = [root]
    before: Any = root
    for index, segment in enumerate(segments):
        words = segment.split()
        if index == 0:
            command, path, taken = _walk(root, words)
            for name in path[:-1]:
                last = groups[-1]
                assert is_group(last)
                groups.append(last.commands[name.split("|")[0]])
        elif words and words[0].startswith("-"):
            command, path, taken = before, ["..."], 0
        else:
            for group in reversed(groups):
                command, path, taken = _walk(group, words)
                if taken:
                    break
            if not taken:
                problems.append(f"{segment.strip()!r} names no command after `heron`")
                continue
        rest = words[taken:]
        if is_group(command) and rest and re.fullmatch(r"[a-z][a-z-]*", rest[0]):
            problems.append(f"{rest[0]!r} is no command of `heron ... {' '.join(path)}`")
        reached.add(id(command))
        for word in path:
            for name in word.split("|")[1:]:
                parent = groups[-1]
                if not is_group(parent) or name not in parent.commands:
                    problems.append(f"{name!r} names no command beside {word.split('|')[0]!r}")
                else:
                    reached.add(id(parent.commands[name]))
        before = command
        known = _options(command) | _options(root)
        text = " ".join(words[taken:]) + (" " + comment if index == 0 else "")
        for option in OPTION.findall(text):
            if option not in known:
                problems.append(f"`{option}` is no option of `heron ... {' '.join(path)}`")
    return problems


def readme_blocks() -> list[Block]:
    """Every fenced block of the README, in order."""
    blocks: list[Block] = []
    lang: str | None = None
    start, lines, section, seen = 0, [], "top", 0
    for number, line in enumerate(README.read_text(encoding="utf-8").splitlines(), start=1):
        if lang is None and line.startswith("#"):
            section = "-".join(re.findall(r"[a-z0-9]+", line.lower()))[:40] or "top"
            seen = 0
        elif lang is None and line.startswith("```"):
            lang, start, lines = line[3:].strip(), number + 1, []
        elif lang is not None and line.startswith("```"):
            seen += 1
            name = f"{section}-{seen}-{lang or 'plain'}"
            blocks.append(Block(lang=lang, text="\n".join(lines) + "\n", line=start, id=name))
            lang = None
        elif lang is not None:
            lines.append(line)
    assert lang is None, "README.md has an unclosed ``` block"
    return blocks


def _options(command: Any) -> set[str]:
    names = {"--help"}
    for param in command.params:
        names.update(param.opts)
        names.update(param.secondary_opts)
    return names


def _split_outside_brackets(text: str, sep: str) -> list[str]:
    parts, depth, current = [], 0, ""
    i = 0
    while i < len(text):
        ch = text[i]
        depth += ch in "[("
        depth -= ch in "])"
        if depth == 0 and text.startswith(sep, i):
            parts.append(current)
            current, i = "", i + len(sep)
            continue
        current += ch
        i += 1
    return [*parts, current]


OPTION = re.compile(r"(?<![\w-])(--?[a-zA-Z][\w-]*)")


def _walk(start: Any, words: list[str]) -> tuple[Any, list[str], int]:
    """Follow ``words`` down from ``start`` while they name subcommands: the command
    reached, the names taken and how many words they were; ``a|b`` names two siblings
    (``dismiss|cancel``), the first is followed."""
    command, path = start, []
    for word in words:
        names = word.split("|")
        if not is_group(command) or names[0] not in command.commands:
            break
        path.append(word)
        command = command.commands[names[0]]
    return command, path, len(path)


@dataclass(frozen=True)
class Block:
    """One fenced block of the README."""

    lang: str
    text: str
    line: int
    """The line of its first content line (1-based), for messages and tracebacks."""
    id: str
    """A name that survives edits elsewhere: its section's heading and its place there."""


BLOCKS = readme_blocks()
"""The README's code blocks, read once."""
