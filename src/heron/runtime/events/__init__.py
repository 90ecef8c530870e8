"""Node events: the durable numbered log, its table, the live hubs and the SSE route."""

import typing

from ..._core.lazy import attach as _attach

if typing.TYPE_CHECKING:
    from ._log import EventLog
    from ._routes import add_event_routes
    from ._store import EventRow, EventStore, Settlement, StepMark

if not typing.TYPE_CHECKING:  # type checkers see the imports above, and no catch-all
    __getattr__, __dir__ = _attach(
        __name__,
        {
            "._log": ("EventLog",),
            "._routes": ("add_event_routes",),
            "._store": ("EventRow", "EventStore", "Settlement", "StepMark"),
        },
    )

__all__ = ["EventLog", "EventRow", "EventStore", "Settlement", "StepMark", "add_event_routes"]
