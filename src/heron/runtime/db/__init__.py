"""The daemon's database: one SQLAlchemy engine shared with DBOS, the kernel's tables, and
the :class:`Schema` each package declares for its own tables."""

import typing

from ..._core.lazy import attach as _attach

if typing.TYPE_CHECKING:
    from ._database import (
        NODES_SCHEMA,
        DatabaseUnavailable,
        Text,
        create_engine,
        daemons,
        events,
        messages,
        metadata,
        nodes,
        outcomes,
        redact_url,
    )
    from ._handle import Database, Row
    from ._schema import Schema, Step, add_column

if not typing.TYPE_CHECKING:  # type checkers see the imports above, and no catch-all
    __getattr__, __dir__ = _attach(
        __name__,
        {
            "._database": (
                "DatabaseUnavailable",
                "NODES_SCHEMA",
                "Text",
                "create_engine",
                "daemons",
                "events",
                "messages",
                "metadata",
                "nodes",
                "outcomes",
                "redact_url",
            ),
            "._handle": ("Database", "Row"),
            "._schema": ("Schema", "Step", "add_column"),
        },
    )

__all__ = [
    "NODES_SCHEMA",
    "Database",
    "DatabaseUnavailable",
    "Row",
    "Schema",
    "Step",
    "Text",
    "add_column",
    "create_engine",
    "daemons",
    "events",
    "messages",
    "metadata",
    "nodes",
    "outcomes",
    "redact_url",
]
