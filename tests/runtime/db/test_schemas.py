"""Each package's tables as a versioned schema: a fresh database, an older one's upgrade,
a newer one refused, and a node's rows deleted across every schema."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import sqlalchemy as sa
from tests.support.daemon import node_row

from heron.runtime.crons._tables import cron_firings
from heron.runtime.daemon import SCHEMAS
from heron.runtime.db import NODES_SCHEMA, Database, Schema, events, messages, nodes, outcomes
from heron.runtime.db._database import create_engine, migrate
from heron.runtime.human._tables import human_requests
from heron.runtime.reports._tables import reports

LATEST = {schema.name: schema.version for schema in SCHEMAS}


def _engine(tmp_path: Path, name: str = "heron.db") -> sa.Engine:
    return create_engine(f"sqlite:///{tmp_path / name}")


def _recorded(engine: sa.Engine) -> dict[str, int]:
    with engine.connect() as conn:
        return {n: v for n, v in conn.execute(sa.text("SELECT name, version FROM heron_schema"))}


def test_the_daemon_migrates_the_kernel_first_and_every_feature_with_tables() -> None:
    names = [schema.name for schema in SCHEMAS]
    assert names[0] == "nodes" and SCHEMAS[0] is NODES_SCHEMA
    assert sorted(names[1:]) == ["crons", "human", "memory", "profiles", "reports"]


def test_a_fresh_database_records_each_schema_at_its_version(tmp_path: Path) -> None:
    engine = _engine(tmp_path)
    try:
        assert migrate(engine, SCHEMAS) == LATEST
        assert _recorded(engine) == LATEST
        tables = set(sa.inspect(engine).get_table_names())
        assert {"heron_nodes", "heron_reports", "heron_crons", "heron_memory_fts"} <= tables
    finally:
        engine.dispose()


def test_a_database_of_the_daemon_wide_numbering_carries_over_and_keeps_its_rows(
    tmp_path: Path,
) -> None:
    """A database the last release left (``heron_migrations`` at 10, every table made)
    runs no step again; a step one feature appends later runs on its own."""
    engine = _engine(tmp_path)
    try:
        migrate(engine, SCHEMAS)
        with engine.begin() as conn:
            conn.execute(sa.text("DROP TABLE heron_schema"))
            conn.execute(sa.text("CREATE TABLE heron_migrations (version INTEGER PRIMARY KEY)"))
            for version in range(1, 11):
                conn.execute(sa.text(f"INSERT INTO heron_migrations VALUES ({version})"))
            conn.execute(nodes.insert().values(**node_row("kept")))
        ran: list[str] = []

        def _v2(conn: sa.Connection) -> None:
            ran.append("crons v2")

        grown = [
            dataclasses.replace(s, steps=(*s.steps, _v2)) if s.name == "crons" else s
            for s in SCHEMAS
        ]
        assert migrate(engine, grown) == {**LATEST, "crons": LATEST["crons"] + 1}
        assert ran == ["crons v2"]
        assert _recorded(engine) == {**LATEST, "crons": LATEST["crons"] + 1}
        with engine.connect() as conn:
            assert conn.execute(sa.select(nodes.c.node_id)).scalars().all() == ["kept"]
        migrate(engine, grown)
        assert ran == ["crons v2"]  # once
    finally:
        engine.dispose()


def test_an_older_database_gets_the_steps_it_lacks(tmp_path: Path) -> None:
    """At daemon-wide version 3 (before reports and profiles existed), the kernel's later
    steps and every feature's run."""
    engine = _engine(tmp_path)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text("CREATE TABLE heron_migrations (version INTEGER PRIMARY KEY)"))
            conn.execute(sa.text("INSERT INTO heron_migrations VALUES (1), (2), (3)"))
            NODES_SCHEMA.steps[0](conn)  # the kernel's tables as they are now
        assert migrate(engine, SCHEMAS) == LATEST
        tables = set(sa.inspect(engine).get_table_names())
        assert {"heron_reports", "heron_profiles", "heron_human_requests"} <= tables
        indexes = {i["name"] for i in sa.inspect(engine).get_indexes("heron_reports")}
        assert "ix_heron_reports_call_key" in indexes
    finally:
        engine.dispose()


def test_a_schema_newer_than_this_heron_is_refused_by_name(tmp_path: Path) -> None:
    engine = _engine(tmp_path)
    try:
        migrate(engine, SCHEMAS)
        with engine.begin() as conn:
            conn.execute(sa.text("UPDATE heron_schema SET version = 99 WHERE name = 'human'"))
        with pytest.raises(RuntimeError, match=r"human tables \(version 99\) are newer"):
            migrate(engine, SCHEMAS)
    finally:
        engine.dispose()


def test_two_schemas_of_one_name_are_refused(tmp_path: Path) -> None:
    engine = _engine(tmp_path)
    try:
        with pytest.raises(ValueError, match="share a name"):
            migrate(engine, [NODES_SCHEMA, Schema("nodes", steps=())])
    finally:
        engine.dispose()


async def test_forgetting_nodes_deletes_their_rows_in_every_schema_and_nothing_else(
    tmp_path: Path,
) -> None:
    database = Database(_engine(tmp_path))
    try:
        database.migrate(SCHEMAS)

        def fill(conn: sa.Connection) -> None:
            for node_id in ("gone", "kept"):
                conn.execute(nodes.insert().values(**node_row(node_id)))
                conn.execute(outcomes.insert().values(node_id=node_id, outcome={}, settled_at=1.0))
                conn.execute(messages.insert().values(node_id=node_id, body="b", created_at=1))
                conn.execute(
                    events.insert().values(
                        node_id=node_id, sequence_number=1, type="t", data={}, created_at=1
                    )
                )
                conn.execute(
                    reports.insert().values(node_id=node_id, tier="final", body="r", created_at=1)
                )
                conn.execute(
                    human_requests.insert().values(
                        request_id=f"h-{node_id}",
                        node_id=node_id,
                        profile="default",
                        status="open",
                        title="t",
                        questions=[],
                        progress=[],
                        revision=1,
                        created_at=1,
                        updated_at=1,
                    )
                )
                conn.execute(
                    cron_firings.insert().values(
                        cron_id="c",
                        node_id=node_id,
                        manual=True,
                        fired_at=1,
                        status="created",
                    )
                )

        await database.write(fill)
        await database.write(database.forget_nodes, ["gone"])
        for table in (nodes, outcomes, messages, events, reports, human_requests):
            left = await database.all(sa.select(table.c.node_id))
            assert left == [{"node_id": "kept"}], table.name
        # A cron's firings are its history: they outlive the nodes they made.
        firings = await database.all(sa.select(cron_firings.c.node_id))
        assert sorted(row["node_id"] for row in firings) == ["gone", "kept"]
    finally:
        database.close()


def test_a_database_not_migrated_forgets_nothing(tmp_path: Path) -> None:
    database = Database(_engine(tmp_path))
    try:
        with database.engine.begin() as conn, pytest.raises(RuntimeError, match="not migrated"):
            database.forget_nodes(conn, ["any"])
    finally:
        database.close()
