"""The daemon's store on a real SQLite database: transactions and their guarantees."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.exc import StatementError
from tests.support.daemon import node_row as row

from heron.runtime.daemon import SCHEMAS
from heron.runtime.db._database import create_engine, migrate
from heron.runtime.db._handle import Database
from heron.runtime.events import EventStore
from heron.runtime.nodes._store import DuplicateNode, NodeStore
from heron.runtime.reports._store import ReportStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[NodeStore]:
    engine = create_engine(f"sqlite:///{tmp_path / 'heron.db'}")
    database = Database(engine)
    database.migrate(SCHEMAS)
    try:
        yield NodeStore(database)
    finally:
        database.close()


def test_migrations_are_idempotent(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'm.db'}")
    latest = {schema.name: schema.version for schema in SCHEMAS}
    assert migrate(engine, SCHEMAS) == migrate(engine, SCHEMAS) == latest
    engine.dispose()


async def test_a_duplicate_node_id_is_refused_and_its_message_not_kept(store: NodeStore) -> None:
    await store.insert_node(row("a"), "first")
    with pytest.raises(DuplicateNode):
        await store.insert_node(row("a"), "second")
    assert await store.claim_messages("a", 1, step=1) == ["first"]


async def test_messages_are_claimed_once_in_order(store: NodeStore) -> None:
    await store.insert_node(row("a"), "one")
    await store.add_message("a", "two")
    assert await store.claim_messages("a", 1, step=1) == ["one", "two"]
    assert await store.claim_messages("a", 1, step=4) == []
    await store.add_message("a", "three")
    assert await store.claim_messages("a", 2, step=1) == ["three"]


async def test_a_message_and_the_extra_keys_sent_with_it_are_written_together(
    store: NodeStore,
) -> None:
    # Ending a wait and queueing its message are one transaction (_orchestration).
    await store.insert_node(row("a", extra={"waiting": {"token": "t"}, "kept": 1}), "first")
    await store.add_message("a", "the wait is over", extra={"waiting": None})
    node = await store.node("a")
    assert node is not None and node["extra"] == {"kept": 1}
    assert await store.claim_messages("a", 1, step=1) == ["first", "the wait is over"]
    # A write that fails takes the message with it: never one without the other.
    with pytest.raises(StatementError, match="not JSON serializable"):
        await store.add_message("a", "lost together", extra={"waiting": object()})
    assert await store.claim_messages("a", 2, step=1) == []
    node = await store.node("a")
    assert node is not None and node["extra"] == {"kept": 1}


async def test_queue_first_puts_a_message_ahead_of_the_unread_ones(store: NodeStore) -> None:
    await store.insert_node(row("a"), "read")
    assert await store.claim_messages("a", 1, step=1) == ["read"]
    await store.add_message("a", "stale one")
    await store.add_message("a", "stale two")
    await store.queue_first("a", "the prompt")
    assert await store.claim_messages("a", 2, step=1) == ["the prompt", "stale one", "stale two"]
    await store.queue_first("a", "alone")  # nothing unread: just the message
    assert await store.claim_messages("a", 3, step=1) == ["alone"]
    assert await store.claim_messages("a", 1, step=1) == ["read"]  # claimed ones untouched


async def test_a_claim_asked_again_by_the_same_step_returns_the_same_messages(
    store: NodeStore,
) -> None:
    # DBOS may run a step again after a crash (its result was not recorded yet).
    await store.insert_node(row("a"), "kickoff")
    assert await store.claim_messages("a", 1, step=1) == ["kickoff"]
    await store.add_message("a", "later")
    assert await store.claim_messages("a", 1, step=1) == ["kickoff"]
    assert await store.claim_messages("a", 1, step=3) == ["later"]


async def test_ending_a_run_with_unread_messages_continues_instead(store: NodeStore) -> None:
    await store.insert_node(row("a"), "go")
    await store.claim_messages("a", 1, step=1)
    await store.add_message("a", "late")
    outcome = {"kind": "result"}
    common: dict[str, Any] = {"status": "completed", "outcome": outcome}
    unread = await store.end_run(
        "a", 1, state={"s": 1}, continue_with_messages=True, step=5, **common
    )
    assert unread == ["late"]
    node = await store.node("a")
    assert node is not None and node["status"] == "running" and node["settled_at"] is None
    assert await store.outcome("a") is None
    record = {"key": [1, 9], "value": {"status": "completed"}}
    ended = await store.end_run(
        "a", 1, state={"s": 2}, continue_with_messages=True, step=9, record=record, **common
    )
    assert ended == []
    node = await store.node("a")
    assert node is not None and node["status"] == "completed" and node["state"] == {"s": 2}
    assert node["extra"]["ended"] == record  # what a re-run end step finds
    assert await store.outcome("a") == outcome


async def test_a_settled_outcome_never_changes(store: NodeStore) -> None:
    await store.insert_node(row("a"), None)
    assert await store.settle("a", {"kind": "result", "n": 1}, "completed") is True
    assert await store.settle("a", {"kind": "failure"}, "cancelled") is False
    assert await store.outcome("a") == {"kind": "result", "n": 1}
    node = await store.node("a")
    assert node is not None and node["status"] == "cancelled"


async def test_a_close_after_a_resident_answer_replaces_it_and_keeps_the_answer(
    store: NodeStore,
) -> None:
    await store.insert_node(row("a"), None)
    assert await store.settle("a", {"kind": "result", "n": 1}, "dormant") is True
    assert await store.settle("a", {"kind": "failure", "reason": "cancelled"}, "cancelled") is True
    assert await store.outcome("a") == {"kind": "failure", "reason": "cancelled"}
    node = await store.node("a")
    assert node is not None and node["status"] == "cancelled"
    kept = node["extra"]["previous_outcomes"]
    assert [entry["outcome"] for entry in kept] == [{"kind": "result", "n": 1}]
    assert kept[0]["status"] == "dormant"
    # Now settled for good: a later settlement changes nothing.
    assert await store.settle("a", {"kind": "failure", "reason": "x"}, "failed") is False


async def test_events_with_a_taken_number_do_not_block_the_others(store: NodeStore) -> None:
    logged_events = EventStore(store.db)
    await logged_events.append_events([("a", 1, "x", {}, 1.0)])
    await logged_events.append_events([("a", 1, "dup", {}, 2.0), ("a", 2, "y", {}, 2.0)])
    logged = [(e["sequence_number"], e["type"]) for e in await logged_events.events("a")]
    assert logged == [(1, "x"), (2, "y")]
    assert await logged_events.last_sequence("a") == 2
    assert await logged_events.last_sequence("b") == 0


async def test_counts_children_and_unsettled(store: NodeStore) -> None:
    await store.insert_node(row("p"), None)
    await store.insert_node(row("c", parent="p", root=False, status="dormant"), None)
    assert await store.children("p") == ["c"]
    assert await store.counts_by_status() == {"running": 1, "dormant": 1}
    await store.settle("c", {"kind": "failure"}, "cancelled")
    assert [r["node_id"] for r in await store.unsettled()] == ["p"]
    assert [r["node_id"] for r in await store.list_nodes(root=False)] == ["c"]
    assert [r["node_id"] for r in await store.list_nodes(status=["running"])] == ["p"]


def test_migrations_3_and_4_upgrade_an_older_database(tmp_path: Path) -> None:
    import sqlalchemy as sa

    engine = create_engine(f"sqlite:///{tmp_path / 'old.db'}")
    with engine.begin() as conn:  # the tables 3 and 4 change, as versions 1 and 2 left them
        conn.execute(sa.text("CREATE TABLE heron_nodes (node_id TEXT PRIMARY KEY)"))
        conn.execute(sa.text("CREATE TABLE heron_migrations (version INTEGER PRIMARY KEY)"))
        conn.execute(sa.text("INSERT INTO heron_migrations VALUES (1), (2)"))
        conn.execute(
            sa.text(
                "CREATE TABLE heron_messages (message_id INTEGER PRIMARY KEY, node_id TEXT,"
                " body TEXT, created_at FLOAT, claimed_run INTEGER)"
            )
        )
    try:
        assert migrate(engine, SCHEMAS) == {schema.name: schema.version for schema in SCHEMAS}
        columns = {c["name"] for c in sa.inspect(engine).get_columns("heron_messages")}
        assert "claimed_step" in columns
        columns = {c["name"] for c in sa.inspect(engine).get_columns("heron_nodes")}
        assert "events_reserved" in columns
        assert {"heron_reports", "heron_profiles"} <= set(sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()


async def test_reports_are_kept_and_listed_newest_first_by_tier(store: NodeStore) -> None:
    await store.insert_node(row("a"), None)
    reports = ReportStore(store.db)
    first = await reports.add_report("a", tier="progress", title=None, body="one", path=None)
    await reports.add_report("a", tier="final", title="Done", body="two", path="/tmp/r.md")
    assert first["report_id"] > 0 and first["body"] == "one"
    assert [r["body"] for r in await reports.reports("a")] == ["two", "one"]
    assert [r["body"] for r in await reports.reports("a", newest_first=False)] == ["one", "two"]
    assert [r["body"] for r in await reports.reports("a", limit=1)] == ["two"]
    assert [r["path"] for r in await reports.reports("a", tier="final")] == ["/tmp/r.md"]
    assert await reports.reports("b") == []
