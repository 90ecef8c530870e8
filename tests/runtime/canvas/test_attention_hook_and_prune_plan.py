"""The canvas's attention hook and prune plan over a real store (no daemon)."""

from __future__ import annotations

import time
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from tests.support.daemon import node_row

from heron import api
from heron.runtime.canvas._service import Canvas, asking_from
from heron.runtime.canvas._store import CanvasStore
from heron.runtime.daemon import SCHEMAS
from heron.runtime.db._database import create_engine
from heron.runtime.db._handle import Database
from heron.runtime.nodes._store import NodeStore
from heron.runtime.server._durations import parse_duration


@dataclass(frozen=True)
class Request:
    """What the human helper's ``api.HumanRequest`` holds of what the canvas reads."""

    request_id: str
    node_id: str | None
    profile: str | None
    title: str
    created_at: datetime


@pytest.fixture
def store(tmp_path: Path) -> Iterator[NodeStore]:
    engine = create_engine(f"sqlite:///{tmp_path / 'heron.db'}")
    database = Database(engine)
    database.migrate(SCHEMAS)
    try:
        yield NodeStore(database)
    finally:
        database.close()


def canvas_over(store: NodeStore) -> Canvas:
    """A canvas over a real store (attention reads nothing else of the engine)."""
    return Canvas(SimpleNamespace(store=store, db=store.db))  # type: ignore[arg-type]


async def test_open_requests_come_first_as_asking(store: NodeStore) -> None:
    await store.insert_node(node_row("n-fail", status="dormant"), None)
    await store.settle("n-fail", {"kind": "failure", "reason": "crashed"}, "failed")
    await store.insert_node(node_row("n-ask", status="dormant", profile="app"), None)
    asked: list[Collection[str] | None] = []
    early = datetime(2026, 1, 1, tzinfo=UTC)

    async def open_requests(node_ids: Collection[str] | None) -> list[Request]:
        asked.append(node_ids)
        return [
            Request("hr_2", "n-ask", "app", "Which   branch\nshould I use?", early.replace(day=2)),
            Request("hr_1", None, None, "Approve the budget", early),
        ]

    canvas = canvas_over(store)
    canvas.attention_sources.append(asking_from(open_requests))
    items = await canvas.attention()
    assert [(i.reason, i.node_id, i.request_id) for i in items] == [
        ("asking", None, "hr_1"),  # the older request first
        ("asking", "n-ask", "hr_2"),
        ("failed", "n-fail", None),
    ]
    assert items[1].summary == "Which branch should I use?" and items[1].profile == "app"
    assert items[0].profile == "default" and items[0].since == early
    assert asked == [None]

    only = await canvas.attention(node_ids=["n-ask"])
    assert [i.request_id for i in only] == ["hr_2"] and asked[-1] == ["n-ask"]
    assert [i.node_id for i in await canvas.attention(profile="app")] == ["n-ask"]
    counts = await canvas.counts(api.AttentionCountsRequest())
    assert counts.by_reason["asking"] == 2 and counts.total == 3
    assert counts.by_node == {"": {"asking": 1}, "n-ask": {"asking": 1}, "n-fail": {"failed": 1}}


async def test_a_failing_source_hides_nothing_else(
    store: NodeStore, caplog: pytest.LogCaptureFixture
) -> None:
    await store.insert_node(node_row("n-int", status="interrupted"), None)

    async def broken(node_ids: Collection[str] | None) -> list[api.AttentionItem]:
        raise RuntimeError("the inbox is down")

    canvas = canvas_over(store)
    canvas.attention_sources.append(broken)
    items = await canvas.attention()
    assert [(i.reason, i.node_id) for i in items] == [("interrupted", "n-int")]
    assert "an attention source failed" in caplog.text


async def test_the_prune_plan_takes_subtrees_and_skips_what_it_must(store: NodeStore) -> None:
    old = time.time() - 3600

    async def add(node_id: str, status: str, **extra: Any) -> None:
        await store.insert_node(node_row(node_id, status=status, **extra), None)
        if status in ("completed", "failed", "cancelled"):
            await store.settle(node_id, {"kind": "result"}, status)
            await store.update_node(node_id, settled_at=old)

    await add("top", "completed")
    await add("mid", "completed", parent="top", root=False)
    await add("leaf", "failed", parent="mid", root=False)
    await add("busy", "completed")
    await add("busy-kid", "running", parent="busy", root=False)
    await add("home", "cancelled", root_lifecycle="resident")
    plan = await CanvasStore(store.db).prune(
        node_ids=None,
        statuses={"completed", "failed", "cancelled"},
        settled_before=time.time(),
        dry_run=True,
    )
    assert sorted(plan.pruned) == ["leaf", "mid", "top"]
    assert sorted(plan.skipped) == [("busy", "live_descendant"), ("home", "resident_root")]
    # A node whose run is still winding down here counts as live.
    busy = await CanvasStore(store.db).prune(
        node_ids=["mid"], statuses={"completed"}, settled_before=None, dry_run=True, busy={"leaf"}
    )
    assert busy.pruned == [] and busy.skipped == [("mid", "live_descendant")]
    # Named, a node outside the filters still goes with a named node above it.
    named = await CanvasStore(store.db).prune(
        node_ids=["leaf", "top", "home"],
        statuses={"completed"},
        settled_before=None,
        dry_run=False,
    )
    assert sorted(named.pruned) == ["leaf", "mid", "top"]
    assert named.skipped == [("home", "not_matching")]  # cancelled, not completed
    assert [r["node_id"] for r in await store.list_nodes()] == ["busy", "busy-kid", "home"]


def test_durations_take_days() -> None:
    assert parse_duration("7d") == 7 * 86400
    assert parse_duration("1d12h") == 36 * 3600
    with pytest.raises(ValueError, match="at most a year"):
        parse_duration("400d")
