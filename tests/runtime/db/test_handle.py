"""The one database object every store uses: its thread pool, transactions and reads."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from heron.runtime.daemon import SCHEMAS
from heron.runtime.db._database import create_engine
from heron.runtime.db._handle import Database
from heron.runtime.profiles._tables import profiles


@pytest.fixture
def database(tmp_path: Path) -> Iterator[Database]:
    made = Database(create_engine(f"sqlite:///{tmp_path / 'heron.db'}"))
    assert made.migrate(SCHEMAS) == {s.name: s.version for s in SCHEMAS}
    try:
        yield made
    finally:
        made.close()


def _insert(conn: sa.Connection, name: str) -> None:
    conn.execute(profiles.insert().values(name=name, settings={}, created_at=1.0, updated_at=1.0))


async def test_a_write_is_one_transaction_undone_if_it_raises(database: Database) -> None:
    def insert_then_fail(conn: sa.Connection) -> None:
        _insert(conn, "kept-not")
        raise RuntimeError("refused")

    with pytest.raises(RuntimeError):
        await database.write(insert_then_fail)
    await database.write(_insert, "kept")
    names = await database.all(sa.select(profiles.c.name).order_by(profiles.c.name))
    assert names == [{"name": "kept"}]


async def test_reads_answer_rows_as_mappings(database: Database) -> None:
    await database.write(_insert, "a")
    await database.write(_insert, "b")
    assert await database.first(sa.select(profiles).where(profiles.c.name == "b")) == {
        "name": "b",
        "description": None,
        "settings": {},
        "created_at": 1.0,
        "updated_at": 1.0,
    }
    assert await database.first(sa.select(profiles).where(profiles.c.name == "c")) is None
    assert await database.scalar(sa.select(sa.func.count()).select_from(profiles)) == 2


async def test_statements_run_off_the_event_loop_thread(database: Database) -> None:
    loop_thread = threading.get_ident()
    ran_on = await database.run(threading.get_ident)
    assert ran_on != loop_thread
    assert database.kind == "sqlite"
