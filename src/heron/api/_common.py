"""Shared wire pieces: the strict base model, identifiers and the error body."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

__all__ = [
    "BASE_URL_PATTERN",
    "HOST_PATH_PATTERN",
    "ID_PATTERN",
    "MEMORY_PATH_PATTERN",
    "MODEL_SPEC_PATTERN",
    "ErrorBody",
    "ErrorResponse",
    "KindName",
    "ModelSpec",
    "NodeId",
    "ProfileName",
    "ProfileOrDefault",
    "RequestModel",
    "WireModel",
    "is_valid_id",
]

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"
"""What a node id (and every other identifier on the wire) may look like."""

_ID = re.compile(ID_PATTERN)

MODEL_SPEC_PATTERN = (
    r"^\s*(?:(?i:local|openai|deepseek|anthropic)\s*(?::[\s\S]*)?"
    r"|(?i:ollama|scripted)\s*:[\s\S]*\S[\s\S]*)$"
)
"""A model spec, ``KIND[:MODEL]``: a known kind (any case); ``ollama`` and ``scripted``
need the part after the colon (a model name, a script file)."""

ModelSpec = Annotated[
    str, StringConstraints(max_length=512), Field(json_schema_extra={"pattern": MODEL_SPEC_PATTERN})
]
"""A model spec in a request (the daemon checks it: ``422 invalid_model``)."""

_PORT = r"(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4})"
BASE_URL_PATTERN = (
    r"^\s*(?i:https?)://[^\s/?#@\[\]:]+(?::" + _PORT + r")?"
    r"(?:[/?#][^\s@]*)?\s*$"
)
"""An ``http(s)://`` URL with a host and no ``user:password@`` part."""

_SEGMENT = r"(?:[A-Za-z0-9_-][A-Za-z0-9_.-]*|\.[A-Za-z0-9_-][A-Za-z0-9_.-]*|\.\.[A-Za-z0-9_.-]+)"
MEMORY_PATH_PATTERN = rf"^\s*/*{_SEGMENT}(?:/{_SEGMENT})*/*\s*$"
"""A memory path, ``a/b/c``: segments of letters, digits, ``_``, ``.``, ``-`` (not ``.``
or ``..``), surrounding ``/`` and spaces dropped."""

HOST_PATH_PATTERN = r"^(?!.*(?:^|/)\.\.(?:/|$))/[^\x00]*$"
"""An absolute host path with no ``..`` component and no NUL."""

NodeId = Annotated[str, StringConstraints(pattern=ID_PATTERN)]
"""A node identifier: 1-128 characters, letters, digits, ``_``, ``.`` and ``-``."""


KindName = Annotated[str, StringConstraints(min_length=1, max_length=512)]
"""A kind's name (the daemon knows which exist: ``422 unknown_kind`` otherwise)."""

ProfileName = Annotated[
    str, StringConstraints(max_length=128), Field(json_schema_extra={"pattern": ID_PATTERN})
]
"""A profile's name, an identifier (the daemon checks it: ``400 invalid_profile_name``)."""

ProfileOrDefault = Annotated[
    str,
    StringConstraints(max_length=128),
    Field(json_schema_extra={"pattern": r"^(?:[A-Za-z0-9][A-Za-z0-9_.-]{0,127})?$"}),
]
"""A profile's name, or empty for the default (or no filter)."""


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
