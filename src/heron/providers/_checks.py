"""Constructor argument checks the hosted providers share."""

from __future__ import annotations

import math

from .._core import UserError

__all__ = ["require_effort", "require_key", "require_model"]


def require_key(provider: str, api_key: object) -> str:
    """``api_key``, checked to be a non-empty string."""
    if not isinstance(api_key, str) or not api_key.strip():
        raise UserError(f"{provider}: api_key must be a non-empty string")
    return api_key


def require_model(provider: str, model: object) -> str:
    """``model``, checked to be a non-empty string."""
    if not isinstance(model, str) or not model.strip():
        raise UserError(f"{provider}: model must be a non-empty string")
    return model


def require_effort(provider: str, effort: object) -> float | None:
    """``think_effort``, checked to be ``None`` or a number from 0 to 1."""
    if effort is None:
        return None
    if (
        isinstance(effort, bool)
        or not isinstance(effort, int | float)
        or math.isnan(effort)
        or not 0 <= effort <= 1
    ):
        raise UserError(f"{provider}: think_effort must be a number from 0 to 1, not {effort!r}")
    return float(effort)
