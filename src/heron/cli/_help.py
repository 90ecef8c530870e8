"""How ``--help`` names values: flags show none, values a word in capitals.

Typer (0.29) labels every option with its Python type, flags included
(``--json <bool>``), and arguments as ``{prompt}``. Heron's help reads as
Unix tools' does instead: ``--json``, ``--deadline DURATION``, ``PROMPT``.
"""

from __future__ import annotations

from typing import Any

from typer import core

__all__ = ["plain_help"]

_WORDS = {"str": "TEXT", "int": "INTEGER", "float": "NUMBER", "path": "PATH", "file": "FILE"}
"""Typer's type labels, as the words shown in their place."""


def _word(label: str) -> str:
    inner = label.strip("<>")
    repeated = inner.startswith("list[") and inner.endswith("]")
    if repeated:
        inner = inner[5:-1]
    if "|" in inner:  # a choice: shown as the choices themselves
        return f"[{inner}]"
    return _WORDS.get(inner, inner.upper())


def _option_type(self: core.TyperOption, ctx: Any) -> str | None:
    if self.is_flag or self.count:
        return None
    if self.metavar is not None:
        return self.metavar
    return _word(self.display_type(ctx))


def _argument_type(self: core.TyperArgument, ctx: Any) -> str | None:
    return None  # the argument's name (below) already says what it is


def _argument_raw(self: core.TyperArgument) -> str:
    return self.metavar if self.metavar is not None else (self.name or "").upper()


def _argument_name(self: core.TyperArgument) -> str:
    name = _argument_raw(self)
    return name if self.metavar is not None or self.nargs == 1 else f"{name}..."


def _argument_usage(self: core.TyperArgument) -> str:
    name = _argument_name(self)
    return name if self.required else f"[{name}]"


def plain_help() -> None:
    """Make Typer's help name values as described in the module docstring (idempotent)."""
    patches: dict[tuple[type[Any], str], Any] = {
        (core.TyperOption, "display_type_rich"): _option_type,
        (core.TyperArgument, "display_type_rich"): _argument_type,
        (core.TyperArgument, "display_name_raw"): property(_argument_raw),
        (core.TyperArgument, "_rich_display_name"): _argument_name,
        (core.TyperArgument, "_usage_display_name"): _argument_usage,
    }
    for (cls, name), function in patches.items():
        if hasattr(cls, name):  # another Typer may lack one: its own help is kept there
            setattr(cls, name, function)
