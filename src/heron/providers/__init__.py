"""Model providers: the :class:`Provider` interface and its implementations.

The hosted providers (:class:`OpenAIProvider`, :class:`DeepSeekProvider`,
:class:`AnthropicProvider`, :class:`OllamaProvider`) are imported on first
use, so ``import heron`` does not load the vendor SDKs; so is :func:`out_of_process`
(the embedded model in a worker process).
"""

import typing as _typing
from typing import Any

from .._core import emit
from ._base import Provider, resolve_think_effort, think_budget
from ._calls import InvalidToolCall
from ._retry import RetryPolicy
from ._spec import KEYED_KINDS, PROVIDER_KINDS, default_provider, from_spec, load_script
from .local import LocalProvider, default_model_path
from .scripted import ScriptedProvider

if _typing.TYPE_CHECKING:
    from ._local_process import out_of_process
    from .anthropic import AnthropicProvider
    from .deepseek import DeepSeekProvider
    from .ollama import OllamaProvider
    from .openai import OpenAIProvider

__all__ = [
    "KEYED_KINDS",
    "PROVIDER_KINDS",
    "AnthropicProvider",
    "DeepSeekProvider",
    "InvalidToolCall",
    "LocalProvider",
    "OllamaProvider",
    "OpenAIProvider",
    "Provider",
    "RetryPolicy",
    "ScriptedProvider",
    "default_model_path",
    "default_provider",
    "emit",
    "from_spec",
    "load_script",
    "out_of_process",
    "resolve_think_effort",
    "think_budget",
]

_LAZY = {
    "AnthropicProvider": "anthropic",
    "DeepSeekProvider": "deepseek",
    "OllamaProvider": "ollama",
    "OpenAIProvider": "openai",
    # Worker processes: loaded by what runs the embedded model out of process.
    "out_of_process": "_local_process",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'heron.providers' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
