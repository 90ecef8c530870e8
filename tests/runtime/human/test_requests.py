"""Human requests and the inbox against a real daemon: a node asks, sleeps, and wakes with
the answer; the routes' answers and every refusal's code."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.daemon import Daemon, create, wait_settled, wait_status, write_script
from tests.support.human import (
    ANSWERS,
    QUESTIONS,
    ask,
    asking_node,
    open_tickets,
    the_ticket,
    wait_request,
)
from tests.support.polling import eventually

from heron import api


def conversation(daemon: Daemon, node_id: str) -> list[dict[str, Any]]:
    """The node's saved conversation (what the model is sent), message by message."""
    with sqlite3.connect(daemon.home / "heron.db") as db:
        (state,) = db.execute(
            "SELECT state FROM heron_nodes WHERE node_id = ?", (node_id,)
        ).fetchone()
    messages: list[dict[str, Any]] = json.loads(state)["messages"]
    return messages


def human_events(daemon: Daemon, node_id: str) -> list[tuple[str, dict[str, Any]]]:
    """The node's logged human-request events: their type and request."""
    with sqlite3.connect(daemon.home / "heron.db") as db:
        found = db.execute(
            "SELECT type, data FROM heron_events WHERE node_id = ? AND type LIKE ? "
            "ORDER BY sequence_number",
            (node_id, "node.human_request.%"),
        ).fetchall()
    return [(kind, json.loads(data)["request"]) for kind, data in found]


def texts(message: dict[str, Any]) -> str:
    return json.dumps(message)


def error_code(response: httpx.Response) -> tuple[int, str]:
    return response.status_code, response.json()["error"]["code"]


class TestAsking:
    def test_a_node_asks_sleeps_and_wakes_with_the_answers(
        self, client: httpx.Client, scripts: Any, daemon: Daemon
    ) -> None:
        node_id = asking_node(client, scripts, "ask-answer", "Merged main, squashed.")
        ticket = the_ticket(client, node_id)
        request_id = ticket["request_id"]
        assert request_id.startswith("hr_") and ticket["ticket_id"] == request_id
        assert ticket["title"] == "Before I merge" and ticket["status"] == "open"
        assert [q["question"] for q in ticket["questions"]] == [
            "Which branch?",
            QUESTIONS[1]["question"],
        ]
        assert ticket["questions"][0]["choices"] == ["main", "dev"]
        assert ticket["node"] == {
            "node_id": node_id,
            "name": None,
            "kind": "general",
            "status": "dormant",
            "prompt": "merge it",
        }
        assert ticket["profile"] == "default" and ticket["revision"] == 1
        # The tool told the model which request it filed.
        assert request_id in texts(conversation(daemon, node_id)[-1])
        assert client.get(f"/v1/nodes/{node_id}/outcome").json()["state"] == "pending"

        answered = client.post(f"/v1/human/requests/{request_id}/respond", json=ANSWERS)
        assert answered.status_code == 200, answered.text
        body = answered.json()
        assert body["status"] == "answered" and body["resolved_at"] is not None
        assert body["response"]["answers"] == [
            {"question": "Which branch?", "choices": ["main"], "text": None},
            {"question": "Anything else to know?", "choices": [], "text": "Squash the commits."},
        ]
        poll = wait_settled(client, node_id)
        assert poll["outcome"]["output_text"] == "Merged main, squashed."
        # The model's input for its last turn held every question with its answer.
        messages = conversation(daemon, node_id)
        answer = texts(messages[-2])
        assert messages[-2]["role"] == "user"
        for said in ("ada answered", request_id, "Which branch?", "main", "Squash the commits."):
            assert said in answer
        assert open_tickets(client, node_id) == []
        history = client.get("/v1/human/inbox/history", params={"node_id": node_id}).json()
        assert [t["ticket_id"] for t in history] == [request_id]
        response = client.get(f"/v1/human/inbox/{request_id}/response")
        assert response.status_code == 200
        assert response.json()["responded_by"] == "ada"

    def test_responding_twice_is_refused_and_changes_nothing(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        node_id = asking_node(client, scripts, "ask-twice", "ok")
        request_id = the_ticket(client, node_id)["request_id"]
        first = client.post(f"/v1/human/inbox/{request_id}/respond", json=ANSWERS)
        assert first.status_code == 200 and first.json()["status"] == "answered"
        again = {"answers": [{"choices": ["dev"]}, {"text": "no"}]}
        second = client.post(f"/v1/human/requests/{request_id}/respond", json=again)
        assert error_code(second) == (409, "request_not_open")
        assert second.json()["error"]["details"] == {"status": "answered"}
        kept = client.get(f"/v1/human/requests/{request_id}").json()
        assert kept["response"]["answers"][0]["choices"] == ["main"]
        wait_settled(client, node_id)

    def test_a_dismissal_wakes_the_node_saying_why(
        self, client: httpx.Client, scripts: Any, daemon: Daemon
    ) -> None:
        node_id = asking_node(client, scripts, "ask-dismiss", "Fine, I stop here.")
        request_id = the_ticket(client, node_id)["request_id"]
        dismissed = client.post(
            f"/v1/human/requests/{request_id}/dismiss", json={"reason": "not my call"}
        )
        assert dismissed.status_code == 200
        assert dismissed.json()["status"] == "dismissed"
        assert dismissed.json()["reason"] == "not my call"
        assert wait_settled(client, node_id)["outcome"]["output_text"] == "Fine, I stop here."
        told = texts(conversation(daemon, node_id)[-2])
        assert "dismissed" in told and "not my call" in told
        response = client.get(f"/v1/human/inbox/{request_id}/response")
        assert error_code(response) == (409, "no_response")
        # The node's stream told of the request, filed then resolved.
        logged = eventually(lambda: human_events(daemon, node_id), lambda got: len(got) >= 2)
        assert [(kind, request["status"]) for kind, request in logged] == [
            ("node.human_request.filed", "open"),
            ("node.human_request.resolved", "dismissed"),
        ]
        assert {request["request_id"] for _, request in logged} == {request_id}

    def test_withdrawing_a_ticket_wakes_the_node(
        self, client: httpx.Client, scripts: Any, daemon: Daemon
    ) -> None:
        node_id = asking_node(client, scripts, "ask-withdraw", "Going on without it.")
        request_id = the_ticket(client, node_id)["request_id"]
        cancelled = client.post(f"/v1/human/inbox/{request_id}/cancel")
        assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
        assert wait_settled(client, node_id)["outcome"]["output_text"] == "Going on without it."
        assert "withdrawn" in texts(conversation(daemon, node_id)[-2])

    def test_a_message_from_elsewhere_leaves_the_request_open(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        second = ask([{"question": "And the tag?"}])
        node_id = asking_node(client, scripts, "ask-message", second, "Tagged.")
        first = the_ticket(client, node_id)["request_id"]
        sent = client.post(f"/v1/nodes/{node_id}/messages", json={"body": "hurry up"})
        assert sent.status_code == 202
        # The node woke, asked again, and sleeps: both requests are open.
        tickets = eventually(
            lambda: open_tickets(client, node_id), lambda got: len(got) >= 2, interval=0.02
        )
        assert tickets[1]["request_id"] == first  # newest first
        assert tickets[0]["title"] == "And the tag?"
        wait_status(client, node_id, "dormant")
        reply = {"text": "v1"}
        assert client.post(f"/v1/human/requests/{first}/respond", json=reply).status_code == 200
        assert wait_settled(client, node_id)["outcome"]["output_text"] == "Tagged."
        # The node settled: its other request is cancelled, nobody waits for it.
        wait_request(client, tickets[0]["request_id"], "cancelled")

    def test_closing_the_node_cancels_its_open_request(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        node_id = asking_node(client, scripts, "ask-close", "never")
        request_id = the_ticket(client, node_id)["request_id"]
        assert client.post(f"/v1/nodes/{node_id}/close", json={}).status_code == 200
        cancelled = wait_request(client, request_id, "cancelled")
        assert cancelled["reason"] == "its node settled"
        refused = client.post(f"/v1/human/requests/{request_id}/respond", json=ANSWERS)
        assert error_code(refused) == (409, "request_not_open")

    def test_a_node_asking_alongside_another_call_still_waits(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        # Models make several calls in one turn: ask-questions need not be the last.
        both = ask(title="Two at once")
        both["tool_calls"].append({"name": "get-current-time", "arguments": {}})
        model = scripts("ask-alongside", [both, "Answered."])
        node_id = create(client, prompt="p", scopes=["ask"], model=model)["node_id"]
        wait_status(client, node_id, "dormant")
        request_id = the_ticket(client, node_id)["request_id"]
        assert client.get(f"/v1/nodes/{node_id}").json()["status"] == "dormant"
        answered = client.post(f"/v1/human/requests/{request_id}/respond", json=ANSWERS)
        assert answered.status_code == 200, answered.text
        assert wait_settled(client, node_id)["outcome"]["output_text"] == "Answered."

    def test_closing_a_resident_root_that_answered_before_cancels_its_request(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        # A resident root keeps its first answer as its outcome: closing it later
        # settles no new outcome, so no settle hook fires for it.
        model = scripts("ask-resident", ["First answer.", ask(title="Later"), "never"])
        made = create(client, prompt="p", model=model, scopes=["ask"], root_lifecycle="resident")
        node_id = made["node_id"]
        wait_settled(client, node_id)
        wait_status(client, node_id, "dormant")
        sent = client.post(f"/v1/nodes/{node_id}/messages", json={"body": "more"})
        assert sent.status_code == 202
        tickets = eventually(lambda: open_tickets(client, node_id), interval=0.02)
        assert len(tickets) == 1, tickets
        request_id = tickets[0]["request_id"]
        wait_status(client, node_id, "dormant")
        assert client.post(f"/v1/nodes/{node_id}/close", json={}).status_code == 200
        assert open_tickets(client, node_id) == []
        cancelled = client.get(f"/v1/human/requests/{request_id}").json()
        assert (cancelled["status"], cancelled["reason"]) == ("cancelled", "its node settled")

    def test_no_request_is_filed_for_a_settled_node(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        node_id = create(client, prompt="p", model=scripts("done-first", ["Done."]))["node_id"]
        wait_settled(client, node_id)
        body = {"title": "Too late?", "body": "x", "node_id": node_id}
        assert error_code(client.post("/v1/human/requests", json=body)) == (409, "node_settled")

    def test_a_request_for_a_node_is_filed_under_the_nodes_own_profile(
        self, client: httpx.Client
    ) -> None:
        node_id = create(client, no_kickoff=True)["node_id"]
        body = {"title": "Which?", "body": "x", "node_id": node_id, "profile": "elsewhere"}
        refused = client.post("/v1/human/requests", json=body)
        assert error_code(refused) == (422, "profile_mismatch")
        assert "'default'" in refused.json()["error"]["message"]
        filed = client.post("/v1/human/requests", json={**body, "profile": "default"})
        assert filed.status_code == 201 and filed.json()["profile"] == "default", filed.text


class TestRequests:
    def test_an_application_files_a_request_for_nobody(self, client: httpx.Client) -> None:
        body = {"title": "Approve the deploy?", "body": "Release 1.2 to production."}
        created = client.post("/v1/human/requests", json=body)
        assert created.status_code == 201, created.text
        request = api.HumanRequest.model_validate(created.json())
        assert request.node_id is None and request.profile == "default"
        assert request.questions == [] and request.status == "open"
        ticket = client.get(f"/v1/human/inbox/{request.request_id}").json()
        assert ticket["node"] is None and ticket["body"] == "Release 1.2 to production."
        progress = client.post(
            f"/v1/human/inbox/{request.request_id}/progress",
            json={"note": "Reading the changelog", "percent": 40, "by": "ada"},
        )
        assert progress.status_code == 200
        assert progress.json()["progress"][0]["note"] == "Reading the changelog"
        assert progress.json()["progress"][0]["percent"] == 40
        assert error_code(
            client.post(f"/v1/human/requests/{request.request_id}/respond", json={})
        ) == (422, "invalid_response")
        answered = client.post(
            f"/v1/human/requests/{request.request_id}/respond", json={"text": "Approved."}
        )
        assert answered.json()["response"]["text"] == "Approved."
        refused = client.post(
            f"/v1/human/inbox/{request.request_id}/progress", json={"note": "late"}
        )
        assert error_code(refused) == (409, "request_not_open")

    def test_an_application_asks_on_a_live_nodes_behalf(
        self, client: httpx.Client, scripts: Any, daemon: Daemon
    ) -> None:
        model = scripts("behalf", ["Waiting.", "Got the key."])
        node = create(client, prompt="wait for the key", model=model, root_lifecycle="resident")
        node_id = node["node_id"]
        wait_status(client, node_id, "dormant")
        question = {"question": "Which key?", "choices": ["a", "b"], "free_text": False}
        created = client.post(
            "/v1/human/requests",
            json={"title": "Key", "node_id": node_id, "questions": [question]},
        )
        assert created.status_code == 201, created.text
        request_id = created.json()["request_id"]
        bad = {"answers": [{"text": "c"}]}
        refused = client.post(f"/v1/human/requests/{request_id}/respond", json=bad)
        assert error_code(refused) == (422, "invalid_response")
        wrong = client.post(
            f"/v1/human/requests/{request_id}/respond", json={"answers": [{"choices": ["c"]}]}
        )
        assert error_code(wrong) == (422, "invalid_response")
        assert "not one of the choices" in wrong.json()["error"]["message"]
        both = {"answers": [{"choices": ["a", "b"]}]}
        assert error_code(client.post(f"/v1/human/requests/{request_id}/respond", json=both)) == (
            422,
            "invalid_response",
        )
        plain = client.post(f"/v1/human/requests/{request_id}/respond", json={"answers": ["c"]})
        assert error_code(plain) == (422, "invalid_response")
        # What a UI's text box sends: a plain string, or text, that spells a choice.
        spelled = client.post(f"/v1/human/requests/{request_id}/respond", json={"answers": [" B "]})
        assert spelled.status_code == 200, spelled.text
        answer = spelled.json()["response"]["answers"][0]
        assert (answer["choices"], answer["text"]) == (["b"], None)
        eventually(
            lambda: texts(conversation(daemon, node_id)),
            lambda told: "Which key?" in told,
            interval=0.02,
        )

        wait_status(client, node_id, "dormant")
        assert "Answer: b" in texts(conversation(daemon, node_id))

    def test_replace_bumps_the_revision_while_open(self, client: httpx.Client) -> None:
        created = client.post(
            "/v1/human/requests", json={"title": "Q", "questions": [{"question": "One?"}]}
        ).json()
        path = f"/v1/human/requests/{created['request_id']}"
        new = {"title": "Q2", "questions": [{"question": "Two?", "choices": ["x", "y"]}]}
        replaced = client.put(path, json={**new, "revision": 1})
        assert replaced.status_code == 200, replaced.text
        assert replaced.json()["revision"] == 2 and replaced.json()["title"] == "Q2"
        assert replaced.json()["questions"][0]["question"] == "Two?"
        stale = client.put(path, json={**new, "revision": 1})
        assert error_code(stale) == (409, "revision_conflict")
        assert client.get(path).json()["revision"] == 2
        # An answer is checked against the questions as they are now.
        old = {"answers": [{"text": "one"}, {"text": "two"}]}
        assert error_code(client.post(f"{path}/respond", json=old)) == (422, "invalid_response")
        # Answers by position to the questions the person read (revision 1), which a
        # replace changed since: refused, not attached to the wrong questions.
        read_before = {"answers": ["x"], "revision": 1}
        refused = client.post(f"{path}/respond", json=read_before)
        assert error_code(refused) == (409, "revision_conflict")
        assert refused.json()["error"]["details"] == {"revision": 2}
        assert client.get(path).json()["status"] == "open"
        answer = {"answers": [{"choices": ["y"]}], "revision": 2}
        assert client.post(f"{path}/respond", json=answer).is_success
        assert error_code(client.put(path, json=new)) == (409, "request_not_open")

    def test_replace_without_questions_is_refused_not_a_silent_delete(
        self, client: httpx.Client
    ) -> None:
        created = client.post(
            "/v1/human/requests", json={"title": "Q", "questions": [{"question": "One?"}]}
        ).json()
        path = f"/v1/human/requests/{created['request_id']}"
        refused = client.put(path, json={"title": "Q2", "body": "b", "revision": 1})
        assert error_code(refused) == (422, "invalid_request")
        assert "questions" in refused.text
        kept = client.get(path).json()
        assert kept["revision"] == 1 and kept["questions"][0]["question"] == "One?"
        dropped = client.put(path, json={"title": "Q2", "body": "b", "questions": []}).json()
        assert dropped["questions"] == [] and dropped["revision"] == 2


BAD_ID = "not a valid id!"
UNKNOWN = "hr_0000000000000000"


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/v1/human/requests/{id}", None),
        ("PUT", "/v1/human/requests/{id}", {"title": "t", "body": "b", "questions": []}),
        ("POST", "/v1/human/requests/{id}/respond", {"text": "x"}),
        ("POST", "/v1/human/requests/{id}/dismiss", {}),
        ("POST", "/v1/human/requests/{id}/cancel", {}),
        ("GET", "/v1/human/inbox/{id}", None),
        ("POST", "/v1/human/inbox/{id}/respond", {"text": "x"}),
        ("POST", "/v1/human/inbox/{id}/progress", {"note": "n"}),
        ("POST", "/v1/human/inbox/{id}/cancel", {}),
        ("GET", "/v1/human/inbox/{id}/response", None),
    ],
)
def test_every_route_refuses_a_bad_id_and_an_unknown_one(
    client: httpx.Client, method: str, path: str, body: dict[str, Any] | None
) -> None:
    bad = client.request(method, path.format(id="bad%20id!"), json=body)
    assert error_code(bad) == (400, "invalid_request_id")
    unknown = client.request(method, path.format(id=UNKNOWN), json=body)
    assert error_code(unknown) == (404, "request_not_found")


def test_bad_filings_are_refused(client: httpx.Client) -> None:
    post = "/v1/human/requests"
    cases: list[tuple[dict[str, Any], tuple[int, str]]] = [
        ({"title": "t", "node_id": "bad id!", "body": "b"}, (422, "invalid_request")),
        ({"title": "t", "node_id": "n-nobody", "body": "b"}, (404, "node_not_found")),
        ({"title": "t"}, (422, "invalid_questions")),
        (
            {"title": "t", "questions": [{"question": "a"}, {"question": "A"}]},
            (422, "invalid_questions"),
        ),
        (
            {"title": "t", "questions": [{"question": "a", "multiple": True, "choices": ["x"]}]},
            (422, "invalid_questions"),
        ),
        (
            {"title": "t", "questions": [{"question": "a", "free_text": False}]},
            (422, "invalid_questions"),
        ),
        ({"title": "t", "body": "b", "extra": 1}, (422, "invalid_request")),
        ({"title": "t", "body": "b", "profile": "bad name!"}, (400, "invalid_profile_name")),
    ]
    for body, expected in cases:
        assert error_code(client.post(post, json=body)) == expected, body
    bad_filter = client.get("/v1/human/inbox", params={"node_id": "bad id!"})
    assert error_code(bad_filter) == (400, "invalid_node_id")
    assert error_code(client.get("/v1/human/inbox", params={"limit": 0})) == (
        422,
        "invalid_request",
    )


# -- across restarts --------------------------------------------------------------


@pytest.fixture
def own_daemon(tmp_path: Path) -> Iterator[Daemon]:
    """A daemon of this test's own (it is restarted)."""
    default = write_script(tmp_path, "default", ["Hello."])
    process = Daemon(tmp_path / "home", {"HERON_PROVIDER": default})
    try:
        yield process.start()
    finally:
        process.stop()


def sleeping_asker(client: httpx.Client, tmp_path: Path, name: str, after: str) -> tuple[str, str]:
    """A node that asked and sleeps: its id and its request's."""
    model = write_script(tmp_path, name, [ask(), after])
    node_id: str = create(client, prompt="go", scopes=["ask"], model=model)["node_id"]
    wait_status(client, node_id, "dormant")
    return node_id, the_ticket(client, node_id)["request_id"]


@pytest.mark.slow
def test_requests_outlive_restarts_and_their_answers_still_wake_the_nodes(
    own_daemon: Daemon, tmp_path: Path
) -> None:
    with own_daemon.client() as client:
        calm, calm_request = sleeping_asker(client, tmp_path, "calm", "Answered after a restart.")
        crash, crash_request = sleeping_asker(client, tmp_path, "crash", "Read it after a crash.")
        gone, gone_request = sleeping_asker(client, tmp_path, "gone", "never")
        withdrawn, withdrawn_request = sleeping_asker(client, tmp_path, "withdrawn", "Went on.")
    own_daemon.stop()
    own_daemon.start()
    with own_daemon.client() as client:
        assert the_ticket(client, calm)["request_id"] == calm_request
        answered = client.post(f"/v1/human/inbox/{calm_request}/respond", json=ANSWERS)
        assert answered.status_code == 200, answered.text
        poll = wait_settled(client, calm)
        assert poll["outcome"]["output_text"] == "Answered after a restart."
    own_daemon.kill()
    # What a response leaves when the daemon dies before waking the node: the
    # request answered and the message queued (one transaction), the node dormant.
    with sqlite3.connect(own_daemon.home / "heron.db") as db:
        now = time.time()
        response = {"answers": None, "text": "main", "responded_by": None, "responded_at": now}
        db.execute(
            "UPDATE heron_human_requests SET status = 'answered', response = ?, "
            "resolved_at = ? WHERE request_id = ?",
            (json.dumps(response), now, crash_request),
        )
        db.execute(
            "INSERT INTO heron_messages (node_id, body, created_at) VALUES (?, ?, ?)",
            (crash, "The person answered: main", now),
        )
        # Withdrawn the same way (its withdrawal queued, the node not yet woken).
        db.execute(
            "UPDATE heron_human_requests SET status = 'cancelled', resolved_at = ? "
            "WHERE request_id = ?",
            (now, withdrawn_request),
        )
        db.execute(
            "INSERT INTO heron_messages (node_id, body, created_at) VALUES (?, ?, ?)",
            (withdrawn, "Your request was withdrawn.", now),
        )
        # A node settled, and the daemon died before its settle hook ran.
        db.execute(
            "UPDATE heron_nodes SET status = 'cancelled', settled_at = ? WHERE node_id = ?",
            (now, gone),
        )
    own_daemon.start()
    with own_daemon.client() as client:
        assert wait_settled(client, crash)["outcome"]["output_text"] == "Read it after a crash."
        assert client.get(f"/v1/human/requests/{crash_request}").json()["status"] == "answered"
        assert wait_settled(client, withdrawn)["outcome"]["output_text"] == "Went on."
        assert open_tickets(client, gone) == []
        orphan = client.get(f"/v1/human/requests/{gone_request}").json()
        assert (orphan["status"], orphan["reason"]) == ("cancelled", "its node settled")
