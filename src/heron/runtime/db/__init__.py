"""The daemon's database: one SQLAlchemy engine shared with DBOS, its tables and migrations."""

import typing

from ..._core.lazy import attach as _attach

if typing.TYPE_CHECKING:
    from ._database import (
        MEMORY_FTS,
        DatabaseUnavailable,
        create_engine,
        cron_firings,
        crons,
        events,
        human_requests,
        memory_entries,
        memory_versions,
        messages,
        nodes,
        outcomes,
        profiles,
        redact_url,
        reports,
    )
    from ._handle import Database, Row

if not typing.TYPE_CHECKING:  # type checkers see the imports above, and no catch-all
    __getattr__, __dir__ = _attach(
        __name__,
        {
            "._database": (
                "DatabaseUnavailable",
                "MEMORY_FTS",
                "create_engine",
                "cron_firings",
                "crons",
                "events",
                "human_requests",
                "memory_entries",
                "memory_versions",
                "messages",
                "nodes",
                "outcomes",
                "profiles",
                "redact_url",
                "reports",
            ),
            "._handle": ("Database", "Row"),
        },
    )

__all__ = [
    "MEMORY_FTS",
    "Database",
    "DatabaseUnavailable",
    "Row",
    "create_engine",
    "cron_firings",
    "crons",
    "events",
    "human_requests",
    "memory_entries",
    "memory_versions",
    "messages",
    "nodes",
    "outcomes",
    "profiles",
    "redact_url",
    "reports",
]
