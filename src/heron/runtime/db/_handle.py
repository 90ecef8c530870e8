"""The one object every store reaches the database through.

A :class:`Database` holds the SQLAlchemy engine (shared with DBOS), the kind of
database it is, and a small thread pool: a store's coroutine runs its statements
there, so the event loop never waits on the database. Each feature's store takes
the daemon's one ``Database`` and adds only its own reads and writes.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Concatenate, Literal, ParamSpec, TypeVar, cast

import sqlalchemy as sa

from ._database import migrate
from ._schema import Schema, forget_nodes

__all__ = ["Database", "Row"]

P = ParamSpec("P")
R = TypeVar("R")

Row = dict[str, Any]
"""A table row as a plain mapping of column names to values (untyped tables)."""


class Database:
    """The daemon's database: its engine, its kind and the thread pool stores run on."""

    def __init__(self, engine: sa.Engine, *, threads: int = 4) -> None:
        self.engine = engine
        """The SQLAlchemy engine (DBOS keeps its workflow tables through it too)."""
        self.schemas: tuple[Schema, ...] = ()
        """The schemas :meth:`migrate` brought up to date, the kernel's first."""
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="heron-db")

    @property
    def kind(self) -> Literal["sqlite", "postgresql"]:
        """``sqlite`` or ``postgresql``."""
        return "postgresql" if self.engine.dialect.name == "postgresql" else "sqlite"

    def migrate(self, schemas: Sequence[Schema]) -> dict[str, int]:
        """Create or upgrade the tables of ``schemas`` (the kernel's first; blocking: call
        before serving); each one's version by name. They are the database's schemas
        from then on (see :meth:`forget_nodes`)."""
        versions = migrate(self.engine, schemas)
        self.schemas = tuple(schemas)
        return versions

    def forget_nodes(self, conn: sa.Connection, node_ids: Sequence[str]) -> None:
        """Delete every row of every schema that belongs to ``node_ids`` (a node's own
        last), in ``conn``'s transaction."""
        if not self.schemas:
            raise RuntimeError("the database is not migrated: it knows no schema")
        forget_nodes(conn, self.schemas, node_ids)

    def close(self) -> None:
        """Stop the thread pool and release the engine's connections."""
        self._pool.shutdown(wait=True)
        self.engine.dispose()

    async def run(self, func: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        """``func(*args, **kwargs)`` on the thread pool (a blocking database call)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, functools.partial(func, *args, **kwargs))

    async def write(
        self, func: Callable[Concatenate[sa.Connection, P], R], *args: P.args, **kwargs: P.kwargs
    ) -> R:
        """``func(conn, ...)`` in one transaction (committed unless it raises), on the pool."""
        return await self.run(self._in_transaction, lambda conn: func(conn, *args, **kwargs))

    async def read(
        self, func: Callable[Concatenate[sa.Connection, P], R], *args: P.args, **kwargs: P.kwargs
    ) -> R:
        """``func(conn, ...)`` on a connection without a transaction of its own, on the pool."""
        return await self.run(self._on_connection, lambda conn: func(conn, *args, **kwargs))

    async def first(self, query: sa.Select[Any]) -> Row | None:
        """The first row ``query`` selects, or ``None``."""
        return await self.read(_first, query)

    async def all(self, query: sa.Select[Any]) -> list[Row]:
        """Every row ``query`` selects, in its order."""
        return await self.read(_all, query)

    async def scalar(self, query: sa.Select[Any]) -> Any:
        """The first column of the first row ``query`` selects (``None`` if none)."""
        return await self.read(_scalar, query)

    def _in_transaction(self, func: Callable[[sa.Connection], R]) -> R:
        with self.engine.begin() as conn:
            return func(conn)

    def _on_connection(self, func: Callable[[sa.Connection], R]) -> R:
        with self.engine.connect() as conn:
            return func(conn)


def _first(conn: sa.Connection, query: sa.Select[Any]) -> Row | None:
    found = conn.execute(query).first()
    return dict(found._mapping) if found is not None else None


def _all(conn: sa.Connection, query: sa.Select[Any]) -> list[Row]:
    return [dict(r._mapping) for r in conn.execute(query)]


def _scalar(conn: sa.Connection, query: sa.Select[Any]) -> Any:
    return cast(Any, conn.execute(query).scalar())
