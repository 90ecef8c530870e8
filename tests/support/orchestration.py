"""Orchestrator tests' helpers: tool calls that spawn and wait, and what an orchestrator saw."""

from __future__ import annotations

import json
from typing import Any

import httpx

from .daemon import Daemon, query
from .polling import eventually


def call(tool: str, /, **arguments: Any) -> dict[str, Any]:
    """One tool call of a scripted turn."""
    return {"name": tool, "arguments": arguments}


def spawn(name: str, model: str | None = None, **more: Any) -> dict[str, Any]:
    """A ``spawn-child`` call for a child named ``name``."""
    extra = {"model": model} if model is not None else {}
    return call("spawn-child", prompt=f"Do part {name}.", name=name, **extra, **more)


def conversation(daemon: Daemon, node_id: str) -> str:
    """The node's saved conversation (its messages and tool results) as JSON text."""
    ((state,),) = query(daemon, "SELECT state FROM heron_nodes WHERE node_id = ?", node_id)
    saved = json.loads(state) if state else None
    if saved is None:
        return ""  # its first run has not saved a conversation yet
    return json.dumps(saved["messages_full"])


def tool_statuses(daemon: Daemon, node_id: str) -> list[tuple[str, str]]:
    """The node's completed tool calls as (tool, status), in order."""
    sql = (
        "SELECT data FROM heron_events WHERE node_id = ? AND type = 'node.tool_call.completed' "
        "ORDER BY sequence_number"
    )
    events = [json.loads(d) for (d,) in query(daemon, sql, node_id)]
    return [(e["tool"], e["status"]) for e in events]


def children(client: httpx.Client, parent: str, count: int) -> dict[str, dict[str, Any]]:
    """The parent's children by name, once there are ``count`` of them."""
    found: list[dict[str, Any]] = eventually(
        lambda: [n for n in client.get("/v1/nodes").json() if n["parent"] == parent],
        lambda found: len(found) >= count,
        interval=0.02,
        what=f"{parent} spawning {count} children",
    )
    return {n["name"]: n for n in found}
