"""Model providers: the :class:`Provider` interface and its implementations."""

from .._core import emit
from ._base import Provider, resolve_think_effort, think_budget
from ._spec import PROVIDER_KINDS, default_provider, from_spec, load_script
from .local import LocalProvider, default_model_path
from .scripted import ScriptedProvider

__all__ = [
    "PROVIDER_KINDS",
    "LocalProvider",
    "Provider",
    "ScriptedProvider",
    "default_model_path",
    "default_provider",
    "emit",
    "from_spec",
    "load_script",
    "resolve_think_effort",
    "think_budget",
]
