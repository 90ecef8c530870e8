"""What a tool hands back, and how plain Python return values become it."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic_core import to_jsonable_python

from .._core import ImagePart, Part, TextPart

__all__ = ["ToolResult", "to_tool_result"]


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolResult:
    """The outcome of one tool call, as the model will see it."""

    content: tuple[Part, ...] = ()
    """Text and image parts."""
    structured: Any = None
    """The JSON-ready value, when the tool returned data rather than prose."""
    is_error: bool = False
    """Whether the call failed."""
    stop_iteration: bool = False
    """Whether the agent should end its run after this tool."""

    @property
    def text(self) -> str:
        """All text parts joined."""
        return "".join(p.text for p in self.content if isinstance(p, TextPart))

    @property
    def images(self) -> tuple[ImagePart, ...]:
        """The image parts."""
        return tuple(p for p in self.content if isinstance(p, ImagePart))

    @classmethod
    def of_text(cls, text: str, *, is_error: bool = False) -> ToolResult:
        """A result holding one text part."""
        return cls(content=(TextPart(text=text),), is_error=is_error)

    @classmethod
    def error(cls, message: str) -> ToolResult:
        """A failed result carrying ``message``."""
        return cls(content=(TextPart(text=message),), is_error=True)

    @classmethod
    def unknown_tool(cls, name: str, known: Iterable[str]) -> ToolResult:
        """The failed result for a call to a tool that is not offered."""
        listed = ", ".join(sorted(known)) or "none"
        return cls.error(f"unknown tool {name!r}; available tools: {listed}")


def to_tool_result(value: Any) -> ToolResult:
    """Turn a tool's return value into a :class:`ToolResult`.

    Strings become text; images become image parts; a sequence holding an image
    becomes text and image parts; pydantic models, dicts, lists and numbers
    become JSON text plus a ``structured`` value; ``None`` becomes
    ``"(no output)"``.
    """
    if isinstance(value, ToolResult):
        return value
    if value is None:
        return ToolResult.of_text("(no output)")
    if isinstance(value, str):
        return ToolResult.of_text(value)
    if isinstance(value, bool | int | float):  # the common scalar case, without the encoder
        return ToolResult(content=(TextPart(text=json.dumps(value)),), structured=value)
    if isinstance(value, ImagePart | TextPart):
        return ToolResult(content=(value,))
    if (
        isinstance(value, Sequence)
        and not isinstance(value, str | bytes)
        and any(isinstance(v, ImagePart) for v in value)
    ):
        parts = tuple(
            v if isinstance(v, ImagePart | TextPart) else TextPart(text=_as_text(v)) for v in value
        )
        return ToolResult(content=parts)
    try:
        # pydantic's encoder reaches models nested in lists and dicts, which
        # json.dumps alone would give up on.
        data = to_jsonable_python(value)
        text = json.dumps(data)
    except (TypeError, ValueError):
        return ToolResult.of_text(str(value))
    return ToolResult(content=(TextPart(text=text),), structured=data)


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(to_jsonable_python(value))
    except (TypeError, ValueError):
        return str(value)
