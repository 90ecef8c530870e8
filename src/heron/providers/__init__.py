"""Model providers: the :class:`Provider` interface and its implementations."""

from .._core import emit
from ._base import Provider, resolve_think_effort, think_budget
from .scripted import ScriptedProvider

__all__ = ["Provider", "ScriptedProvider", "emit", "resolve_think_effort", "think_budget"]
