"""``client.canvas`` and ``client.canvas.history`` through both clients, on a real daemon."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
from tests.support.daemon import Daemon

from heron import api
from heron.client import Dashboard, NotFoundError, UnprocessableEntityError

from ._both import MODES, On, on_client

FAIL = {"error": "the model is down", "status": 503}
TIME = {"name": "get-current-time", "arguments": {}}


@pytest.fixture(params=MODES)
async def on(request: pytest.FixtureRequest, daemon: Daemon) -> AsyncIterator[On]:
    async with on_client(request.param, daemon) as client:
        yield client


async def settled(on: On, node_id: str) -> api.OutcomePoll:
    while True:
        poll: api.OutcomePoll = await on(lambda c: c.nodes.outcome(node_id, wait=5))
        if poll.state == "settled":
            return poll


async def test_attention_snapshot_roster_and_dashboard(on: On, scripts: Any) -> None:
    failed = await on(lambda c: c.nodes.create(prompt="x", model=scripts("f", [FAIL])))
    waiting = await on(
        lambda c: c.nodes.create(
            prompt="y", model=scripts("w", ["answered"]), root_lifecycle="resident"
        )
    )
    done = await on(lambda c: c.nodes.create(prompt="z", model=scripts("d", ["fine"])))
    for node in (failed, waiting, done):
        await settled(on, node.node_id)
    ids = [failed.node_id, waiting.node_id, done.node_id]

    items = await on(lambda c: c.canvas.attention(node_ids=ids))
    assert all(isinstance(i, api.AttentionItem) for i in items)
    assert [(i.node_id, i.reason) for i in items] == [
        (failed.node_id, "failed"),
        (waiting.node_id, "waiting"),
    ]
    counts = await on(lambda c: c.canvas.attention_counts(node_ids=ids))
    assert isinstance(counts, api.AttentionCounts)
    assert counts.total == 2 and counts.by_reason["failed"] == 1
    assert await on(lambda c: c.canvas.attention(node_ids=ids, profile="elsewhere")) == []

    snap = await on(lambda c: c.canvas.snapshot())
    assert isinstance(snap, api.CanvasSnapshot)
    cards = {card.node_id: card for card in snap.nodes}
    assert cards[done.node_id].outcome_kind == "result"
    assert cards[failed.node_id].outcome_reason == "provider_error"
    assert snap.event_sequences[done.node_id] > 0

    roster = await on(lambda c: c.canvas.roster())
    assert waiting.node_id in {e.node_id for e in roster}
    assert done.node_id not in {e.node_id for e in roster}

    board = await on(lambda c: c.canvas.dashboard(recent_failures=1))
    assert isinstance(board, Dashboard)
    status = await on(lambda c: c.system.status())
    listed = await on(lambda c: c.nodes.list())
    assert board.total == len(listed) == sum(board.counts.values())
    assert {k: v for k, v in board.counts.items() if v} == status.nodes
    assert [n.node_id for n in board.recent_failures] == [failed.node_id]
    assert all(n.status == "running" for n in board.running)
    assert board.status.version == status.version


async def test_history_and_prune(on: On, scripts: Any) -> None:
    model = scripts("t", [{"text": "Checking the clock.", "tool_calls": [TIME]}, "Egrets at noon."])
    node = await on(lambda c: c.nodes.create(prompt="When do egrets feed?", model=model))
    await settled(on, node.node_id)
    ids = [node.node_id]

    page = await on(lambda c: c.canvas.history.read(node.node_id, limit=2))
    assert isinstance(page, api.HistoryPage)
    assert [m.role for m in page.messages] == ["user", "assistant"] and page.next_offset == 2
    assert page.messages[1].tool_calls[0].name == "get-current-time"
    rest = await on(lambda c: c.canvas.history.read(node.node_id, offset=2))
    assert [m.role for m in rest.messages] == ["tool", "assistant"] and rest.next_offset is None

    found = await on(lambda c: c.canvas.history.search("egrets", node_ids=ids))
    assert {h.index for h in found.hits} == {0, 3}
    grep = await on(lambda c: c.canvas.history.grep("EGRETS at", node_ids=ids, ignore_case=True))
    assert [(m.index, m.text) for m in grep.matches] == [(3, "Egrets at noon.")]
    stats = await on(
        lambda c: c.canvas.history.stats(node_ids=ids, since=datetime(2000, 1, 1, tzinfo=UTC))
    )
    assert stats.tool_calls_by_tool == {"get-current-time": 1} and stats.messages == 4

    with pytest.raises(UnprocessableEntityError) as bad:
        await on(lambda c: c.canvas.history.grep("(", node_ids=ids))
    assert bad.value.code == "invalid_pattern"
    with pytest.raises(NotFoundError):
        await on(lambda c: c.canvas.history.read("n-no-such-node"))

    dry = await on(lambda c: c.canvas.prune(node_ids=ids, dry_run=True))
    assert isinstance(dry, api.PruneResult) and dry.pruned == ids and dry.dry_run
    assert (await on(lambda c: c.nodes.retrieve(node.node_id))).node_id == node.node_id
    done = await on(lambda c: c.canvas.prune(node_ids=ids, statuses=["completed"]))
    assert done.pruned == ids and not done.dry_run
    with pytest.raises(NotFoundError):
        await on(lambda c: c.nodes.retrieve(node.node_id))


async def test_bad_arguments_are_refused_before_anything_is_sent(on: On) -> None:
    with pytest.raises(TypeError, match="invalid node id"):
        await on(lambda c: c.canvas.attention(node_ids=["bad id"]))
    with pytest.raises(TypeError, match="list of node ids"):
        await on(lambda c: c.canvas.prune(node_ids="n-1"))
    with pytest.raises(TypeError, match="invalid node id"):
        await on(lambda c: c.canvas.history.read("../etc"))
    with pytest.raises(ValueError, match="limit"):
        await on(lambda c: c.canvas.history.search("x", limit=0))
    with pytest.raises(ValueError, match="offset"):
        await on(lambda c: c.canvas.history.read("n-1", offset=-1))
    with pytest.raises(ValueError, match="aware"):
        await on(lambda c: c.canvas.history.stats(since=datetime(2020, 1, 1)))
    with pytest.raises(ValueError, match="recent_failures must be"):
        await on(lambda c: c.canvas.dashboard(recent_failures=0))
    with pytest.raises(UnprocessableEntityError) as bad:
        await on(lambda c: c.canvas.prune(older_than="soon"))
    assert bad.value.code == "invalid_request"
