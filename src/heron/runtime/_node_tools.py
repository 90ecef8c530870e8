"""The tools a node gets from the daemon: ``submit-result``, ``decline``, and by scope.

Scopes decide tools: ``ask`` adds the question tool, ``act`` the workspace tools
(files and bash, rooted at the node's directory); ``memory:*`` and ``schedule``
tools come with those resources. A node never sees a tool its scopes exclude.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from .._core import ToolError
from ..tools import Tool, ToolContext, get_current_time
from ._errors import ApiError

__all__ = ["ENFORCED_SCOPES", "DeclineTool", "SubmitResultTool", "node_tools"]

ENFORCED_SCOPES = frozenset({"ask", "act", "schedule", "memory:read", "memory:write"})
"""Scopes that decide which tools a node gets; any other scope is recorded only."""

Submit = Callable[[Any], Awaitable[None]]
Decline = Callable[[str, str | None, bool], Awaitable[None]]


class SubmitResultTool(Tool):
    """``submit-result``: hand the daemon the node's structured result (checked by schema)."""

    name = "submit-result"
    stop_iteration_after_use = True

    def __init__(self, schema: dict[str, Any], submit: Submit) -> None:
        super().__init__(
            description=(
                "Finish the task by submitting its result, which must match the schema of "
                "`result`. If the submission is invalid you get the errors back: fix them and "
                "call again. Call `decline` instead if the task cannot honestly be done."
            ),
            input_schema={
                "type": "object",
                "properties": {"result": schema},
                "required": ["result"],
                "additionalProperties": False,
            },
        )
        self._submit = submit

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        # The daemon checks the result itself (and says what is wrong in the model's
        # terms); only the envelope is checked here.
        if "result" not in arguments:
            raise ToolError("submit-result needs a `result` argument")
        return arguments

    async def execute(self, arguments: dict[str, Any], context: ToolContext) -> str:
        try:
            await self._submit(arguments["result"])
        except ApiError as exc:
            if exc.status != 422:
                raise ToolError(exc.message) from None
            problems = "\n".join(f"- {p}" for p in exc.details or ()) or exc.message
            raise ToolError(
                f"the result does not match the schema:\n{problems}\nFix it and submit again."
            ) from None
        return "Result accepted."


_DECLINE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reason": {"type": "string", "description": "Why the task is declined."},
        "code": {"type": "string", "description": "A short code for the reason."},
        "retryable": {"type": "boolean", "description": "Could a retry succeed?"},
    },
    "required": ["reason"],
    "additionalProperties": False,
}


class DeclineTool(Tool):
    """``decline``: refuse the task honestly, with a reason the caller gets back as a value."""

    name = "decline"
    stop_iteration_after_use = True
    description = (
        "Decline the task when it cannot honestly be completed (impossible, unsafe, or "
        "missing information). Say why; set retryable if trying again later could work."
    )

    def __init__(self, decline: Decline) -> None:
        super().__init__(input_schema=_DECLINE_SCHEMA)
        self._decline = decline

    async def execute(self, arguments: dict[str, Any], context: ToolContext) -> str:
        reason = str(arguments["reason"]).strip()
        if not reason:
            raise ToolError("decline needs a non-empty reason")
        await self._decline(reason, arguments.get("code"), bool(arguments.get("retryable")))
        return "Declined."


def node_tools(
    *,
    scopes: Sequence[str] | None,
    output_schema: dict[str, Any] | None,
    submit: Submit,
    decline: Decline,
) -> list[Tool]:
    """The tools a node with ``scopes`` (``None``: every scope) gets."""
    allowed = ENFORCED_SCOPES if scopes is None else frozenset(scopes)
    tools: list[Tool] = [get_current_time]
    if output_schema is not None:
        tools += [SubmitResultTool(output_schema, submit), DeclineTool(decline)]
    del allowed  # the scoped tool sets are added as their modules land
    return tools


def schema_text(schema: dict[str, Any]) -> str:
    """The schema as compact JSON, for the instruction that asks for a result."""
    return json.dumps(schema, separators=(",", ":"))
