"""The event log, hubs and replay framing in-process, on a real SQLite store."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.support.daemon import node_row

from heron.runtime.daemon import SCHEMAS
from heron.runtime.db._database import create_engine
from heron.runtime.db._handle import Database
from heron.runtime.events import EventStore
from heron.runtime.events._log import IDLE_HUBS, EventLog
from heron.runtime.events._replay import framed
from heron.runtime.events._stream import Subscription, encode
from heron.runtime.nodes._store import NodeStore


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[NodeStore]:
    database = Database(create_engine(f"sqlite:///{tmp_path / 'heron.db'}"))
    database.migrate(SCHEMAS)
    try:
        yield NodeStore(database)
    finally:
        database.close()


async def fresh_node(store: NodeStore, log: EventLog, node_id: str) -> None:
    await store.insert_node(node_row(node_id), None)
    log.fresh(node_id)


def gaps(frames: list[bytes]) -> list[int]:
    """The ``earliest_sequence`` of each ``stream_gap`` in ``frames``, or -n for record n."""
    out = []
    for frame in frames:
        text = frame.decode()
        if text.startswith("event: error"):
            data = json.loads(text.split("data: ", 1)[1])
            out.append(data["error"]["details"]["earliest_sequence"])
        else:
            out.append(-json.loads(text.split("data: ", 1)[1])["sequence_number"])
    return out


def test_a_gap_comes_right_before_each_hole() -> None:
    records = [encode("n", seq, "node.turn.started", {}) for seq in (2, 3, 7, 8, 20)]
    # Every number was an event: holes 4-6 and 9-19 are events missing (text deltas).
    assert gaps(framed(records, 1, 20)) == [-2, -3, 7, -7, -8, 20, -20]
    assert gaps(framed(records, 1, 23)) == [-2, -3, 7, -7, -8, 20, -20, 24]
    assert gaps(framed([], 5, 9)) == [10] and gaps(framed([], 9, 9)) == []


def test_a_reader_buffer_is_bounded_by_bytes_as_well_as_count() -> None:
    small = encode("n", 1, "node.output_text.delta", {"delta": "x"})
    big = encode("n", 2, "node.output_text.delta", {"delta": "x" * 5000})
    sub = Subscription(limit=100, max_bytes=4096)
    assert sub.offer(small) and not sub.dropped
    assert not sub.offer(big) and sub.dropped and not sub.buffer  # freed at once
    counted = Subscription(limit=2, max_bytes=1 << 20)
    assert counted.offer(small) and counted.offer(small) and not counted.offer(small)


async def test_hubs_stay_within_the_memory_budget_oldest_first(store: NodeStore) -> None:
    log = EventLog(store.db, memory=1_000_000)
    for n in range(6):
        node = f"n{n}"
        await fresh_node(store, log, node)
        log.publish(node, "node.status.changed", {"status": "running"})
        for _ in range(10):
            log.publish(node, "node.output_text.done", {"text": "t" * 10_000})
        await log.flush()  # (streamed once written)
    stats = log.stats()
    assert 0 < stats.hub_bytes <= 1_000_000
    # The most recently used hubs kept their retained events; the oldest gave theirs up.
    assert len(log.hub("n5").ring) == 11 and log.hub("n0").floor > 0
    # A dormant node nobody watches lets its hub go once there are too many idle ones.
    for n in range(IDLE_HUBS + 5):
        node = f"idle{n}"
        await fresh_node(store, log, node)
        log.publish(node, "node.status.changed", {"status": "dormant"})
    await log.flush()
    assert log.stats().hubs <= 6 + IDLE_HUBS
    await log.stop()


async def test_an_event_is_streamed_only_once_it_is_durable(store: NodeStore) -> None:
    logged_events = EventStore(store.db)
    log = EventLog(store.db)
    await fresh_node(store, log, "a")
    sub = log.hub("a").subscribe(100, 1 << 20)
    started = log.publish("a", "node.turn.started", {})
    delta = log.publish("a", "node.output_text.delta", {"delta": "x"})
    # Neither reached a reader: a crash now would take them back unseen.
    assert log.hub("a").last == 0 and not sub.take()
    await log.flush()
    assert [r.sequence_number for r in sub.take()] == [1, 2]
    assert [e["sequence_number"] for e in await logged_events.events("a")] == [
        started.sequence_number
    ]
    # The delta is not logged, but its number is: the next daemon continues above it.
    assert await logged_events.event_numbers("a") == (1, delta.sequence_number)
    await log.stop()


async def test_a_crash_reuses_only_numbers_no_reader_got(store: NodeStore) -> None:
    logged_events = EventStore(store.db)
    log = EventLog(store.db)
    await fresh_node(store, log, "a")
    log.publish("a", "node.turn.started", {})
    for _ in range(3):
        log.publish("a", "node.output_text.delta", {"delta": "x"})
    await log.flush()
    assert log.hub("a").last == 4
    unseen = [log.publish("a", "node.output_text.delta", {"delta": "y"}) for _ in range(2)]
    assert log.hub("a").last == 4  # the daemon "dies" before writing: nobody got 5 or 6
    reborn = EventLog(store.db)
    await reborn.prime("a")
    assert reborn.next_number("a") == 5 == unseen[0].sequence_number
    after = reborn.publish("a", "node.turn.completed", {})
    await reborn.stop()  # a clean stop writes (and streams) what is pending
    logged = [e["sequence_number"] for e in await logged_events.events("a")]
    assert logged == [1, after.sequence_number] and reborn.hub("a").last == 5
    third = EventLog(store.db)
    await third.prime("a")
    assert third.next_number("a") == 6  # a clean restart skips nothing


async def test_a_step_mark_counts_its_usage_once(store: NodeStore) -> None:
    logged_events = EventStore(store.db)
    log = EventLog(store.db)
    await fresh_node(store, log, "a")
    log.publish("a", "node.turn.started", {})
    await log.step_done("a", "1:2", usage=(100, 7))
    assert [e["type"] for e in await logged_events.events("a")] == ["node.turn.started"]
    assert log.hub("a").last == 1
    # The same step ending again (DBOS ran it again, not knowing it had ended): once.
    await log.step_done("a", "1:2", usage=(100, 7))
    await log.step_done("a", "1:3", usage=(50, 3))
    row = await store.node("a")
    assert row is not None and (row["turns"], row["input_tokens"], row["output_tokens"]) == (
        2,
        150,
        10,
    )
    assert await store.step_mark("a") == "1:3"
    await log.stop()


async def test_one_bad_event_row_does_not_lose_the_others(store: NodeStore) -> None:
    logged_events = EventStore(store.db)
    await store.insert_node(node_row("c"), None)
    batch = [
        ("c", 1, "node.turn.started", {}, 1.0),
        ("c", 2, "node.turn.completed", {"bad": object()}, 1.0),  # not JSON
        ("c", 3, "node.turn.started", {}, 1.0),
    ]
    await logged_events.append_events(batch)
    await logged_events.append_events([("c", 3, "node.turn.started", {}, 2.0)])  # number taken
    assert [e["sequence_number"] for e in await logged_events.events("c")] == [1, 3]
    await asyncio.sleep(0)
