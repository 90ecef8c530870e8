"""Listing tables that fit the terminal without cutting what people copy.

An id column (``whole``) is never wrapped or shortened: it is what the next command
takes. The other columns wrap to fit; when even wrapped they cannot fit, the
columns marked droppable go, least useful first, and a dim line says which.
Output that is not a terminal (a pipe, a file) is laid out at its natural width,
one row per line, unless ``COLUMNS`` says otherwise.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from rich.console import Console
from rich.table import Table
from rich.text import Text

__all__ = ["Cell", "Column", "print_table"]

_GAP = 2
"""Spaces between two columns (Rich's padding of one on each side, none at the edges)."""

_UNBOUNDED = 100_000
"""The width a pipe is laid out at: wide enough that no row wraps."""


@dataclass(frozen=True, slots=True)
class Column:
    """One column of a listing."""

    header: str
    """Its heading, in capitals."""
    whole: bool = False
    """Shown whole on one line, never shortened (ids, statuses, numbers); with ``drop``
    0 never left out."""
    drop: int = 0
    """0: always shown; otherwise dropped on a narrow terminal, the highest first."""
    wrap_min: int = 12
    """The narrowest a wrapping column may become before it is dropped instead."""
    justify: Literal["left", "right"] = "left"
    """``left`` or ``right`` (numbers)."""


Cell = str | Text
"""What a table cell holds: plain text, or styled text."""


def _width(cell: Cell) -> int:
    text = cell.plain if isinstance(cell, Text) else cell
    return max((len(line) for line in text.splitlines()), default=0)


def _natural(column: Column, cells: Sequence[Cell]) -> int:
    return max([len(column.header), *(_width(cell) for cell in cells)])


def _needed(column: Column, natural: int) -> int:
    """The fewest characters the column can be shown in."""
    if column.whole:
        return natural
    return min(natural, max(column.wrap_min, len(column.header)))


def _console_for(console: Console | None) -> Console:
    if console is not None:
        return console
    if "COLUMNS" not in os.environ and not Console().is_terminal:
        return Console(highlight=False, width=_UNBOUNDED)
    return Console(highlight=False)


def print_table(
    columns: Sequence[Column], rows: Sequence[Sequence[Cell]], console: Console | None = None
) -> None:
    """Print ``rows`` under ``columns``, fitted to the console's width (see the module)."""
    out = _console_for(console)
    shown = list(range(len(columns)))
    naturals = [_natural(column, [row[i] for row in rows]) for i, column in enumerate(columns)]

    def fits() -> bool:
        need = sum(_needed(columns[i], naturals[i]) for i in shown)
        return need + _GAP * (len(shown) - 1) <= out.width

    dropped: list[str] = []
    while not fits():
        candidates = [i for i in shown if columns[i].drop]
        if not candidates:
            break
        worst = max(candidates, key=lambda i: (columns[i].drop, i))
        shown.remove(worst)
        dropped.append(columns[worst].header)

    widths = {i: naturals[i] for i in shown}
    spare = out.width - sum(widths.values()) - _GAP * (len(shown) - 1)
    while spare < 0:
        # Narrow the widest wrapping column by one, down to what it needs.
        narrowable = [i for i in shown if widths[i] > _needed(columns[i], naturals[i])]
        if not narrowable:
            break  # the whole columns alone are wider than the terminal
        widest = max(narrowable, key=lambda i: widths[i])
        widths[widest] -= 1
        spare += 1

    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for i in shown:
        column = columns[i]
        table.add_column(
            column.header,
            width=widths[i],
            no_wrap=column.whole,
            overflow="fold",
            justify="right" if column.justify == "right" else "left",
        )
    for row in rows:
        table.add_row(*(row[i] for i in shown))
    if spare < 0:
        # Wider than the terminal even so: laid out at the width it needs (the terminal
        # wraps the lines) rather than cutting an id.
        width, out.width = out.width, out.width - spare
        try:
            out.print(table)
        finally:
            out.width = width
    else:
        out.print(table)
    if dropped:
        out.print(
            Text(f"({', '.join(dropped)} left out to fit: --json shows every field)", "dim"),
            soft_wrap=True,
        )
