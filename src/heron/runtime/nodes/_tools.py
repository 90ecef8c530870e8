"""The tools a node gets from the daemon: ``submit-result``, ``decline``, and by scope.

Scopes decide tools: ``ask`` adds the question tool, ``act`` the workspace tools
(files and bash, rooted at the node's directory); ``memory:*`` and ``schedule``
tools come with those resources (``memory-search``/``memory-read`` need
``memory:read``, ``memory-write`` ``memory:write``; ``schedule`` the ``cron-*``
tools). A node never sees a tool its scopes exclude.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ... import api
from ..._core import ToolError
from ..._core.closing import AsyncClosing
from ...tools import (
    BashTools,
    Tool,
    ToolContext,
    bash_tools,
    filesystem_tools,
    get_current_time,
    question_answer_tool,
)
from ..server import ApiError

__all__ = [
    "ASK_TOOL",
    "BASH_TOOLS",
    "CHILD_TOOLS",
    "ENFORCED_SCOPES",
    "KIND_FIXED_TOOLS",
    "MEMORY_READ_TOOLS",
    "MEMORY_WRITE_TOOLS",
    "SCHEDULE_TOOLS",
    "SMALL_MODEL_TOOLS",
    "DeclineTool",
    "NodeTools",
    "SubmitResultTool",
    "admits",
    "narrowed_scopes",
    "node_tools",
    "scope_of",
    "workspace_files",
]

MEMORY_READ_TOOLS = ("memory-search", "memory-read")
"""The memory tools the ``memory:read`` scope brings (``memory:write`` brings the rest)."""

MEMORY_WRITE_TOOLS = ("memory-write",)
"""The memory tools that change notes (``memory:write``)."""

ASK_TOOL = "ask-questions"
"""The tool ``ask`` brings: a run that ends with it leaves the node dormant, not settled."""

ENFORCED_SCOPES = frozenset(api.SCOPES)
"""Scopes that decide which tools a node gets (the only ones a create may name); ``net``
decides whether its sandboxed commands reach the network."""

CHILD_TOOLS = ("spawn-child", "message-child", "wait-children", "list-children", "close-child")
"""An orchestrator's child tools: its mode brings them, and nothing takes them away (its
kind, a small model)."""

KIND_FIXED_TOOLS = ("submit-result", "decline", "push-report", *CHILD_TOOLS)
"""Tools a kind cannot remove (nor name): a node's ways to finish and report, and an
orchestrator's child tools (its mode, not its persona, brings them)."""

_ACT_FAMILIES = ("fs", "bash", "browser", "present")
"""Tool name prefixes (before the first ``-``) that work on the machine: they need ``act``."""


def scope_of(tool: str) -> str | None:
    """The scope a tool needs (``None``: none), for the node's tools and its skills' alike."""
    if tool == ASK_TOOL:
        return "ask"
    if tool in MEMORY_READ_TOOLS:
        return "memory:read"
    if tool.startswith("memory-"):
        return "memory:write"
    if tool.startswith("cron-"):
        return "schedule"
    if tool.split("-", 1)[0] in _ACT_FAMILIES:
        return "act"
    return None


def admits(
    scopes: Sequence[str] | None, keep: Callable[[str], bool] | None
) -> Callable[[str], bool]:
    """Whether a node with ``scopes`` (``None``: every scope) and a kind keeping ``keep``
    (``None``: all) may have a tool, by name."""
    allowed = ENFORCED_SCOPES if scopes is None else frozenset(scopes)

    def admitted(name: str) -> bool:
        scope = scope_of(name)
        return (scope is None or scope in allowed) and (keep is None or keep(name))

    return admitted


def narrowed_scopes(
    asked: Sequence[str] | None, own: Sequence[str] | None, what: str
) -> list[str] | None:
    """The scopes of what a node makes (a child, a cron's runs): ``asked``, or the node's
    ``own`` when none are asked; :class:`ToolError` naming ``what`` if ``asked`` goes
    beyond ``own`` (``None``: every scope)."""
    if asked is None:
        return None if own is None else list(own)
    if own is not None:
        beyond = sorted(set(asked) - set(own))
        if beyond:
            raise ToolError(f"{what} cannot have scopes you lack: {', '.join(beyond)}")
    return list(asked)


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


@dataclass(kw_only=True, slots=True)
class NodeTools:
    """A node's tools for one run, and what must be closed when the run ends."""

    tools: list[Tool]
    """Everything the node may call."""
    closers: list[AsyncClosing] = field(default_factory=list)
    """Tool sets owning processes (``act``'s shell, a skill's browser), closed at the end."""
    shell: BashTools | None = None
    """The node's shell, whoever owns it (skills working on files share it)."""
    admits: Callable[[str], bool] = lambda name: True
    """Whether the node's scopes and kind let it have a tool (its skills' too)."""
    files: tuple[Tool, ...] = ()
    """The node's file tools, whatever its kind keeps (skills working on files share them)."""
    hidden: tuple[str, ...] = ()
    """What the node's file tools (and its skills' ``hidden``) keep out of reach."""

    async def aclose(self) -> None:
        """Stop what the tools started (background shell processes)."""
        for owner in self.closers:
            await owner.aclose()


def node_tools(
    *,
    scopes: Sequence[str] | None,
    output_schema: dict[str, Any] | None,
    workspace: Path,
    submit: Submit,
    decline: Decline,
    shell: Callable[[Path], BashTools] | None = None,
    keep: Callable[[str], bool] | None = None,
    granted: Sequence[Tool] = (),
    hidden: tuple[str, ...] = (),
    small: bool = False,
) -> NodeTools:
    """The tools a node with ``scopes`` (``None``: every scope) gets.

    ``granted`` are the tools the daemon's features give the node, in their order:
    those no kind removes (:data:`KIND_FIXED_TOOLS`: ``push-report``, an orchestrator's
    child tools) it gets whatever its scopes; the others (the ``memory-*`` tools of
    ``memory:read``/``memory:write``, the ``cron-*`` tools of ``schedule`` ...) when its
    scopes and kind admit them.

    ``act`` brings the file and shell tools, confined to ``workspace`` (the
    node's directory); ``ask`` the question tool, which ends the run with the
    node dormant until a message answers: the one among ``granted`` (the daemon's
    files a human request), otherwise a plain one. ``keep`` (the node's kind)
    narrows them further by name; ``submit-result`` and ``decline`` stay, as the
    node's way to finish. ``shell(workspace)``, when given, supplies the bash tools,
    owned by the caller (they are not among the closers); otherwise new ones are made.
    ``hidden`` paths (the daemon's own files) are out of the file tools' reach even
    inside ``workspace``. With ``small`` (a model too small to choose among many tools)
    only the :data:`SMALL_MODEL_TOOLS` among them are offered, and an orchestrator's
    child tools.
    """
    wanted = admits(scopes, keep)
    made = NodeTools(tools=[get_current_time] if wanted(get_current_time.name) else [])
    made.admits = wanted
    made.hidden = hidden
    # The orchestrator's tools (its mode) and push-report belong to the node, like
    # submit-result: a kind does not narrow them (KIND_FIXED_TOOLS).
    made.tools += [t for t in granted if t.name in KIND_FIXED_TOOLS]
    others = [t for t in granted if t.name not in KIND_FIXED_TOOLS]
    if output_schema is not None:
        made.tools += [SubmitResultTool(output_schema, submit), DeclineTool(decline)]
    if admits(scopes, None)("fs-read-file"):
        # The file tools, when the scopes allow them (making them for a new directory costs).
        made.files = workspace_files(workspace, hidden)
        made.tools += [t for t in made.files if wanted(t.name)]
    if any(wanted(name) for name in BASH_TOOLS):
        # No shell at all (no process to own) unless the node may have one of its tools.
        bash = made.shell = shell(workspace) if shell is not None else bash_tools(workspace)
        made.tools += [t for t in bash if wanted(t.name)]
        if shell is None:
            made.closers.append(bash)
    if wanted(ASK_TOOL) and not any(t.name == ASK_TOOL for t in others):
        made.tools.append(question_answer_tool())
    made.tools += [t for t in others if wanted(t.name)]
    if small:
        made.tools = [t for t in made.tools if t.name in SMALL_MODEL_TOOLS or t.name in CHILD_TOOLS]
    return made


SMALL_MODEL_TOOLS = frozenset(
    {
        "get-current-time",
        "fs-read-file",
        "fs-list-directory",
        "fs-write-file",
        "bash-run",
        "submit-result",
        "decline",
    }
)
"""What a node on a small embedded model is offered of its tools: the clock, reading,
listing and writing files, one shell command, and its ways to finish. Every tool's schema
goes into such a model's prompt, and a model under a billion parameters reads two dozen
of them slowly and then cannot choose among them (it answered a request to read a file
with a memory tool); these few are the ones its requests name."""


SCHEDULE_TOOLS = ("cron-create", "cron-list", "cron-delete")
"""The names of the ``schedule`` scope's tools (made in ``crons._tools``)."""

BASH_TOOLS = ("bash-run", "bash-start", "bash-read", "bash-wait", "bash-kill", "bash-list")
"""The names of the shell's tools (``act``)."""


@functools.lru_cache(maxsize=256)
def workspace_files(workspace: Path, hidden: tuple[str, ...] = ()) -> tuple[Tool, ...]:
    """The file tools for a directory (``hidden`` out of reach), made once: they hold no
    state but their edit locks (which runs, and nodes, sharing the directory had better
    share), and making them (schemas from signatures) is most of what setting up a run
    costs."""
    return tuple(filesystem_tools(workspace, hidden=hidden))


def schema_text(schema: dict[str, Any]) -> str:
    """The schema as compact JSON, for the instruction that asks for a result."""
    return json.dumps(schema, separators=(",", ":"))
