"""Loading GGUF models with llama-cpp-python, once per file and settings, shared in-process."""

from __future__ import annotations

import atexit
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._core import ProviderError

if TYPE_CHECKING:
    import llama_cpp

__all__ = ["LoadedModel", "ModelKey", "load_model"]

ModelKey = tuple[Path, int, int | None, bool]
"""What a loaded model is shared by: file, context size, threads, weight repacking."""


@dataclass
class LoadedModel:
    """A loaded model and the lock serialising its use (llama.cpp contexts are not shareable)."""

    llm: llama_cpp.Llama
    """The llama-cpp-python model and its context."""
    lock: threading.Lock
    """Held for the whole of one generation."""
    formatter: Any
    """The chat template, ready to render messages into a prompt."""
    stop: list[str]
    """The end-of-sequence text."""
    plain_roles: bool = False
    """Whether the chat template only takes alternating user/assistant turns."""


_models: dict[ModelKey, LoadedModel] = {}
_models_lock = threading.Lock()
_loading: dict[ModelKey, threading.Lock] = {}


@atexit.register
def _close_models() -> None:
    """Free the loaded models before interpreter teardown, when llama.cpp's own
    finalisers would run against already-unloaded modules and print errors."""
    with _models_lock:
        for loaded in _models.values():
            # A generation still running (an interrupted exit) keeps its model: the
            # process is ending anyway, and waiting for it would hang the exit.
            if loaded.lock.acquire(timeout=1.0):
                loaded.llm.close()
                loaded.lock.release()
        _models.clear()


def load_model(key: ModelKey, template: str, *, provider: str = "local") -> LoadedModel:
    """The model for ``key``, loaded on first use and shared afterwards.

    ``template`` is the Jinja chat template its prompts are rendered with.
    """
    with _models_lock:
        loaded = _models.get(key)
        if loaded is not None:
            return loaded
        loading = _loading.setdefault(key, threading.Lock())
    # One load per model at a time; other models (and the exit hook) need not wait.
    with loading:
        with _models_lock:
            loaded = _models.get(key)
        if loaded is None:
            loaded = _open(key, template, provider)
            with _models_lock:
                _models[key] = loaded
        return loaded


def _open(key: ModelKey, template: str, provider: str) -> LoadedModel:
    import llama_cpp
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    path, n_ctx, threads, repack = key
    _install_params_hook()
    _pending.repack = repack
    try:
        llm = llama_cpp.Llama(str(path), n_ctx=n_ctx, n_threads=threads, verbose=False)
    except (ValueError, RuntimeError) as exc:
        raise ProviderError(f"cannot load {path}: {exc}", provider=provider) from exc
    finally:
        _pending.repack = None
    if bool(llm.model_params.use_extra_bufts) != repack:
        llm.close()
        raise ProviderError(
            f"cannot load {path} with weight repacking {'on' if repack else 'off'}: "
            "this llama-cpp-python ignores use_extra_bufts",
            provider=provider,
        )

    def text(token: int) -> str:
        return llm.detokenize([token], special=True).decode("utf-8", errors="replace")

    eos, bos = text(llm.token_eos()), text(llm.token_bos())
    formatter = Jinja2ChatFormatter(template, eos_token=eos, bos_token=bos)
    return LoadedModel(llm=llm, lock=threading.Lock(), formatter=formatter, stop=[eos])


# ``Llama.__init__`` builds its model parameters from ``llama_model_default_params()``
# and loads the weights before returning, with no argument for ``use_extra_bufts``.
# The default-params function is wrapped once so a load on this thread can ask for
# its own value; every other caller (and thread) gets llama.cpp's defaults untouched.
_pending = threading.local()
_hook_lock = threading.Lock()
_hooked = False


def _install_params_hook() -> None:
    global _hooked
    import llama_cpp.llama_cpp as bindings

    with _hook_lock:
        if _hooked:
            return
        original: Callable[[], Any] = bindings.llama_model_default_params

        def default_params() -> Any:
            params = original()
            repack = getattr(_pending, "repack", None)
            if repack is not None:
                params.use_extra_bufts = repack
            return params

        bindings.llama_model_default_params = default_params
        _hooked = True
