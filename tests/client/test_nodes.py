"""``client.nodes`` create / retrieve / list / outcome / wait / message / interrupt / cancel,
through both clients against a real daemon."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.daemon import SLOW, Daemon, rewrite

from heron import api
from heron.client import (
    APIUserAbortError,
    AsyncHeron,
    ConflictError,
    Heron,
    NodeList,
    NotFoundError,
    UnprocessableEntityError,
)

from ._both import MODES, On, cancel_after, on_client


@pytest.fixture(params=MODES)
async def on(request: pytest.FixtureRequest, daemon: Daemon) -> AsyncIterator[On]:
    async with on_client(request.param, daemon) as client:
        yield client


async def test_list_pages_with_limit_and_next_cursor(on: On, scripts: Any) -> None:
    model = scripts("paged", ["ok"])
    for _ in range(3):
        await on(lambda c: c.nodes.create(prompt="p", model=model, no_kickoff=True))
    everything = await on(lambda c: c.nodes.list())
    assert isinstance(everything, list) and everything.next_cursor is None
    seen: list[api.Node] = []
    page = await on(lambda c: c.nodes.list(limit=2))
    while True:
        assert isinstance(page, NodeList) and 1 <= len(page) <= 2
        seen += page
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
        page = await on(lambda c, cursor=cursor: c.nodes.list(limit=2, after=cursor))
    assert [n.node_id for n in seen] == [n.node_id for n in everything]
    with pytest.raises(ValueError, match="limit must be a whole number from 1 to 1000"):
        await on(lambda c: c.nodes.list(limit=0))


async def test_create_retrieve_and_list(on: On, scripts: Any) -> None:
    model = scripts("hello", ["Hello there."])
    node = await on(lambda c: c.nodes.create(prompt="hi", model=model, name="greeter"))
    assert isinstance(node, api.Node)
    assert node.name == "greeter" and node.root is True and node.model == model
    again = await on(lambda c: c.nodes.retrieve(node.node_id))
    assert again.node_id == node.node_id and again.prompt == "hi"
    every = await on(lambda c: c.nodes.list())
    assert node.node_id in [n.node_id for n in every]
    roots = await on(lambda c: c.nodes.list(root=True))
    assert node.node_id in [n.node_id for n in roots]
    assert node.node_id not in [n.node_id for n in await on(lambda c: c.nodes.list(root=False))]
    outcome = await on(lambda c: c.nodes.wait_for_outcome(node.node_id))
    assert isinstance(outcome, api.NodeResult) and outcome.output_text == "Hello there."
    done = await on(lambda c: c.nodes.list(status="completed"))
    assert node.node_id in [n.node_id for n in done]
    both = await on(lambda c: c.nodes.list(status=["running", "completed"]))
    assert node.node_id in [n.node_id for n in both]
    running = await on(lambda c: c.nodes.list(status=["running"]))
    assert node.node_id not in [n.node_id for n in running]


async def test_create_takes_a_mapping_or_a_request_model_and_keywords_win(
    on: On, scripts: Any
) -> None:
    model = scripts("params", ["ok"])
    params = {"prompt": "from the mapping", "model": model, "name": "mapped"}
    node = await on(lambda c: c.nodes.create(params, name="keyword"))
    assert node.prompt == "from the mapping" and node.name == "keyword"
    request = api.NodeCreateRequest(prompt="from the model", model=model, no_kickoff=True)
    node = await on(lambda c: c.nodes.create(request))
    assert node.prompt == "from the model" and node.status == "dormant"
    with pytest.raises(TypeError, match=r"mapping or api\.NodeCreateRequest"):
        await on(lambda c: c.nodes.create(["prompt"]))


async def test_a_duplicate_node_id_is_a_conflict(on: On, scripts: Any) -> None:
    node_id = f"fixed-{on.mode}"
    model = scripts("dup", ["ok"])
    await on(lambda c: c.nodes.create(prompt="one", model=model, node_id=node_id))
    with pytest.raises(ConflictError) as caught:
        await on(lambda c: c.nodes.create(prompt="two", model=model, node_id=node_id))
    assert caught.value.code == "node_id_exists" and caught.value.status == 409


async def test_a_body_the_daemon_refuses_is_a_422(on: On) -> None:
    with pytest.raises(UnprocessableEntityError) as caught:
        await on(lambda c: c.nodes.create(prompt="x", deadline="soon"))
    assert caught.value.code == "invalid_request"
    with pytest.raises(NotFoundError) as missing:
        await on(lambda c: c.nodes.retrieve("no-such-node"))
    assert missing.value.code == "node_not_found"


async def test_outcome_polls_once_and_wait_for_outcome_settles(on: On, scripts: Any) -> None:
    model = scripts("slow", [{"text": "done", "delay": 1}])
    node = await on(lambda c: c.nodes.create(prompt="x", model=model))
    poll = await on(lambda c: c.nodes.outcome(node.node_id))
    assert poll.state == "pending" and poll.outcome is None and poll.node_status == "running"
    outcome = await on(lambda c: c.nodes.wait_for_outcome(node.node_id, timeout=30))
    assert outcome.kind == "result" and outcome.output_text == "done"
    poll = await on(lambda c: c.nodes.outcome(node.node_id, wait=25))
    assert poll.state == "settled" and poll.outcome == outcome
    unbounded = await on(lambda c: c.nodes.wait_for_outcome(node.node_id, timeout=math.inf))
    assert unbounded == outcome


@pytest.mark.parametrize("wait", [-1, 26, 1.5, True, "5", None])
async def test_outcome_wait_outside_0_to_25_is_refused_locally(on: On, wait: Any) -> None:
    with pytest.raises(ValueError, match="wait must be a whole number of seconds from 0 to 25"):
        await on(lambda c: c.nodes.outcome("any-node", wait=wait))


async def test_wait_for_outcome_gives_up_at_its_timeout_and_the_node_keeps_running(
    on: On, scripts: Any
) -> None:
    node = await on(lambda c: c.nodes.create(prompt="x", model=scripts("held", [SLOW])))
    with pytest.raises(TimeoutError, match="keeps running"):
        await on(lambda c: c.nodes.wait_for_outcome(node.node_id, timeout=1.5))
    assert (await on(lambda c: c.nodes.retrieve(node.node_id))).status == "running"
    closed = await on(lambda c: c.nodes.cancel(node.node_id, reason="test over"))
    assert closed.status == "cancelled"
    outcome = await on(lambda c: c.nodes.wait_for_outcome(node.node_id))
    assert isinstance(outcome, api.NodeFailure)
    assert outcome.reason == "cancelled" and outcome.detail is not None
    assert "test over" in outcome.detail.message
    with pytest.raises(ValueError, match="timeout"):
        await on(lambda c: c.nodes.wait_for_outcome(node.node_id, timeout=0))


async def test_a_cancel_stops_the_wait_not_the_node(on: On, scripts: Any) -> None:
    node = await on(lambda c: c.nodes.create(prompt="x", model=scripts("held", [SLOW])))
    with cancel_after(0.5) as options, pytest.raises(APIUserAbortError):
        await on(lambda c: c.nodes.wait_for_outcome(node.node_id, options=options))
    assert (await on(lambda c: c.nodes.retrieve(node.node_id))).status == "running"
    await on(lambda c: c.nodes.cancel(node.node_id))


async def test_create_and_wait(on: On, scripts: Any) -> None:
    model = scripts("cw", ["all done"])
    outcome = await on(lambda c: c.nodes.create_and_wait(prompt="x", model=model, timeout=30))
    assert isinstance(outcome, api.NodeResult) and outcome.output_text == "all done"
    params = {"prompt": "y", "model": model}
    outcome = await on(lambda c: c.nodes.create_and_wait(params))
    assert outcome.kind == "result"


async def test_message_wakes_a_dormant_node_and_queues_for_a_running_one(
    on: On, scripts: Any
) -> None:
    model = scripts("chat", ["first", "second"])
    node = await on(lambda c: c.nodes.create(prompt="one", model=model, root_lifecycle="resident"))
    await on(lambda c: c.nodes.wait_for_outcome(node.node_id, timeout=30))
    sent = await on(lambda c: c.nodes.message(node.node_id, "two"))
    assert isinstance(sent, api.MessageAccepted)
    assert sent.node_id == node.node_id and sent.delivery == "woke"
    held = await on(lambda c: c.nodes.create(prompt="x", model=scripts("held", [SLOW])))
    queued = await on(lambda c: c.nodes.message(held.node_id, "later"))
    assert queued.delivery == "queued" and queued.message_id > sent.message_id
    await on(lambda c: c.nodes.cancel(held.node_id))


async def test_interrupt_keeps_the_node_and_revive_runs_it_again(on: On, scripts: Any) -> None:
    model = scripts("held-then-done", [SLOW])
    node = await on(lambda c: c.nodes.create(prompt="x", model=model))
    stopped = await on(lambda c: c.nodes.interrupt(node.node_id))
    assert stopped.status == "interrupted"
    rewrite(model, ["revived answer"])  # the interrupted turn left no answer behind
    revived = await on(lambda c: c.nodes.revive(node.node_id, message="carry on"))
    assert revived.status == "running" and revived.runs == 2
    outcome = await on(lambda c: c.nodes.wait_for_outcome(node.node_id, timeout=30))
    assert outcome.kind == "result" and outcome.output_text == "revived answer"
    with pytest.raises(ConflictError) as caught:
        await on(lambda c: c.nodes.revive(node.node_id))
    assert caught.value.code == "node_settled"


async def test_fork_copies_the_conversation_to_a_new_node(on: On, scripts: Any) -> None:
    model = scripts("forked", ["original answer", "fork answer"])
    node = await on(lambda c: c.nodes.create(prompt="x", model=model))
    await on(lambda c: c.nodes.wait_for_outcome(node.node_id, timeout=30))
    fork_id = f"fork-of-{node.node_id}"
    fork = await on(
        lambda c: c.nodes.fork(node.node_id, prompt="and then?", new_node_id=fork_id, name="f")
    )
    assert fork.node_id == fork_id and fork.forked_from == node.node_id and fork.name == "f"
    outcome = await on(lambda c: c.nodes.wait_for_outcome(fork_id, timeout=30))
    assert outcome.kind == "result" and outcome.output_text == "fork answer"
    dormant = await on(lambda c: c.nodes.fork(node.node_id))
    assert dormant.status == "dormant" and dormant.forked_from == node.node_id
    from_model = await on(
        lambda c: c.nodes.fork(node.node_id, api.ForkRequest(name="modelled", no_kickoff=True))
    )
    assert from_model.name == "modelled"
    with pytest.raises(ConflictError) as caught:
        await on(lambda c: c.nodes.fork(node.node_id, {"new_node_id": fork_id}))
    assert caught.value.code == "node_id_exists"
    with pytest.raises(TypeError, match="invalid new node id"):
        await on(lambda c: c.nodes.fork(node.node_id, new_node_id="-bad"))
    with pytest.raises(TypeError, match="the fork's id twice"):
        await on(lambda c: c.nodes.fork(node.node_id, {"node_id": "a1", "new_node_id": "b1"}))


BAD_IDS: list[Any] = ["", "-leading-dash", "has space", "a/b", "../up", "x" * 129, 42]
"""Identifiers the daemon would refuse: each must fail locally."""

CALLS_WITH_AN_ID: list[Any] = [
    lambda c, bad: c.nodes.retrieve(bad),
    lambda c, bad: c.nodes.outcome(bad),
    lambda c, bad: c.nodes.wait_for_outcome(bad),
    lambda c, bad: c.nodes.message(bad, "hi"),
    lambda c, bad: c.nodes.interrupt(bad),
    lambda c, bad: c.nodes.cancel(bad),
    lambda c, bad: c.nodes.update(bad, name="x"),
    lambda c, bad: c.nodes.fork(bad),
    lambda c, bad: c.nodes.fork("ok", new_node_id=bad),
    lambda c, bad: c.nodes.revive(bad),
    lambda c, bad: c.nodes.promote(bad),
    lambda c, bad: c.nodes.demote(bad),
    lambda c, bad: c.nodes.recycle(bad),
    lambda c, bad: c.nodes.relaunch_root(bad),
    lambda c, bad: c.nodes.yield_(bad),
    lambda c, bad: c.nodes.wait(bad, ["child"]),
    lambda c, bad: c.nodes.wait("ok", [bad]),
    lambda c, bad: c.nodes.create(prompt="x", node_id=bad),
    lambda c, bad: c.nodes.create(prompt="x", parent=bad),
    lambda c, bad: c.nodes.create_and_wait(prompt="x", fork_from=bad),
    lambda c, bad: c.nodes.parse(prompt="x", output_schema={}, creator=bad),
    lambda c, bad: c.nodes.reports.list(bad),
    lambda c, bad: c.nodes.jobs.list(bad),
    lambda c, bad: c.nodes.jobs.cancel(bad, "bash-1"),
    lambda c, bad: c.nodes.jobs.cancel("ok", bad),
    lambda c, bad: c.nodes.worktree.close(bad),
    lambda c, bad: c.nodes.worktree.abandon(bad),
    lambda c, bad: c.nodes.result.submit(bad, {}),
    lambda c, bad: c.profiles.ensure(bad),
    lambda c, bad: c.profiles.retrieve(bad),
]
"""Every method taking an identifier, called with ``bad`` in one id's place."""


@pytest.mark.parametrize("mode", MODES)
async def test_an_invalid_id_is_a_type_error_and_nothing_is_sent(mode: str, tmp_path: Path) -> None:
    # No socket exists there and the client may not start a daemon: any request
    # would be a connection error, so a TypeError proves none was sent. (Not
    # demonstrated with a real refused connect: httpcore leaks that socket, which
    # the warnings-are-errors config would fail on.)
    silent = tmp_path / "nobody.sock"
    assert not silent.exists()
    if mode == "sync":
        with Heron(socket_path=silent, home=tmp_path, auto_start=False) as sync:
            for call in CALLS_WITH_AN_ID:
                for bad in BAD_IDS:
                    with pytest.raises(TypeError, match="invalid"):
                        call(sync, bad)
    else:
        async with AsyncHeron(socket_path=silent, home=tmp_path, auto_start=False) as client:
            for call in CALLS_WITH_AN_ID:
                for bad in BAD_IDS:
                    with pytest.raises(TypeError, match="invalid"):
                        await call(client, bad)
