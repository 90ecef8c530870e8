"""Between the wire and the tables: checking create parameters, and rows as API nodes."""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import jsonschema
from pydantic import TypeAdapter
from referencing import Registry
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

from ... import api
from ..server import ApiError, parse_duration
from ._types import NodeRow

__all__ = [
    "check_directory",
    "check_duration",
    "check_output_schema",
    "maybe_when",
    "new_row",
    "node_cursor",
    "read_cursor",
    "to_node",
    "to_outcome",
    "when",
]


def when(value: float) -> datetime:
    """A Unix time as an aware UTC datetime."""
    return datetime.fromtimestamp(value, UTC)


def maybe_when(value: float | None) -> datetime | None:
    """:func:`when`, keeping ``None``."""
    return when(value) if value is not None else None


def check_duration(text: str | None) -> int | None:
    """Seconds in a wire duration, or ``422 invalid_deadline``."""
    if text is None:
        return None
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise ApiError(422, "invalid_deadline", str(exc)) from None


def check_directory(path: str | None) -> str | None:
    """An existing absolute directory, normalised, or ``422 invalid_cwd``."""
    if path is None:
        return None
    if not os.path.isabs(path):
        raise ApiError(422, "invalid_cwd", f"cwd must be an absolute path, not {path!r}")
    if not os.path.isdir(path):
        raise ApiError(422, "invalid_cwd", f"cwd {path!r} is not an existing directory")
    return os.path.normpath(path)


def check_output_schema(value: str | dict[str, Any] | None) -> dict[str, Any] | None:
    """A valid JSON schema (given as an object or JSON text), or ``422 invalid_output_schema``."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise ApiError(
                422, "invalid_output_schema", f"output_schema is not JSON: {exc}"
            ) from None
    if not isinstance(value, dict):
        raise ApiError(422, "invalid_output_schema", "output_schema must be a JSON object")
    try:
        jsonschema.Draft202012Validator.check_schema(value)
    except jsonschema.SchemaError as exc:
        raise ApiError(
            422, "invalid_output_schema", f"output_schema is not a valid JSON schema: {exc.message}"
        ) from None
    _check_references(value)
    return value


_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples", "example"})
"""Keywords whose values are instances, not schemas: a ``$ref`` key there is data."""


def _check_references(schema: dict[str, Any]) -> None:
    """``422 invalid_output_schema`` for a ``$ref`` that does not resolve within the schema
    (a missing ``$defs`` entry, a remote document: nothing is fetched), so a broken schema
    is refused at create instead of failing every submission later."""
    resource = DRAFT202012.create_resource(schema)
    base = resource.id() or ""
    registry: Registry[Any] = Registry().with_resource(base, resource)
    problems: list[str] = []

    def walk(node: Any, resolver: Any, where: str) -> None:
        if isinstance(node, list):
            for i, item in enumerate(node):
                walk(item, resolver, f"{where}/{i}")
            return
        if not isinstance(node, dict):
            return
        if isinstance(node.get("$id"), str) and where:
            resolver = resolver.in_subresource(DRAFT202012.create_resource(node))
        ref = node.get("$ref")
        if isinstance(ref, str):
            try:
                resolver.lookup(ref)
            except Unresolvable:
                problems.append(f"{where or '(root)'}: $ref {ref!r} does not resolve")
        for key, child in node.items():
            if key not in _DATA_KEYWORDS:
                walk(child, resolver, f"{where}/{key}")

    walk(schema, registry.resolver(base_uri=base), "")
    if problems:
        raise ApiError(
            422,
            "invalid_output_schema",
            f"output_schema has references that lead nowhere: {'; '.join(problems[:5])} "
            "(a $ref must point inside the schema, e.g. #/$defs/Name; remote schemas are "
            "not fetched)",
            problems,
        )


def node_cursor(row: NodeRow) -> str:
    """The cursor of ``GET /v1/nodes`` listing the nodes after this one: where it sits
    in the listing (its creation time and id), so it holds after the node is pruned."""
    return f"{row['created_at']!r}:{row['node_id']}"


def read_cursor(cursor: str) -> tuple[float, str]:
    """``(created_at, node_id)`` from a :func:`node_cursor`; ``400 invalid_cursor``."""
    created, _, node_id = cursor.partition(":")
    try:
        at = float(created)
    except ValueError:
        at = float("nan")
    if not api.is_valid_id(node_id) or at != at:  # (NaN is not equal to itself)
        raise ApiError(
            400,
            "invalid_cursor",
            f"not a cursor of this listing: {cursor[:80]!r} (pass on the Heron-Next-Cursor "
            "header of the previous page as it is)",
        )
    return at, node_id


def to_node(row: NodeRow) -> api.Node:
    """A row of ``heron_nodes`` as the wire's :class:`heron.api.Node`."""
    extra = row["extra"] or {}
    return api.Node(
        node_id=row["node_id"],
        status=row["status"],
        root=row["root"],
        root_lifecycle=row["root_lifecycle"],
        mode=row["mode"],
        name=row["name"],
        description=row["description"],
        prompt=row["prompt"],
        kind=row["kind"],
        model=row["model"],
        profile=row["profile"],
        cwd=row["cwd"],
        pin_cwd=row["pin_cwd"],
        scopes=row["scopes"],
        parent=row["parent"],
        creator=row["creator"],
        has_output_schema=row["output_schema"] is not None,
        created_at=when(row["created_at"]),
        updated_at=when(row["updated_at"]),
        deadline_at=maybe_when(row["deadline_at"]),
        settled_at=maybe_when(row["settled_at"]),
        runs=row["runs"],
        turns=row["turns"],
        input_tokens=row["input_tokens"],
        output_tokens=row["output_tokens"],
        worktree=api.NodeWorktree(**tree)
        if isinstance(tree := extra.get("worktree"), dict)
        else None,
        warm=bool(extra.get("served_warm")),
        forked_from=extra.get("forked_from"),
        previous_outcomes=[
            api.PreviousOutcome(
                outcome=to_outcome(p["outcome"]),
                settled_at=when(p["settled_at"]),
                status=p["status"],
            )
            for p in extra.get("previous_outcomes", [])
        ],
        cron_id=cron["cron_id"] if (cron := extra.get("cron")) else None,
    )


_OUTCOME: TypeAdapter[api.NodeResult | api.NodeFailure] = TypeAdapter(api.NodeOutcome)


def to_outcome(value: Mapping[str, Any]) -> api.NodeResult | api.NodeFailure:
    """A stored outcome (``heron_outcomes.outcome``, JSON) as the wire's model."""
    return _OUTCOME.validate_python(value)


def new_row(request: api.NodeCreateRequest) -> tuple[NodeRow, str | None]:
    """The row a create of ``request`` starts from (its output schema, ``cwd`` and
    deadline checked: ``422``), and its prompt (``None``: none to send)."""
    now = time.time()
    schema = check_output_schema(request.output_schema)
    cwd = check_directory(request.pin_cwd or request.cwd)
    deadline = check_duration(request.deadline)
    prompt = request.prompt if request.prompt and request.prompt.strip() else None
    row: NodeRow = {
        "node_id": request.node_id or f"n-{secrets.token_hex(8)}",
        "status": "dormant",  # (running once its first run is due: see create)
        "root": request.root if request.root is not None else request.parent is None,
        "root_lifecycle": request.root_lifecycle,
        "mode": request.mode,
        "name": request.name,
        "description": request.description,
        "prompt": prompt,
        "kind": request.kind,
        "model": request.model,
        "profile": request.profile,
        "cwd": cwd,
        "pin_cwd": request.pin_cwd is not None,
        "scopes": list(dict.fromkeys(request.scopes)) if request.scopes is not None else None,
        "parent": request.parent,
        "creator": request.creator,
        "output_schema": schema,
        "situational_context": request.situational_context,
        "extra": {
            "worktree": request.worktree,
            "prefer_warm": request.prefer_warm,
            "outcome_delivery": request.outcome_delivery,
            # Kept so relaunch-root can count the same span again from its restart.
            "deadline_seconds": deadline,
        },
        "created_at": now,
        "updated_at": now,
        "deadline_at": now + deadline if deadline is not None else None,
        "settled_at": None,
        "turns": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "runs": 0,
        "state": None,
        "pending_result": None,
        "events_reserved": None,
        "step_mark": None,
        "warm": None,
    }
    return row, prompt
