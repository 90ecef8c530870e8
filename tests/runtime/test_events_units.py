"""The event log, hubs and replay framing in-process, on a real SQLite store."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from heron.runtime._db import create_engine
from heron.runtime._events import IDLE_HUBS, RESERVE_BLOCK, EventLog
from heron.runtime._routes_events import framed
from heron.runtime._store import Store
from heron.runtime._stream import Subscription, encode

from .conftest import node_row


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    store = Store(create_engine(f"sqlite:///{tmp_path / 'heron.db'}"))
    store.migrate()
    try:
        yield store
    finally:
        store.close()


async def fresh_node(store: Store, log: EventLog, node_id: str) -> None:
    await store.insert_node(node_row(node_id, events_reserved=RESERVE_BLOCK), None)
    log.fresh(node_id, RESERVE_BLOCK)


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


def test_a_gap_comes_right_before_each_hole_never_for_skipped_numbers() -> None:
    records = [encode("n", seq, "node.turn.started", {}) for seq in (2, 3, 7, 8, 20)]
    # Holes 4-6 and 9-19; the restart skipped 8-15, so only 16-19 of the second are missing.
    assert gaps(framed(records, 1, 20, None)) == [-2, -3, 7, -7, -8, 20, -20]
    assert gaps(framed(records, 1, 20, (8, 19))) == [-2, -3, 7, -7, -8, -20]
    assert gaps(framed(records, 1, 23, (8, 19))) == [-2, -3, 7, -7, -8, -20, 24]
    assert gaps(framed([], 5, 9, (5, 9))) == []


def test_a_reader_buffer_is_bounded_by_bytes_as_well_as_count() -> None:
    small = encode("n", 1, "node.output_text.delta", {"delta": "x"})
    big = encode("n", 2, "node.output_text.delta", {"delta": "x" * 5000})
    sub = Subscription(limit=100, max_bytes=4096)
    assert sub.offer(small) and not sub.dropped
    assert not sub.offer(big) and sub.dropped and not sub.buffer  # freed at once
    counted = Subscription(limit=2, max_bytes=1 << 20)
    assert counted.offer(small) and counted.offer(small) and not counted.offer(small)


async def test_hubs_stay_within_the_memory_budget_oldest_first(store: Store) -> None:
    log = EventLog(store, memory=1_000_000)
    for n in range(6):
        node = f"n{n}"
        await fresh_node(store, log, node)
        log.publish(node, "node.status.changed", {"status": "running"})
        for _ in range(10):
            log.publish(node, "node.output_text.done", {"text": "t" * 10_000})
    stats = log.stats()
    assert 0 < stats.hub_bytes <= 1_000_000
    # The most recently used hubs kept their retained events; the oldest gave theirs up.
    assert len(log.hub("n5").ring) == 11 and log.hub("n0").floor > 0
    # A dormant node nobody watches lets its hub go once there are too many idle ones.
    for n in range(IDLE_HUBS + 5):
        node = f"idle{n}"
        await fresh_node(store, log, node)
        log.publish(node, "node.status.changed", {"status": "dormant"})
    assert log.stats().hubs <= 6 + IDLE_HUBS
    await log.stop()


async def test_a_clean_stop_records_the_numbers_really_used(store: Store) -> None:
    log = EventLog(store)
    await fresh_node(store, log, "a")
    for _ in range(5):
        log.publish("a", "node.output_text.delta", {"delta": "x"})
    await log.stop()
    assert await store.event_numbers("a") == (0, 5)
    reborn = EventLog(store)
    await reborn.prime("a")
    assert reborn.next_number("a") == 6 and reborn.skipped("a") == (0, 5)
    await reborn.stop()  # it only read: the numbers skipped stay reserved
    assert await store.event_numbers("a") == (0, 5)


async def test_events_beyond_the_reservation_wait_for_it_without_blocking(store: Store) -> None:
    log = EventLog(store)
    await store.insert_node(node_row("b"), None)
    log.fresh("b")  # nothing reserved yet
    first = log.publish("b", "node.turn.started", {})
    assert log.hub("b").last == 0  # held back, not streamed before its number is reserved
    await log.prime("b")  # a writer's prime waits for the reservation
    assert log.hub("b").last == first.sequence_number
    assert (await store.event_numbers("b"))[1] >= RESERVE_BLOCK
    await log.stop()


async def test_one_bad_event_row_does_not_lose_the_others(store: Store) -> None:
    await store.insert_node(node_row("c"), None)
    batch = [
        ("c", 1, "node.turn.started", {}, 1.0),
        ("c", 2, "node.turn.completed", {"bad": object()}, 1.0),  # not JSON
        ("c", 3, "node.turn.started", {}, 1.0),
    ]
    await store.append_events(batch)
    await store.append_events([("c", 3, "node.turn.started", {}, 2.0)])  # number taken
    assert [e["sequence_number"] for e in await store.events("c")] == [1, 3]
    await asyncio.sleep(0)
