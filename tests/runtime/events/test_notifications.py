"""The notifications a batch of logged events sends on PostgreSQL: each node's first and
last number and the writer, in payloads PostgreSQL accepts (under 8000 bytes)."""

from __future__ import annotations

import json

from heron.runtime.events._store import NOTIFY_BYTES, notifications


def rows(node_id: str, *numbers: int) -> list[dict[str, object]]:
    return [{"node_id": node_id, "sequence_number": n} for n in numbers]


def test_a_batch_names_each_node_with_its_first_and_last_number() -> None:
    batch = [*rows("n-a", 4, 5, 7), *rows("n-b", 1), *rows("n-a", 9)]
    [payload] = notifications("me", batch)
    assert json.loads(payload) == {"o": "me", "n": [["n-a", 4, 9], ["n-b", 1, 1]]}


def test_a_batch_of_many_nodes_takes_several_payloads_each_small_enough() -> None:
    long_ids = [f"n-{i:04d}-" + "x" * 110 for i in range(300)]  # ids may be 128 characters
    batch = [row for node_id in long_ids for row in rows(node_id, 1, 2)]
    payloads = list(notifications("origin", batch))
    assert len(payloads) > 1
    assert all(len(p.encode()) < NOTIFY_BYTES < 8000 for p in payloads)
    named = [item for p in payloads for item in json.loads(p)["n"]]
    assert named == [[node_id, 1, 2] for node_id in long_ids]
    assert {json.loads(p)["o"] for p in payloads} == {"origin"}


def test_nothing_written_sends_nothing() -> None:
    assert list(notifications("me", [])) == []
