"""A prune racing a revive on SQLite: its checks and its deletes see one database."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from sqlalchemy import event
from tests.support.daemon import node_row

from heron.runtime.canvas._service import Canvas
from heron.runtime.canvas._store import CanvasStore
from heron.runtime.daemon import SCHEMAS
from heron.runtime.db._database import create_engine
from heron.runtime.db._handle import Database
from heron.runtime.nodes._store import NodeStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[NodeStore]:
    database = Database(create_engine(f"sqlite:///{tmp_path / 'heron.db'}"))
    database.migrate(SCHEMAS)
    try:
        yield NodeStore(database)
    finally:
        database.close()


async def test_a_node_revived_while_the_prune_waits_is_kept(
    store: NodeStore, tmp_path: Path
) -> None:
    await store.insert_node(node_row("n-1", status="dormant"), None)
    await store.settle("n-1", {"kind": "result"}, "completed")

    # Another writer (a message reviving the node) holds SQLite's write lock.
    other = sqlite3.connect(tmp_path / "heron.db", isolation_level=None, timeout=30)
    other.execute("BEGIN IMMEDIATE")
    other.execute("UPDATE heron_nodes SET status = 'running', settled_at = NULL")
    other.execute("DELETE FROM heron_outcomes")

    writing = threading.Event()

    def seen(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.lstrip().upper().startswith(("UPDATE", "DELETE", "INSERT")):
            writing.set()  # the prune's first write: it waits for the lock from here

    event.listen(store.db.engine, "before_cursor_execute", seen)
    pruning = asyncio.ensure_future(
        CanvasStore(store.db).prune(
            node_ids=["n-1"],
            statuses={"completed", "failed", "cancelled"},
            settled_before=None,
            dry_run=False,
        )
    )
    assert await asyncio.to_thread(writing.wait, 30)
    other.execute("COMMIT")
    other.close()
    plan = await pruning
    assert plan.pruned == [] and plan.skipped == [("n-1", "live")]
    assert (await store.node("n-1")) is not None


async def test_the_snapshot_reads_one_moment_of_the_database(
    store: NodeStore, tmp_path: Path
) -> None:
    await store.insert_node(node_row("n-2", status="running"), None)
    settled: list[bool] = []

    def settle_meanwhile(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        # Right after the cards are read, the node settles (another writer commits).
        cards = "FROM heron_nodes" in statement and "heron_nodes.status IN" not in statement
        if cards and not settled:
            settled.append(True)
            other = sqlite3.connect(tmp_path / "heron.db", isolation_level=None, timeout=30)
            other.execute("BEGIN IMMEDIATE")
            other.execute("UPDATE heron_nodes SET status = 'failed', settled_at = 1")
            other.execute(
                "INSERT INTO heron_outcomes (node_id, outcome, settled_at)"
                """ VALUES ('n-2', '{"kind": "failure", "reason": "crashed"}', 1)"""
            )
            other.execute("COMMIT")
            other.close()

    events = SimpleNamespace(last_number=lambda node_id: 0)
    canvas = Canvas(SimpleNamespace(store=store, db=store.db, active={}, events=events))  # type: ignore[arg-type]
    event.listen(store.db.engine, "after_cursor_execute", settle_meanwhile)
    snap = await canvas.snapshot()
    (card,) = snap.nodes
    # The card and its outcome come from the same moment: running, no outcome yet.
    assert (card.status, card.outcome_kind) == ("running", None)
