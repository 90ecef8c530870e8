"""``client.human.requests`` and ``client.human.inbox`` through both clients against a real
daemon: a node asks, the client answers, the node finishes; refusals and local id checks."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from tests.support.daemon import Daemon
from tests.support.polling import eventually_async

from heron import api
from heron.client import (
    AsyncHeron,
    ConflictError,
    Heron,
    NotFoundError,
    UnprocessableEntityError,
)

from ._both import MODES, On, on_client


@pytest.fixture(params=MODES)
async def on(request: pytest.FixtureRequest, daemon: Daemon) -> AsyncIterator[On]:
    async with on_client(request.param, daemon) as client:
        yield client


ASK = {
    "tool_calls": [
        {
            "name": "ask-questions",
            "arguments": {
                "questions": [
                    {"question": "Which colour?", "choices": ["red", "blue"]},
                    {"question": "Why?"},
                ]
            },
        }
    ]
}


async def test_a_node_asks_and_the_client_answers_through_the_inbox(on: On, scripts: Any) -> None:
    model = scripts("ask", [ASK, "Painting it red."])
    node = await on(lambda c: c.nodes.create(prompt="paint", scopes=["ask"], model=model))
    tickets = await eventually_async(
        lambda: on(lambda c: c.human.inbox.list(node_id=node.node_id)),
        lambda found: len(found) == 1,
        interval=0.02,
    )
    (ticket,) = tickets
    assert isinstance(ticket, api.InboxTicket) and ticket.node is not None
    assert ticket.node.prompt == "paint" and ticket.title == "Which colour? (+1 more)"
    same = await on(lambda c: c.human.requests.retrieve(ticket.ticket_id))
    assert same.request_id == ticket.ticket_id and same.status == "open"
    await on(lambda c: c.human.inbox.progress(ticket.ticket_id, "thinking", percent=10, by=on.mode))
    answered = await on(
        lambda c: c.human.inbox.respond(
            ticket.ticket_id,
            answers=["Red", api.HumanAnswerInput(text="warm")],  # a string spelling a choice
            responded_by=on.mode,
        )
    )
    assert answered.status == "answered" and answered.progress[0].note == "thinking"
    outcome = await on(lambda c: c.nodes.wait_for_outcome(node.node_id, timeout=30))
    assert isinstance(outcome, api.NodeResult) and outcome.output_text == "Painting it red."
    response = await on(lambda c: c.human.inbox.response(ticket.ticket_id))
    assert response.responded_by == on.mode
    assert [a.choices for a in response.answers or []] == [["red"], []]
    history = await on(lambda c: c.human.inbox.history(node_id=node.node_id))
    assert [t.ticket_id for t in history] == [ticket.ticket_id]
    with pytest.raises(ConflictError) as refused:
        await on(lambda c: c.human.requests.respond(ticket.ticket_id, text="again"))
    assert refused.value.code == "request_not_open"


async def test_requests_for_nobody_replace_dismiss_and_cancel(on: On) -> None:
    requests = lambda c: c.human.requests  # noqa: E731 - one short alias per client
    created = await on(
        lambda c: requests(c).create(
            "Pick a name", questions=[{"question": "Name?", "choices": ["a", "b"]}]
        )
    )
    assert created.node_id is None and created.revision == 1
    replaced = await on(
        lambda c: requests(c).replace(
            created.request_id,
            title="Pick a name, please",
            questions=[api.HumanQuestionInput(question="Which name?", choices=["x", "y"])],
            revision=1,
        )
    )
    assert replaced.revision == 2 and replaced.questions[0].question == "Which name?"
    with pytest.raises(ConflictError) as stale:
        await on(
            lambda c: requests(c).replace(
                created.request_id, title="t", questions=[], body="b", revision=1
            )
        )
    assert stale.value.code == "revision_conflict"
    with pytest.raises(UnprocessableEntityError) as wrong:
        await on(lambda c: requests(c).respond(created.request_id, answers=[{"choices": ["a"]}]))
    assert wrong.value.code == "invalid_response"
    with pytest.raises(ConflictError) as moved:
        await on(lambda c: requests(c).respond(created.request_id, answers=["x"], revision=1))
    assert moved.value.code == "revision_conflict"
    with pytest.raises(TypeError, match="one answer per question"):
        await on(lambda c: requests(c).respond(created.request_id, answers="x"))
    with pytest.raises(ConflictError) as none:
        await on(lambda c: c.human.inbox.response(created.request_id))
    assert none.value.code == "no_response"
    dismissed = await on(lambda c: requests(c).dismiss(created.request_id, reason="later"))
    assert dismissed.status == "dismissed" and dismissed.reason == "later"
    other = await on(lambda c: requests(c).create("Other", body="Read this."))
    cancelled = await on(lambda c: c.human.inbox.cancel(other.request_id))
    assert cancelled.status == "cancelled" and cancelled.node is None
    with pytest.raises(NotFoundError) as missing:
        await on(lambda c: requests(c).retrieve("hr_0000000000000000"))
    assert missing.value.code == "request_not_found"


BAD_IDS = ["", "bad id", "../x", 7, None]

CALLS_WITH_AN_ID: list[Callable[[Any, Any], Any]] = [
    lambda c, bad: c.human.requests.retrieve(bad),
    lambda c, bad: c.human.requests.replace(bad, title="t", questions=[]),
    lambda c, bad: c.human.requests.respond(bad, text="x"),
    lambda c, bad: c.human.requests.dismiss(bad),
    lambda c, bad: c.human.requests.cancel(bad),
    lambda c, bad: c.human.requests.create("t", body="b", node_id=bad or "x y"),
    lambda c, bad: c.human.inbox.retrieve(bad),
    lambda c, bad: c.human.inbox.respond(bad, text="x"),
    lambda c, bad: c.human.inbox.progress(bad, "n"),
    lambda c, bad: c.human.inbox.cancel(bad),
    lambda c, bad: c.human.inbox.response(bad),
    lambda c, bad: c.human.inbox.list(node_id=bad or "x y"),
    lambda c, bad: c.human.inbox.history(profile=bad or "x y"),
]
"""Every method taking an identifier, called with ``bad`` in its place."""


@pytest.mark.parametrize("mode", MODES)
async def test_an_invalid_id_is_a_type_error_and_nothing_is_sent(mode: str, tmp_path: Path) -> None:
    # Nothing listens there and the client may not start a daemon: any request
    # would fail to connect, so a TypeError proves none was sent.
    silent = tmp_path / "nobody.sock"
    kwargs: dict[str, Any] = {"socket_path": silent, "home": tmp_path, "auto_start": False}
    if mode == "sync":
        with Heron(**kwargs) as sync:
            for call in CALLS_WITH_AN_ID:
                for bad in BAD_IDS:
                    with pytest.raises(TypeError, match="invalid"):
                        call(sync, bad)
    else:
        async with AsyncHeron(**kwargs) as client:
            for call in CALLS_WITH_AN_ID:
                for bad in BAD_IDS:
                    with pytest.raises(TypeError, match="invalid"):
                        await call(client, bad)


def test_bad_arguments_are_refused_locally(tmp_path: Path) -> None:
    kwargs: dict[str, Any] = {"socket_path": tmp_path / "x.sock", "auto_start": False}
    with Heron(**kwargs) as sync:
        with pytest.raises(ValueError, match="answers"):
            sync.human.inbox.respond("hr_1")
        with pytest.raises(ValueError, match="limit"):
            sync.human.inbox.list(limit=0)
        # A replacement names the questions it keeps: leaving them out would delete them.
        with pytest.raises(TypeError, match="questions"):
            sync.human.requests.replace("hr_1", title="t")  # type: ignore[call-arg]
