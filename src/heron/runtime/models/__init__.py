"""Models: installed API keys, the default model, provider readiness and the pool.

Other packages use these names (loaded on first use, so importing a module of this
package never imports the others first)."""

import typing

from ..._core.lazy import attach as _attach

if typing.TYPE_CHECKING:
    from ._credentials import CREDENTIALS_FILE
    from ._providers import ProviderPool
    from ._readiness import KEY_VARIABLES
    from ._service import Models

if not typing.TYPE_CHECKING:  # type checkers see the imports above, and no catch-all
    __getattr__, __dir__ = _attach(
        __name__,
        {
            "._credentials": ("CREDENTIALS_FILE",),
            "._providers": ("ProviderPool",),
            "._readiness": ("KEY_VARIABLES",),
            "._service": ("Models",),
        },
    )

__all__ = ["CREDENTIALS_FILE", "KEY_VARIABLES", "Models", "ProviderPool"]
