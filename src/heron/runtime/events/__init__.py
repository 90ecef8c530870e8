"""Node events: the durable numbered log, the live hubs and the SSE route."""

import typing

from ..._core.lazy import attach as _attach

if typing.TYPE_CHECKING:
    from ._log import EventLog
    from ._routes import add_event_routes

if not typing.TYPE_CHECKING:  # type checkers see the imports above, and no catch-all
    __getattr__, __dir__ = _attach(
        __name__,
        {
            "._log": ("EventLog",),
            "._routes": ("add_event_routes",),
        },
    )

__all__ = ["EventLog", "add_event_routes"]
