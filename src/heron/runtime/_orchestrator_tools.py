"""The tools of an orchestrator node: spawn, message, wait for, list and close children.

A child is referred to by its node id or by the name it was spawned with. A
node manages only its own children (those whose ``parent`` it is); anything
else is a tool error the model reads and can correct.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import ValidationError

from .. import api
from .._core import ToolError
from ..agents._team import current_scope
from ..tools import Tool, ToolContext
from ._engine import SETTLED
from ._errors import ApiError
from ._orchestration import Orchestration, child_summary, outcome_text
from ._profiles import given_model
from ._rows import to_node
from ._store import Row
from ._worktrees import active_worktree

if TYPE_CHECKING:
    from ._engine import Engine

__all__ = ["ORCHESTRATOR_TOOLS", "orchestrator_tools"]

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

    def __init__(self, engine: Engine, node_id: str, run: int) -> None:
        super().__init__(input_schema=self.arguments)
        self._engine = engine
        self._orchestration: Orchestration = engine.orchestration
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
        async with self._orchestration.spawning(self._node_id):
            return await self._spawn(arguments)

    async def _spawn(self, arguments: dict[str, Any]) -> str:
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
        scopes = arguments.get("scopes")
        if scopes is None:
            scopes = parent["scopes"]
        elif parent["scopes"] is not None:
            beyond = sorted(set(scopes) - set(parent["scopes"]))
            if beyond:
                raise ToolError(f"a child cannot have scopes you lack: {', '.join(beyond)}")
        node_id = self._child_id()
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
            child = await engine.create(request)
        except ApiError as exc:
            existing = await engine.store.node(node_id) if node_id is not None else None
            if exc.code != "node_id_exists" or existing is None or existing["creator"] != parent_id:
                raise ToolError(f"cannot spawn that child: {exc.message}") from None
            # This very call ran before a restart and spawned it already.
            child = to_node(existing)
        told = (
            "its outcome comes to you as a message"
            if deliver
            else "collect its outcome with wait-children"
        )
        label = f" ({child.name!r})" if child.name else ""
        return f"Spawned child {child.node_id}{label}: it is {child.status}; {told}."

    def _child_id(self) -> str | None:
        """The same id if this call is run again after a restart: no duplicate child."""
        scope = current_scope()
        call_id = scope.call.id if scope is not None and scope.call is not None else ""
        if not call_id:
            return None
        key = f"{self._node_id}:{self._run}:{call_id}".encode()
        return f"n-{hashlib.sha256(key).hexdigest()[:16]}"


class MessageChildTool(_ChildTool):
    """``message-child``: send a follow-up to a child (a dormant child wakes)."""

    name = "message-child"
    description = "Send a message to one of your children; a child waiting for input wakes."
    arguments: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"child": _CHILD, "body": {"type": "string", "minLength": 1}},
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
            "children": {"type": "array", "items": _CHILD, "minItems": 1},
            "timeout_seconds": {"type": "number", "exclusiveMinimum": 0, "maximum": WAIT_MAX},
        },
        "additionalProperties": False,
    }

    async def execute(self, arguments: dict[str, Any], context: ToolContext) -> str:
        orchestration = self._orchestration
        refs = arguments.get("children")
        if refs is None:
            rows = await orchestration.children(self._node_id)
            if not rows:
                raise ToolError("you have no children to wait for: spawn-child first")
        else:
            rows = [await orchestration.child(self._node_id, ref) for ref in refs]
        ids = list(dict.fromkeys(r["node_id"] for r in rows))
        timeout = float(arguments.get("timeout_seconds", WAIT_DEFAULT))
        outcomes = await orchestration.collect(ids, timeout)
        blocks = []
        for child_id in ids:
            row = await self._engine.store.node(child_id)
            outcome = outcomes[child_id]
            if row is not None and outcome is not None and (row["extra"] or {}).get("delivered"):
                blocks.append(
                    f"Child {child_id} {row['status']}: its outcome already reached you "
                    "as a message."
                )
            elif row is not None and outcome is not None:
                blocks.append(outcome_text(row, outcome))
            else:
                status = row["status"] if row is not None else "gone"
                blocks.append(f"Child {child_id} is still working ({status}).")
        return "\n\n".join(blocks)


class ListChildrenTool(_ChildTool):
    """``list-children``: your children and where each one is."""

    name = "list-children"
    description = "List your children: id, name, status and turns taken."

    async def execute(self, arguments: dict[str, Any], context: ToolContext) -> str:
        rows = await self._orchestration.children(self._node_id)
        if not rows:
            return "You have no children."
        return json.dumps(child_summary(rows), ensure_ascii=False)


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
        if child["status"] in ("completed", "failed", "cancelled"):
            return f"Child {child_id} had already settled ({child['status']})."
        reason = f"closed by its parent {self._node_id}"
        if arguments.get("reason"):
            reason += f": {arguments['reason']}"
        closed = await self._engine.close(child_id, reason, quiet=True)
        return f"Child {child_id} is {closed.status}."


def _workdir(row: Row) -> str | None:
    """Where the node works: its worktree while it has one, else its ``cwd``."""
    tree = active_worktree(row)
    return str(tree["workdir"]) if tree is not None else row["cwd"]


def orchestrator_tools(engine: Engine, node_id: str, run: int) -> list[Tool]:
    """The orchestrator tools of ``node_id`` for its run ``run``."""
    kinds: tuple[type[_ChildTool], ...] = (
        SpawnChildTool,
        MessageChildTool,
        WaitChildrenTool,
        ListChildrenTool,
        CloseChildTool,
    )
    return [kind(engine, node_id, run) for kind in kinds]
