"""Each package's tables as a :class:`Schema`, versioned on its own.

The kernel and every feature that keeps tables declares one: its migration steps in
order, and which of its tables hold rows that belong to one node. A database records
each schema's version by name (``heron_schema``), so a feature adds a migration without
touching anyone else's, and a daemon refuses a database that a newer Heron changed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import sqlalchemy as sa

__all__ = ["Schema", "Step", "add_column", "apply", "forget_nodes"]

Step = Callable[[sa.Connection], None]
"""One migration: brings a schema from one version to the next, idempotently (a fresh
database's first step creates the tables as they are now, so later steps find their
change made already)."""


@dataclass(frozen=True, slots=True)
class Schema:
    """A package's tables and the steps that made them."""

    name: str
    """The name its version is recorded under (the package's, e.g. ``crons``)."""
    steps: tuple[Step, ...]
    """Its migrations in order; version N is ``steps[N - 1]``. Append, never edit."""
    per_node: tuple[sa.Table, ...] = ()
    """Its tables whose rows belong to one node (by ``node_id``): deleted with the node."""
    legacy: tuple[int, ...] = ()
    """For each of the first steps, the daemon-wide version that made it before
    schemas were versioned apart (``heron_migrations``): how an older database's
    record carries over."""

    @property
    def version(self) -> int:
        """The version its steps bring a database to."""
        return len(self.steps)


_versions = sa.Table(
    "heron_schema",
    sa.MetaData(),
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("version", sa.Integer, nullable=False),
)

_legacy_versions = sa.Table(
    "heron_migrations",
    sa.MetaData(),
    sa.Column("version", sa.Integer, primary_key=True),
)


def apply(conn: sa.Connection, schemas: Sequence[Schema]) -> dict[str, int]:
    """Bring every schema of ``schemas`` up to date, in order, in the caller's
    transaction; each one's version by name. ``RuntimeError`` if the database holds a
    schema newer than this Heron's."""
    names = [schema.name for schema in schemas]
    if len(set(names)) != len(names):
        raise ValueError(f"two schemas share a name: {names}")
    _versions.create(conn, checkfirst=True)
    recorded = {name: version for name, version in conn.execute(sa.select(_versions))}
    if not recorded:
        recorded = _carried_over(conn, schemas)
        for name, version in recorded.items():
            conn.execute(_versions.insert().values(name=name, version=version))
    for schema in schemas:
        current = recorded.get(schema.name)
        if current is not None and current > schema.version:
            raise RuntimeError(
                f"the database's {schema.name} tables (version {current}) are newer than "
                f"this Heron understands ({schema.version}): upgrade Heron"
            )
        for version in range((current or 0) + 1, schema.version + 1):
            schema.steps[version - 1](conn)
        if current is None:
            conn.execute(_versions.insert().values(name=schema.name, version=schema.version))
        elif current < schema.version:
            where = _versions.c.name == schema.name
            conn.execute(_versions.update().where(where).values(version=schema.version))
    return {schema.name: schema.version for schema in schemas}


def _carried_over(conn: sa.Connection, schemas: Iterable[Schema]) -> dict[str, int]:
    """What an older database's daemon-wide version (``heron_migrations``) says of each
    schema: the number of its steps that version had made. Empty for a new database."""
    if not sa.inspect(conn).has_table(_legacy_versions.name):
        return {}
    made = conn.execute(sa.select(sa.func.max(_legacy_versions.c.version))).scalar()
    if made is None:
        return {}
    return {s.name: sum(1 for v in s.legacy if v <= made) for s in schemas if s.legacy}


def forget_nodes(conn: sa.Connection, schemas: Sequence[Schema], node_ids: Sequence[str]) -> None:
    """Delete every row that belongs to ``node_ids``, in the caller's transaction: the
    features' first (the last schema's first), the kernel's (the first schema) last."""
    for schema in reversed(schemas):
        for table in schema.per_node:
            conn.execute(table.delete().where(table.c.node_id.in_(list(node_ids))))


def add_column(conn: sa.Connection, table: str, column: str, sql_type: str) -> None:
    """``ALTER TABLE table ADD COLUMN column sql_type``, unless the column is there."""
    if column not in {c["name"] for c in sa.inspect(conn).get_columns(table)}:
        conn.execute(sa.text(f"ALTER TABLE {table} ADD COLUMN {column} {sql_type}"))
