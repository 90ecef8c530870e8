"""Typed keyword parameters of requests (``client.nodes.create(prompt=..., cwd=...)``)."""

from __future__ import annotations

import difflib
from collections.abc import Collection, Mapping
from typing import Any, Literal, TypedDict

from pydantic import BaseModel, PydanticUserError, TypeAdapter

from .. import api

__all__ = [
    "ForkParams",
    "NodeConfigParams",
    "NodeCreateParams",
    "ParseParams",
    "ProfileEnsureParams",
    "check_fields",
    "create_body",
    "model_body",
    "schema_adapter",
]


class ParseParams(TypedDict, total=False):
    """The fields of a create other than ``output_schema`` (``client.nodes.parse`` takes
    that one as its own argument); see :class:`NodeCreateParams`."""

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


class NodeCreateParams(ParseParams, total=False):
    """``POST /v1/nodes``: every field is optional (see :class:`heron.api.NodeCreateRequest`).

    ``output_schema`` also takes a class pydantic can validate — a model, a dataclass,
    a ``TypedDict`` — and sends its JSON schema.
    """

    output_schema: str | Mapping[str, Any] | type[Any]
    """The JSON schema the result must satisfy: a JSON string, a schema, or a class."""


def create_body(
    params: NodeCreateParams | api.NodeCreateRequest | Mapping[str, Any] | None,
    fields: Mapping[str, Any],
) -> dict[str, Any]:
    """The JSON body of a create from a params mapping or model plus keyword fields
    (keywords win). A class as ``output_schema`` becomes its JSON schema; the
    ``node_id``/``parent``/``creator``/``fork_from`` ids are checked (``TypeError``)."""
    from ._resource import check_id

    body = model_body(params, api.NodeCreateRequest, fields)
    schema = body.get("output_schema")
    if isinstance(schema, type):
        body["output_schema"] = schema_adapter(schema).json_schema()
    elif isinstance(schema, Mapping):
        body["output_schema"] = dict(schema)
    for key in ("node_id", "parent", "creator", "fork_from"):
        if body.get(key) is not None:
            check_id(body[key], key.replace("_", " "))
    return body


class NodeConfigParams(TypedDict, total=False):
    """``PATCH /v1/nodes/{id}/config``: the fields to change (see
    :class:`heron.api.NodeConfigPatch`); fields left out stay as they are."""

    model: str | None
    """New model override (a provider spec), from the next turn on."""
    name: str | None
    """New display label."""
    description: str | None
    """New display description."""
    deadline: str | None
    """New deadline counted from now (``1h30m``)."""


class ForkParams(TypedDict, total=False):
    """``POST /v1/nodes/{id}/fork``: how the fork differs from its original (see
    :class:`heron.api.ForkRequest`; its ``node_id`` is ``new_node_id`` here)."""

    prompt: str
    """A first message for the fork: it runs at once (without one it waits, dormant)."""
    name: str
    """The fork's display label."""
    description: str
    """The fork's display description."""
    model: str
    """A different model for the fork (a provider spec)."""
    deadline: str
    """A deadline for the fork, counted from now (``1h30m``)."""
    new_node_id: str
    """Fork to this exact id (a collision answers ``409 node_id_exists``)."""
    no_kickoff: bool
    """Keep the fork dormant even with a ``prompt``."""


class ProfileEnsureParams(TypedDict, total=False):
    """``POST /v1/profiles/ensure``: fields given replace the stored ones (``None`` clears
    one); fields left out keep their stored value."""

    description: str | None
    """What the profile is for."""
    default_kind: str | None
    """The kind its nodes take when a create names none (a known kind)."""
    default_model: str | None
    """The model its nodes use when neither the create nor their kind names one."""


def schema_adapter(cls: type[Any]) -> TypeAdapter[Any]:
    """The pydantic adapter of an ``output_schema`` class; ``TypeError`` for a class
    pydantic cannot validate (nothing is sent then)."""
    try:
        return TypeAdapter(cls)
    except PydanticUserError as exc:  # PydanticSchemaGenerationError is one
        raise TypeError(
            f"output_schema {cls.__qualname__} is not a class pydantic can validate "
            f"(a model, a dataclass, a TypedDict ...): {exc}"
        ) from None


def model_body(
    params: Mapping[str, Any] | BaseModel | None,
    model: type[BaseModel],
    fields: Mapping[str, Any],
    also: Collection[str] = (),
) -> dict[str, Any]:
    """The JSON body from a params mapping or request ``model`` plus keyword fields
    (keywords win); ``TypeError`` for anything else as ``params``, or for a field
    ``model`` does not have (``also`` names client-side aliases that are let through)."""
    if isinstance(params, model):
        body: dict[str, Any] = params.model_dump(mode="json", exclude_unset=True)
    elif params is None:
        body = {}
    elif isinstance(params, Mapping):
        body = dict(params)
    else:
        raise TypeError(
            f"params must be a mapping or api.{model.__name__}, not {type(params).__name__}"
        )
    body.update(fields)
    check_fields(body, model, also)
    return body


def check_fields(body: Mapping[str, Any], model: type[BaseModel], also: Collection[str]) -> None:
    """``TypeError`` (nothing is sent) for a key of ``body`` that ``model`` has no field
    for, naming the closest field and the known ones: a typo would otherwise reach the
    daemon as a ``422`` at best."""
    known = set(model.model_fields) | set(also)
    unknown = [key for key in body if key not in known]
    if not unknown:
        return
    key = unknown[0]
    close = difflib.get_close_matches(str(key), known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise TypeError(
        f"unknown field {key!r} for {model.__name__}{hint}; known fields: "
        f"{', '.join(sorted(known))}"
    )
