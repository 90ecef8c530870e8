"""Validation failures described for a model to read and correct."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import jsonschema
from pydantic import ValidationError

__all__ = ["jsonschema_problems", "pydantic_problems"]


def _where(path: Iterable[object]) -> str:
    return ".".join(str(p) for p in path) or "(root)"


def jsonschema_problems(validator: jsonschema.protocols.Validator, instance: Any) -> list[str]:
    """Every way ``instance`` fails ``validator``, as ``path: message`` lines, in path order."""
    errors = sorted(validator.iter_errors(instance), key=lambda e: [str(p) for p in e.path])
    return [f"{_where(e.path)}: {e.message}" for e in errors]


def pydantic_problems(exc: ValidationError) -> list[str]:
    """A pydantic failure as ``path: message`` lines."""
    return [f"{_where(e['loc'])}: {e['msg']}" for e in exc.errors()]
