"""The daemon on PostgreSQL: a real server (``pg.Cluster``) and real daemon processes.

DBOS keeps its tables in the ``dbos`` schema of the same database; Heron's own
tables live in the default schema. Each test that needs a clean slate gets its
own database on the module's one server.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Awaitable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
import sqlalchemy as sa
from tests.support import pg
from tests.support.daemon import Daemon, node_row, wait_settled, wait_status, write_script
from tests.support.polling import eventually, eventually_async

from heron.runtime.daemon import SCHEMAS
from heron.runtime.db._database import (
    NUL_MARK,
    DatabaseUnavailable,
    create_engine,
    migrate,
    redact_url,
)
from heron.runtime.db._handle import Database
from heron.runtime.events import EventStore, Settlement, StepMark
from heron.runtime.nodes._store import NodeStore

T = TypeVar("T")

ALL_VERSIONS = sorted((schema.name, schema.version) for schema in SCHEMAS)
"""Every schema's name and version, as a fully migrated database records them."""

SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "integer"}},
    "required": ["answer"],
    "additionalProperties": False,
}


@pytest.fixture
def client(pg_client: httpx.Client) -> httpx.Client:
    """This module's ``client`` is on the PostgreSQL daemon (``plugin.pg_daemon``)."""
    return pg_client


def rows(cluster: pg.Cluster, database: str, query: str, *params: Any) -> list[tuple[Any, ...]]:
    """Run ``query`` on ``database`` as the superuser; its rows."""
    with cluster.connect(database) as conn:
        return list(conn.execute(query, params).fetchall())


def test_status_names_postgresql_without_the_password(
    client: httpx.Client, cluster: pg.Cluster, pg_daemon: Daemon
) -> None:
    status = client.get("/v1/status").json()
    assert status["database"].startswith("postgresql (postgresql+psycopg://heron:***@/heron_shared")
    assert cluster.password not in status["database"]
    assert cluster.password not in pg_daemon.log.read_text()


def test_tables_live_in_their_schemas(client: httpx.Client, cluster: pg.Cluster) -> None:
    found = rows(
        cluster,
        "heron_shared",
        "SELECT table_schema, table_name FROM information_schema.tables"
        " WHERE table_schema IN ('public', 'dbos')",
    )
    public = {name for schema, name in found if schema == "public"}
    dbos = {name for schema, name in found if schema == "dbos"}
    assert {"heron_nodes", "heron_outcomes", "heron_messages", "heron_events"} <= public
    assert "heron_schema" in public
    assert "workflow_status" in dbos and "operation_outputs" in dbos
    assert not {name for name in public if not name.startswith("heron_")}
    versions = rows(cluster, "heron_shared", "SELECT name, version FROM heron_schema ORDER BY 1")
    assert versions == ALL_VERSIONS


def test_column_types_are_native(client: httpx.Client, cluster: pg.Cluster) -> None:
    types = dict(
        rows(
            cluster,
            "heron_shared",
            "SELECT column_name, data_type FROM information_schema.columns"
            " WHERE table_name = 'heron_nodes'",
        )
    )
    assert types["root"] == "boolean"
    assert types["created_at"] == "double precision"  # sub-second timestamps survive
    assert types["scopes"] == "json"
    assert types["input_tokens"] == types["output_tokens"] == "bigint"


def test_a_node_settles_and_its_row_round_trips(
    client: httpx.Client, cluster: pg.Cluster, scripts: Any
) -> None:
    model = scripts("plain", ["Plain answer."])
    created = client.post(
        "/v1/nodes",
        json={"prompt": "Say something.", "model": model, "scopes": ["ask", "act"], "name": "n1"},
    )
    assert created.status_code == 201, created.text
    node_id = created.json()["node_id"]
    poll = wait_settled(client, node_id)
    assert poll["node_status"] == "completed"
    assert poll["outcome"]["kind"] == "result"
    assert poll["outcome"]["output_text"] == "Plain answer."
    node = client.get(f"/v1/nodes/{node_id}").json()
    assert node["root"] is True and node["pin_cwd"] is False
    assert node["scopes"] == ["ask", "act"]
    assert node["turns"] == 1
    assert node["settled_at"] >= node["created_at"]
    listed = client.get("/v1/nodes", params={"status": "completed", "root": "true"}).json()
    assert node_id in [n["node_id"] for n in listed]
    assert node_id not in [n["node_id"] for n in client.get("/v1/nodes?root=false").json()]
    # The SQL row holds SQL values, not strings of them.
    [(root, scopes, created_at)] = rows(
        cluster,
        "heron_shared",
        "SELECT root, scopes, created_at FROM heron_nodes WHERE node_id = %s",
        node_id,
    )
    assert root is True and scopes == ["ask", "act"] and isinstance(created_at, float)


def test_a_structured_result_is_checked_then_accepted(client: httpx.Client, scripts: Any) -> None:
    model = scripts(
        "structured",
        [
            {"tool_calls": [{"name": "submit-result", "arguments": {"result": {"answer": "x"}}}]},
            {"tool_calls": [{"name": "submit-result", "arguments": {"result": {"answer": 42}}}]},
            "Submitted.",
        ],
    )
    created = client.post(
        "/v1/nodes", json={"prompt": "Answer.", "model": model, "output_schema": SCHEMA}
    )
    assert created.status_code == 201, created.text
    poll = wait_settled(client, created.json()["node_id"])
    assert poll["node_status"] == "completed"
    assert poll["outcome"]["kind"] == "result"
    assert poll["outcome"]["structured_result"] == {"answer": 42}


def test_a_resident_node_wakes_for_a_message(
    client: httpx.Client, cluster: pg.Cluster, scripts: Any
) -> None:
    model = scripts("resident", ["First reply.", "Second reply."])
    created = client.post(
        "/v1/nodes",
        json={"prompt": "Start.", "model": model, "root_lifecycle": "resident"},
    )
    node_id = created.json()["node_id"]
    wait_status(client, node_id, "dormant")
    sent = client.post(f"/v1/nodes/{node_id}/messages", json={"body": "Again, please."})
    assert sent.status_code == 202, sent.text
    node = eventually(
        lambda: client.get(f"/v1/nodes/{node_id}").json(),
        lambda node: node["status"] == "dormant" and node["turns"] == 2,
        interval=0.02,
        what="the node answering the message",
    )
    assert node["runs"] == 2
    claimed = rows(
        cluster,
        "heron_shared",
        "SELECT body, claimed_run FROM heron_messages WHERE node_id = %s ORDER BY message_id",
        node_id,
    )
    assert claimed == [("Start.", 1), ("Again, please.", 2)]


def test_text_with_nul_characters_round_trips(client: httpx.Client, scripts: Any) -> None:
    # PostgreSQL's text type cannot hold U+0000; JSON escapes it, so nothing is refused or lost.
    model = scripts("nul", ["Reply with \u0000 inside."])
    created = client.post(
        "/v1/nodes",
        json={
            "prompt": "Has \u0000 a NUL.",
            "model": model,
            "name": "nul\u0000name",
            "situational_context": "ctx\u0000",
            "root_lifecycle": "resident",
        },
    )
    assert created.status_code == 201, created.text
    node_id = created.json()["node_id"]
    assert created.json()["name"] == "nul\u0000name"
    wait_status(client, node_id, "dormant")
    node = client.get(f"/v1/nodes/{node_id}").json()
    assert node["prompt"] == "Has \u0000 a NUL." and node["name"] == "nul\u0000name"
    poll = client.get(f"/v1/nodes/{node_id}/outcome").json()
    assert poll["outcome"]["output_text"] == "Reply with \u0000 inside."
    sent = client.post(f"/v1/nodes/{node_id}/messages", json={"body": "more \u0000"})
    assert sent.status_code == 202, sent.text


@pytest.fixture
def store_db(
    cluster: pg.Cluster, request: pytest.FixtureRequest
) -> Iterator[tuple[NodeStore, str]]:
    """A migrated :class:`NodeStore` on a fresh database of its own, and that database's name."""
    name = f"heron_{request.node.name.lower()}"[:63]
    database = Database(create_engine(cluster.create_database(name)), threads=8)
    database.migrate(SCHEMAS)
    try:
        yield NodeStore(database), name
    finally:
        database.close()


@pytest.fixture(params=["postgresql", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[NodeStore]:
    """A migrated :class:`NodeStore` on each backend: the dialect fixes must not change SQLite."""
    if request.param == "postgresql":
        yield request.getfixturevalue("store_db")[0]
        return
    database = Database(create_engine(f"sqlite:///{tmp_path / 'heron.db'}"))
    database.migrate(SCHEMAS)
    try:
        yield NodeStore(database)
    finally:
        database.close()


async def race_behind_lock(
    cluster: pg.Cluster, database: str, table: str, racers: list[Awaitable[T]]
) -> list[T]:
    """Start ``racers`` while ``table`` refuses writes; once all wait, let them go at once.

    Reads pass the lock, so every racer has read what it reads before any of
    them writes: the worst interleaving, every time.
    """
    with cluster.connect(database) as holder, holder.transaction():
        holder.execute(f"LOCK TABLE {table} IN EXCLUSIVE MODE")
        tasks = [asyncio.ensure_future(racer) for racer in racers]

        def waiting() -> int:
            [(count,)] = rows(
                cluster,
                database,
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE datname = %s AND wait_event_type = 'Lock'",
                database,
            )
            return int(count)

        await asyncio.sleep(0.01)  # let the racers start before the first look
        await eventually_async(
            waiting,
            lambda count: count >= len(tasks),
            interval=0.01,
            what="every racer reaching the lock",
        )
    return await asyncio.gather(*tasks)


async def test_racing_settlements_settle_once(
    store_db: tuple[NodeStore, str], cluster: pg.Cluster
) -> None:
    store, database = store_db
    await store.insert_node(node_row("racer"), None)
    outcomes = [{"kind": "failure", "reason": "cancelled", "n": i} for i in range(6)]
    won = await race_behind_lock(
        cluster,
        database,
        "heron_outcomes",
        [store.settle("racer", outcome, "cancelled") for outcome in outcomes],
    )
    assert won.count(True) == 1
    assert await store.outcome("racer") == outcomes[won.index(True)]


async def test_racing_claims_take_each_message_once(
    store_db: tuple[NodeStore, str], cluster: pg.Cluster
) -> None:
    store, database = store_db
    await store.insert_node(node_row("inbox"), None)
    bodies = [f"m{i}" for i in range(20)]
    for body in bodies:
        await store.add_message("inbox", body)
    claims = await race_behind_lock(
        cluster,
        database,
        "heron_messages",
        [store.claim_messages("inbox", run) for run in range(6)],
    )
    assert sorted(b for claim in claims for b in claim) == sorted(bodies)
    assert [c for c in claims if c] == [bodies]  # one claimer took them all, in order


async def test_message_ids_are_the_inserted_keys(store: NodeStore) -> None:
    await store.insert_node(node_row("keys"), None)
    first = await store.add_message("keys", "a")
    second = await store.add_message("keys", "b")
    assert second == first + 1


async def test_token_counts_pass_two_to_the_31(store: NodeStore) -> None:
    await store.insert_node(node_row("chatty"), None)
    for _ in range(2):
        await store.add_usage("chatty", turns=1, input_tokens=1_500_000_000, output_tokens=7)
    node = await store.node("chatty")
    assert node is not None
    assert (node["turns"], node["input_tokens"], node["output_tokens"]) == (2, 3_000_000_000, 14)


def test_version_2_widens_the_token_counts_of_a_version_1_database(cluster: pg.Cluster) -> None:
    engine = create_engine(cluster.create_database("heron_v1"))
    try:
        with engine.begin() as conn:  # a database as the first release left it
            conn.execute(sa.text("CREATE TABLE heron_migrations (version INTEGER PRIMARY KEY)"))
            _v1_tables(conn)
            conn.execute(sa.text("INSERT INTO heron_migrations VALUES (1)"))
        assert migrate(engine, SCHEMAS) == dict(ALL_VERSIONS)
    finally:
        engine.dispose()
    types = dict(
        rows(
            cluster,
            "heron_v1",
            "SELECT column_name, data_type FROM information_schema.columns"
            " WHERE table_name = 'heron_nodes'"
            " AND column_name IN ('input_tokens', 'output_tokens')",
        )
    )
    assert types == {"input_tokens": "bigint", "output_tokens": "bigint"}


def _v1_tables(conn: sa.Connection) -> None:
    """Version 1's tables, with its 32-bit token counts."""
    from heron.runtime.db import _database as _db

    _db.metadata.create_all(conn)
    conn.execute(
        sa.text(
            "ALTER TABLE heron_nodes ALTER COLUMN input_tokens TYPE INTEGER,"
            " ALTER COLUMN output_tokens TYPE INTEGER"
        )
    )


async def test_settling_twice_keeps_the_first_outcome(store: NodeStore) -> None:
    await store.insert_node(node_row("once"), None)
    assert await store.settle("once", {"kind": "failure", "reason": "cancelled"}, "cancelled")
    assert not await store.settle("once", {"kind": "failure", "reason": "crashed"}, "failed")
    assert await store.outcome("once") == {"kind": "failure", "reason": "cancelled"}


async def test_a_node_alive_with_an_answer_takes_the_new_outcome(store: NodeStore) -> None:
    await store.insert_node(node_row("resident-pg", root_lifecycle="resident"), None)
    first = {"kind": "result", "output_text": "one"}
    assert await store.settle("resident-pg", first, "dormant")  # answered, lives on
    second = {"kind": "result", "output_text": "two"}
    assert await store.settle("resident-pg", second, "dormant")
    assert await store.outcome("resident-pg") == second
    closed = {"kind": "failure", "reason": "cancelled"}
    assert await store.settle("resident-pg", closed, "cancelled")
    assert await store.outcome("resident-pg") == closed
    row = await store.node("resident-pg")
    assert row is not None
    (kept,) = row["extra"]["previous_outcomes"]  # the answer a failure replaced
    assert (kept["outcome"], kept["status"]) == (second, "dormant")
    assert not await store.settle("resident-pg", first, "completed")  # settled for good


async def test_unsettle_archives_the_outcome_and_the_node_settles_again(store: NodeStore) -> None:
    await store.insert_node(node_row("again", extra={"keep": 1}), None)
    assert await store.unsettle("again", status="dormant") is None  # nothing settled yet
    first = {"kind": "failure", "reason": "provider_error"}
    assert await store.settle("again", first, "failed")
    assert await store.unsettle("again", status="dormant", extra={"note": "x"}) == first
    node = await store.node("again")
    assert node is not None and node["status"] == "dormant" and node["settled_at"] is None
    assert await store.outcome("again") is None
    assert (node["extra"]["keep"], node["extra"]["note"]) == (1, "x")
    (archived,) = node["extra"]["previous_outcomes"]
    assert (archived["outcome"], archived["status"]) == (first, "failed")
    second = {"kind": "result", "output_text": "done"}
    assert await store.settle("again", second, "completed")
    assert await store.unsettle("again", status="dormant") == second
    node = await store.node("again")
    assert node is not None
    assert [p["outcome"] for p in node["extra"]["previous_outcomes"]] == [first, second]


async def test_claims_come_in_order_and_only_once(store: NodeStore) -> None:
    await store.insert_node(node_row("ordered"), "first")
    for body in ("second", "third"):
        await store.add_message("ordered", body)
    assert await store.claim_messages("ordered", 1) == ["first", "second", "third"]
    assert await store.claim_messages("ordered", 2) == []


async def test_text_keeps_nul_and_the_marker(store: NodeStore) -> None:
    row = node_row("texts")
    row |= {"name": "a\x00b", "prompt": NUL_MARK + "plain", "description": "plain"}
    await store.insert_node(row, "body\x00")
    node = await store.node("texts")
    assert node is not None
    assert (node["name"], node["prompt"], node["description"]) == (
        "a\x00b",
        NUL_MARK + "plain",
        "plain",
    )
    assert await store.claim_messages("texts", 1) == ["body\x00"]


async def test_a_reused_node_id_is_a_duplicate(store: NodeStore) -> None:
    from heron.runtime.nodes._store import DuplicateNode

    await store.insert_node(node_row("twice"), "hello")
    with pytest.raises(DuplicateNode):
        await store.insert_node(node_row("twice"), "again")
    assert await store.claim_messages("twice", 1) == ["hello"]


@pytest.mark.slow
def test_two_daemons_migrate_one_empty_database_at_once(
    cluster: pg.Cluster, tmp_path: Path
) -> None:
    url = cluster.create_database("heron_race")
    model = write_script(tmp_path, "race", ["Raced."])
    env = {"HERON_DATABASE_URL": url, "HERON_PROVIDER": model}
    daemons = [Daemon(tmp_path / f"home{i}", env) for i in range(2)]
    errors: list[BaseException] = []

    def start(daemon: Daemon) -> None:
        try:
            daemon.start()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start, args=(d,)) for d in daemons]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors, errors
        for daemon in daemons:
            with daemon.client() as c:
                created = c.post("/v1/nodes", json={"prompt": "Go."})
                assert created.status_code == 201, created.text
                assert wait_settled(c, created.json()["node_id"])["node_status"] == "completed"
    finally:
        for daemon in daemons:
            daemon.stop()
    versions = rows(cluster, "heron_race", "SELECT name, version FROM heron_schema ORDER BY 1")
    assert versions == ALL_VERSIONS


def submissions(delay: float) -> list[Any]:
    """An invalid submission, then (after ``delay`` seconds) a valid one."""
    return [
        {"tool_calls": [{"name": "submit-result", "arguments": {"result": {"answer": "x"}}}]},
        {
            "delay": delay,
            "tool_calls": [{"name": "submit-result", "arguments": {"result": {"answer": 1}}}],
        },
    ]


@pytest.mark.slow
def test_a_killed_daemon_resumes_its_run_on_postgresql(cluster: pg.Cluster, tmp_path: Path) -> None:
    url = cluster.create_database("heron_restart")
    model = write_script(tmp_path, "restart", submissions(delay=60))
    daemon = Daemon(tmp_path / "home", {"HERON_DATABASE_URL": url, "HERON_PROVIDER": model})
    daemon.start()

    def count(type: str) -> int:
        query = "SELECT count(*) FROM heron_events WHERE node_id = %s AND type = %s"
        return int(rows(cluster, "heron_restart", query, node_id, type)[0][0])

    try:
        with daemon.client() as c:
            created = c.post("/v1/nodes", json={"prompt": "Answer.", "output_schema": SCHEMA})
            node_id = created.json()["node_id"]
        # The second, 60 s long turn is under way.
        eventually(lambda: count("node.turn.started") >= 2, interval=0.02)

        daemon.kill()
        # The resumed second turn need not wait again: it answers at once.
        write_script(tmp_path, "restart", submissions(delay=0))
        daemon.start()
        with daemon.client() as c:
            poll = wait_settled(c, node_id)
            node = c.get(f"/v1/nodes/{node_id}").json()
    finally:
        daemon.stop()
    assert poll["outcome"]["structured_result"] == {"answer": 1}
    # The first turn and its tool call finished before the kill and were not
    # repeated; only the turn the kill cut short was asked again.
    assert count("node.turn.started") == 3
    assert count("node.turn.completed") == 2
    assert count("node.tool_call.started") == 2
    assert (node["turns"], node["runs"]) == (2, 1)


def test_a_missing_database_is_created_even_by_two_at_once(cluster: pg.Cluster) -> None:
    engines = [create_engine(cluster.url("heron_created")) for _ in range(2)]
    barrier = threading.Barrier(len(engines))

    def start(engine: sa.Engine) -> dict[str, int]:
        barrier.wait()  # both find it missing, both try to create it, both migrate
        return migrate(engine, SCHEMAS)

    try:
        with ThreadPoolExecutor(len(engines)) as pool:
            assert list(pool.map(start, engines)) == [dict(ALL_VERSIONS)] * 2
    finally:
        for engine in engines:
            engine.dispose()
    versions = rows(cluster, "heron_created", "SELECT name, version FROM heron_schema ORDER BY 1")
    assert versions == ALL_VERSIONS


def test_a_wrong_password_is_reported_without_the_password(cluster: pg.Cluster) -> None:
    engine = create_engine(cluster.url("heron_shared").replace(cluster.password, "wrong-secret"))
    try:
        with pytest.raises(DatabaseUnavailable, match="password authentication failed") as caught:
            migrate(engine, SCHEMAS)
    finally:
        engine.dispose()
    assert "wrong-secret" not in str(caught.value)
    assert "postgresql+psycopg://heron:***@/heron_shared" in str(caught.value)


def test_an_unreachable_server_is_named_without_the_password(tmp_path: Path) -> None:
    # No cluster needed: nothing listens in an empty directory.
    engine = create_engine(f"postgresql+psycopg://heron:hunter2-secret@/heron?host={tmp_path}")
    try:
        with pytest.raises(DatabaseUnavailable, match="cannot connect to") as caught:
            migrate(engine, SCHEMAS)
    finally:
        engine.dispose()
    assert "hunter2-secret" not in str(caught.value)
    assert "No such file or directory" in str(caught.value)


def test_passwords_in_the_query_are_redacted_too() -> None:
    shown = redact_url(
        "postgresql+psycopg://heron:one-secret@db.example/heron"
        "?password=two-secret&sslpassword=three-secret&sslmode=require"
    )
    assert not {"one-secret", "two-secret", "three-secret"} & set(re.split(r"[:@?&=]", shown))
    assert "sslmode=require" in shown and shown.startswith("postgresql+psycopg://heron:***@")


async def test_a_step_mark_counts_a_turn_once(store: NodeStore) -> None:
    logged_events = EventStore(store.db)
    await store.insert_node(node_row("marked"), None)
    turn = StepMark(key="1:2", usage=(100, 7))
    rows = [("marked", 1, "node.turn.started", {}, 1.0)]
    await logged_events.append_events(rows, marks={"marked": turn})
    await logged_events.append_events([], marks={"marked": turn})  # the step ended again: once
    await logged_events.append_events([], marks={"marked": StepMark(key="1:4", usage=(5, 1))})
    row = await store.node("marked")
    assert row is not None and (row["turns"], row["input_tokens"], row["output_tokens"]) == (
        2,
        105,
        8,
    )
    assert await store.step_mark("marked") == "1:4"


async def test_event_numbers_are_reserved_ahead_and_never_lowered(store: NodeStore) -> None:
    logged_events = EventStore(store.db)
    await store.insert_node(node_row("numbered"), None)
    assert await logged_events.event_numbers("numbered") == (0, 0)
    await logged_events.append_events([], reserve={"numbered": 2048})
    # An older, smaller reservation landing late never lowers it.
    await logged_events.append_events(
        [("numbered", 5, "x", {}, 1.0), ("numbered", 7, "y", {}, 1.0)], reserve={"numbered": 1024}
    )
    assert await logged_events.event_numbers("numbered") == (7, 2048)
    logged = await logged_events.events("numbered", after=5, upto=7)
    assert [e["sequence_number"] for e in logged] == [7]


async def test_an_idle_settlement_is_written_with_its_events(store: NodeStore) -> None:
    logged_events = EventStore(store.db)
    await store.insert_node(node_row("idle", status="dormant"), None)
    outcome = {"kind": "failure", "reason": "cancelled"}
    said = [
        ("idle", 1, "node.status.changed", {"status": "cancelled"}, 1.0),
        ("idle", 2, "node.settled", {"outcome": outcome}, 1.0),
    ]
    settles = {"idle": Settlement(outcome=outcome, status="cancelled")}
    await logged_events.append_events(said, settles=settles)
    row = await store.node("idle")
    assert row is not None and row["status"] == "cancelled" and row["settled_at"] is not None
    assert await store.outcome("idle") == outcome
    assert [e["type"] for e in await logged_events.events("idle")] == [
        "node.status.changed",
        "node.settled",
    ]
