"""Tool calls as models send them: JSON arguments that may be broken or cut off."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .._core import ToolCall

__all__ = ["InvalidToolCall", "complete_arguments", "parse_call"]


@dataclass(frozen=True, kw_only=True, slots=True)
class InvalidToolCall(ToolCall):
    """A tool call whose arguments were not a JSON object (broken, or not an object).

    Models get JSON wrong now and then; that is the model's mistake to fix,
    not a failed request. ``arguments`` is empty, and an agent answers the
    call with an error result quoting :attr:`raw_arguments`, so the model can
    call again.
    """

    raw_arguments: str
    """The arguments text exactly as the model sent it."""
    problem: str
    """Why it is not a JSON object."""

    def complaint(self) -> str:
        """The error result an agent answers this call with."""
        return (
            f"tool {self.name!r} was not run: its arguments were not valid JSON "
            f"({self.problem}): {self.raw_arguments!r}. Call it again with a JSON object."
        )


def parse_call(call_id: str, name: str, raw: str | None) -> ToolCall:
    """The call for ``raw`` JSON arguments (empty means none), or an :class:`InvalidToolCall`."""
    if not raw or not raw.strip():
        return ToolCall(id=call_id, name=name, arguments={})
    value: Any
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return InvalidToolCall(id=call_id, name=name, raw_arguments=raw, problem=str(exc))
    if not isinstance(value, dict):
        problem = f"a JSON {type(value).__name__}, not an object"
        return InvalidToolCall(id=call_id, name=name, raw_arguments=raw, problem=problem)
    return ToolCall(id=call_id, name=name, arguments=value)


def complete_arguments(raw: str) -> bool:
    """Whether streamed arguments so far already form a whole JSON object."""
    try:
        return isinstance(json.loads(raw), dict)
    except json.JSONDecodeError:
        return False
