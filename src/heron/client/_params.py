"""Typed keyword parameters of requests (``client.nodes.create(prompt=..., cwd=...)``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypedDict

from pydantic import BaseModel

from .. import api

__all__ = ["NodeCreateParams", "create_body"]


class NodeCreateParams(TypedDict, total=False):
    """``POST /v1/nodes``: every field is optional (see :class:`heron.api.NodeCreateRequest`).

    ``output_schema`` also takes a pydantic model class (its JSON schema is sent).
    """

    prompt: str
    """The run's entire brief."""
    kind: str
    """Persona; omitted for the profile's default."""
    model: str
    """Durable model override, a provider spec (``openai:gpt-4o``, ``local``)."""
    profile: str
    """The store, memory and purview the run uses (an application passes its own)."""
    cwd: str
    """Where the request came from (an absolute directory)."""
    pin_cwd: str
    """Pin the node to this directory regardless of ``cwd``."""
    situational_context: str
    """Ambient context kept out of the visible prompt."""
    deadline: str
    """Wall clock from spawn (``1h30m``); expiry cancels the node with ``deadline_exceeded``."""
    output_schema: str | Mapping[str, Any] | type[BaseModel]
    """The JSON schema the result must satisfy: a JSON string, a schema, or a model class."""
    root: bool
    """No parent, no subscription (what an application's run is; the default)."""
    root_lifecycle: Literal["terminal", "resident"]
    """``terminal`` finishes and is done; ``resident`` stays for a person to open."""
    mode: Literal["base", "orchestrator"]
    """Hands-on, or fanning out to children."""
    name: str
    """Display label."""
    description: str
    """Display description."""
    parent: str
    """Graph placement (an external caller leaves it unset)."""
    creator: str
    """Graph placement (an external caller leaves it unset)."""
    scopes: list[str]
    """Per-run allow-list; omitted to inherit every scope."""
    worktree: bool | str
    """Work in a managed git worktree of ``cwd``'s repository."""
    fork_from: str
    """Start from a copy of this node's saved conversation."""
    no_kickoff: bool
    """Create the node without sending the first message."""
    node_id: str
    """Spawn at this exact id (a duplicate answers ``409 node_id_exists``: retry-safe)."""
    prefer_warm: bool
    """Serve from the warm pool when the launch tuple matches."""
    outcome_delivery: Mapping[str, Any]
    """Arm outcome delivery at birth (``{action, payload?}``)."""


def create_body(
    params: NodeCreateParams | api.NodeCreateRequest | Mapping[str, Any] | None,
    fields: Mapping[str, Any],
) -> dict[str, Any]:
    """The JSON body of a create from a params mapping or model plus keyword fields
    (keywords win). A model class as ``output_schema`` becomes its JSON schema; the
    ``node_id``/``parent``/``creator``/``fork_from`` ids are checked (``TypeError``)."""
    from ._resource import check_id

    if isinstance(params, api.NodeCreateRequest):
        body: dict[str, Any] = params.model_dump(mode="json", exclude_unset=True)
    elif params is None:
        body = {}
    elif isinstance(params, Mapping):
        body = dict(params)
    else:
        raise TypeError(
            f"create params must be a mapping or api.NodeCreateRequest, not {type(params).__name__}"
        )
    body.update(fields)
    schema = body.get("output_schema")
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        body["output_schema"] = schema.model_json_schema()
    elif isinstance(schema, Mapping):
        body["output_schema"] = dict(schema)
    for key in ("node_id", "parent", "creator", "fork_from"):
        if body.get(key) is not None:
            check_id(body[key], key.replace("_", " "))
    return body
