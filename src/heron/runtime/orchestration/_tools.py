"""The tools of an orchestrator node: spawn, message, wait for, list and close children.

A child is referred to by its node id or by the name it was spawned with. A
node manages only its own children (those whose ``parent`` it is); anything
else is a tool error the model reads and can correct.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any, ClassVar

from pydantic import ValidationError

from ... import api
from ..._core import ToolError
from ...tools import Tool, ToolContext
from ..nodes import SETTLED, NodeRow, call_key, narrowed_scopes, to_node
from ..profiles import given_model
from ..server import ApiError
from ..worktrees import active_worktree
from ._service import Orchestration, answer, child_summary, claimed, outcome_limit

__all__ = [
    "ORCHESTRATOR_TOOLS",
    "CloseChildTool",
    "ListChildrenTool",
    "MessageChildTool",
    "SpawnChildTool",
    "WaitChildrenTool",
    "orchestrator_tools",
]

ORCHESTRATOR_TOOLS = (
    "spawn-child",
    "message-child",
    "wait-children",
    "list-children",
    "close-child",
)
"""The names of the tools an orchestrator gets."""

WAIT_DEFAULT = 600
"""Seconds ``wait-children`` waits unless told otherwise."""

WAIT_MAX = 3600
"""The longest ``wait-children`` may wait in one call."""

MAX_WAITED = 256
"""The most children one ``wait-children`` call waits for."""

MAX_LISTED = 200
"""The most children ``list-children`` shows (the newest; it says how many there are)."""

MAX_MESSAGE = 256 * 1024
"""The longest ``message-child`` body (the message cap of ``POST …/messages``)."""

_CHILD: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": 512,
    "description": "The child's node id, or the name you spawned it with.",
}


class _ChildTool(Tool):
    """A tool acting for one orchestrator node in one run."""

    arguments: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}
    """The tool's input schema."""

    def __init__(self, orchestration: Orchestration, node_id: str, run: int) -> None:
        super().__init__(input_schema=self.arguments)
        self._engine = orchestration.engine
        self._orchestration = orchestration
        self._node_id = node_id
        self._run = run


class SpawnChildTool(_ChildTool):
    """``spawn-child``: start a child node on a sub-task."""

    name = "spawn-child"
    description = (
        "Start a child node: an agent of its own working on `prompt` (its entire brief: "
        "say everything it needs). It works in your directory with your model unless told "
        "otherwise. By default its outcome is delivered to you as a message when it settles; "
        "`wait-children` collects outcomes directly. Give it a `name` to refer to it later."
    )
    arguments: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "prompt": {"type": "string", "minLength": 1, "description": "The child's task."},
            "name": {"type": "string", "minLength": 1, "maxLength": 128},
            "kind": {"type": "string", "maxLength": 512, "description": "A persona."},
            "model": {"type": "string", "maxLength": 512, "description": "Another model."},
            "scopes": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "description": "Narrow the child's scopes (within yours).",
            },
            "output_schema": {
                "type": "object",
                "description": "A JSON schema the child's result must satisfy.",
            },
            "deadline": {"type": "string", "description": "Wall-clock limit, e.g. `10m`."},
            "deliver_outcome": {
                "type": "boolean",
                "description": "Deliver its outcome to you as a message (default true).",
            },
        },
        "required": ["prompt"],
        "additionalProperties": False,
    }

    async def execute(self, arguments: dict[str, Any], context: ToolContext) -> str:
        node_id = self._child_id()
        # This very call may have run before a restart and spawned it already: the
        # same child then, before any check (its own name would clash).
        existing = await self._engine.store.node(node_id)
        if existing is not None and existing["creator"] == self._node_id:
            return _spawned(to_node(existing), arguments.get("deliver_outcome", True))
        async with self._orchestration.spawning(self._node_id):
            return await self._spawn(arguments, node_id)

    async def _spawn(self, arguments: dict[str, Any], node_id: str) -> str:
        engine, parent_id = self._engine, self._node_id
        parent = await engine.row(parent_id)
        name = arguments.get("name")
        if name is not None:
            name = name.strip()
            # Unique among the children still working (a settled one's name may be reused:
            # a name then means the newest child that has it).
            taken = [
                c
                for c in await self._orchestration.children(parent_id)
                if c["name"] == name and c["status"] not in SETTLED
            ]
            if taken:
                raise ToolError(
                    f"you already have a child named {name!r} at work ({taken[0]['node_id']})"
                )
        scopes = narrowed_scopes(arguments.get("scopes"), parent["scopes"], "a child")
        deliver = arguments.get("deliver_outcome", True)
        try:
            request = api.NodeCreateRequest(
                prompt=arguments["prompt"],
                name=name,
                kind=arguments.get("kind"),
                # The parent's given model only: the child's kind and profile decide
                # otherwise, as for any create.
                model=arguments.get("model") or given_model(parent),
                scopes=scopes,
                output_schema=arguments.get("output_schema"),
                deadline=arguments.get("deadline"),
                cwd=str(engine.workspace(parent_id, _workdir(parent))),
                # A pinned parent's children are pinned to its directory too.
                pin_cwd=parent["cwd"] if parent["pin_cwd"] else None,
                root=False,
                parent=parent_id,
                creator=parent_id,
                profile=parent["profile"],
                node_id=node_id,
                outcome_delivery={"action": "message"} if deliver else None,
            )
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()
            )
            raise ToolError(f"cannot spawn that child: {problems}") from None
        try:
            # Shielded: a turn stopped meanwhile must not leave the child inserted but
            # never launched (a close of this node then finds and closes it).
            child = await asyncio.shield(engine.create(request))
        except ApiError as exc:
            raise ToolError(f"cannot spawn that child: {exc.message}") from None
        return _spawned(child, deliver)

    def _child_id(self) -> str:
        """The same id when this call runs again after a restart: no duplicate child."""
        key = f"{self._node_id}:{call_key(self._run)}".encode()
        return f"n-{hashlib.sha256(key).hexdigest()[:16]}"


def _spawned(child: api.Node, deliver: bool) -> str:
    told = "its outcome comes to you as a message" if deliver else "collect it with wait-children"
    label = f" ({child.name!r})" if child.name else ""
    return f"Spawned child {child.node_id}{label}: it is {child.status}; {told}."


class MessageChildTool(_ChildTool):
    """``message-child``: send a follow-up to a child (a dormant child wakes)."""

    name = "message-child"
    description = "Send a message to one of your children; a child waiting for input wakes."
    arguments: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "child": _CHILD,
            "body": {"type": "string", "minLength": 1, "maxLength": MAX_MESSAGE},
        },
        "required": ["child", "body"],
        "additionalProperties": False,
    }

    async def execute(self, arguments: dict[str, Any], context: ToolContext) -> str:
        child = await self._orchestration.child(self._node_id, arguments["child"])
        try:
            accepted = await self._engine.message(child["node_id"], arguments["body"])
        except ApiError as exc:
            raise ToolError(exc.message) from None
        how = "woke it" if accepted.delivery == "woke" else "it reads it at its next turn"
        return f"Message {accepted.message_id} sent to {child['node_id']}: {how}."


class WaitChildrenTool(_ChildTool):
    """``wait-children``: wait until children settle and get their outcomes."""

    name = "wait-children"
    description = (
        "Wait until the named children (all of yours if `children` is left out) settle, and "
        "get their outcomes. Stops waiting after `timeout_seconds` (default "
        f"{WAIT_DEFAULT}, at most {WAIT_MAX}) and says which are still working."
    )
    arguments: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "children": {
                "type": "array",
                "items": _CHILD,
                "minItems": 1,
                "maxItems": MAX_WAITED,
            },
            "timeout_seconds": {"type": "number", "exclusiveMinimum": 0, "maximum": WAIT_MAX},
        },
        "additionalProperties": False,
    }

    async def execute(self, arguments: dict[str, Any], context: ToolContext) -> str:
        orchestration = self._orchestration
        refs = arguments.get("children")
        if refs is None:
            every = await orchestration.children(self._node_id)
            if not every:
                raise ToolError("you have no children to wait for: spawn-child first")
            # All: those whose outcomes you have not had yet.
            rows = [r for r in every if r["settled_at"] is None or not claimed(r)]
            if not rows:
                return "Every child of yours has settled and its outcome reached you already."
            if len(rows) > MAX_WAITED:
                raise ToolError(
                    f"{len(rows)} children are still to report: name at most {MAX_WAITED}"
                )
        else:
            rows = [await orchestration.child(self._node_id, ref) for ref in refs]
        ids = list(dict.fromkeys(r["node_id"] for r in rows))
        timeout = float(arguments.get("timeout_seconds", WAIT_DEFAULT))
        taken = await orchestration.collect(ids, timeout, call_key(self._run))
        limit = outcome_limit(len(ids))
        return "\n\n".join(answer(c, taken[c], limit) for c in ids)


class ListChildrenTool(_ChildTool):
    """``list-children``: your children and where each one is."""

    name = "list-children"
    description = "List your children: id, name, status and turns taken."

    async def execute(self, arguments: dict[str, Any], context: ToolContext) -> str:
        rows = await self._orchestration.children(self._node_id)
        if not rows:
            return "You have no children."
        shown = json.dumps(child_summary(rows[-MAX_LISTED:]), ensure_ascii=False)
        if len(rows) > MAX_LISTED:
            return f"You have {len(rows)} children; the newest {MAX_LISTED}: {shown}"
        return shown


class CloseChildTool(_ChildTool):
    """``close-child``: cancel a child (and everything it spawned)."""

    name = "close-child"
    description = (
        "Cancel one of your children and the children it spawned. Its outcome is not "
        "delivered back to you."
    )
    arguments: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"child": _CHILD, "reason": {"type": "string", "maxLength": 512}},
        "required": ["child"],
        "additionalProperties": False,
    }

    async def execute(self, arguments: dict[str, Any], context: ToolContext) -> str:
        child = await self._orchestration.child(self._node_id, arguments["child"])
        child_id = child["node_id"]
        if child["status"] in SETTLED:
            return f"Child {child_id} had already settled ({child['status']})."
        reason = f"closed by its parent {self._node_id}"
        if arguments.get("reason"):
            reason += f": {arguments['reason']}"
        closed = await self._engine.close(child_id, reason, quiet=True)
        return f"Child {child_id} is {closed.status}."


def _workdir(row: NodeRow) -> str | None:
    """Where the node works: its worktree while it has one, else its ``cwd``."""
    tree = active_worktree(row)
    return str(tree["workdir"]) if tree is not None else row["cwd"]


def orchestrator_tools(orchestration: Orchestration, node_id: str, run: int) -> list[Tool]:
    """The orchestrator tools of ``node_id`` for its run ``run``."""
    kinds: tuple[type[_ChildTool], ...] = (
        SpawnChildTool,
        MessageChildTool,
        WaitChildrenTool,
        ListChildrenTool,
        CloseChildTool,
    )
    return [kind(orchestration, node_id, run) for kind in kinds]
