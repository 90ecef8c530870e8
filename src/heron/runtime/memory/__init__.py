"""Memory: a profile's notes by path, versioned and searchable.

Other packages use these names (loaded on first use, so importing a module of this
package never imports the others first)."""

import typing

from ..._core.lazy import attach as _attach

if typing.TYPE_CHECKING:
    from ._service import Memory

if not typing.TYPE_CHECKING:  # type checkers see the imports above, and no catch-all
    __getattr__, __dir__ = _attach(
        __name__,
        {
            "._service": ("Memory",),
        },
    )

__all__ = ["Memory"]
