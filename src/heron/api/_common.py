"""Shared wire pieces: the strict base model, identifiers and the error body."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

__all__ = [
    "ID_PATTERN",
    "ErrorBody",
    "ErrorResponse",
    "NodeId",
    "RequestModel",
    "WireModel",
    "is_valid_id",
]

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"
"""What a node id (and every other identifier on the wire) may look like."""

_ID = re.compile(ID_PATTERN)

NodeId = Annotated[str, StringConstraints(pattern=ID_PATTERN)]
"""A node identifier: 1-128 characters, letters, digits, ``_``, ``.`` and ``-``."""


def is_valid_id(value: object) -> bool:
    """Whether ``value`` is a well-formed identifier (see :data:`ID_PATTERN`)."""
    return isinstance(value, str) and _ID.fullmatch(value) is not None


class WireModel(BaseModel):
    """Base of every response: immutable; fields it does not know are ignored, so a
    client keeps reading the answers of a newer daemon that added fields."""

    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)


class RequestModel(WireModel):
    """Base of every request body: unknown fields are refused, not ignored, and strict,
    so ``0`` is not taken for ``false`` nor ``1`` for ``"1"`` (the body must match the
    published schema exactly)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)


class ErrorBody(WireModel):
    """What went wrong, in a form a program can branch on."""

    code: str = Field(examples=["node_not_found"])
    """A stable, machine-readable error code."""
    message: str
    """A human-readable explanation."""
    details: Any = None
    """Extra structured information (validation errors, limits), if any."""


class ErrorResponse(WireModel):
    """The body of every 4xx and 5xx response."""

    error: ErrorBody
    """The error."""
