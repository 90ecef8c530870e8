"""The daemon's page: the web canvas under ``/ui/`` and its browser sign-in.

Other packages use these names (loaded on first use, so importing a module of this
package never imports the others first)."""

import typing

from ..._core.lazy import attach as _attach

if typing.TYPE_CHECKING:
    from ._service import Page
    from ._sessions import Sessions

if not typing.TYPE_CHECKING:  # type checkers see the imports above, and no catch-all
    __getattr__, __dir__ = _attach(
        __name__,
        {
            "._service": ("Page",),
            "._sessions": ("Sessions",),
        },
    )

__all__ = ["Page", "Sessions"]
