"""Lineage operations landing at awkward moments, and the smaller review fixes, on a real daemon."""

from __future__ import annotations

import threading
import time
from datetime import datetime
from typing import Any

import httpx
from tests.support.daemon import (
    SLOW,
    Daemon,
    create,
    rewrite,
    wait_logged,
    wait_settled,
    wait_status,
)
from tests.support.lineage import events_once_settled, post, refused, row
from tests.support.polling import eventually

DOWN = {"error": "down", "status": 503}


def in_background(call: Any) -> tuple[threading.Thread, list[httpx.Response]]:
    """Run ``call()`` (an HTTP request) in a thread; its response lands in the list."""
    answers: list[httpx.Response] = []
    thread = threading.Thread(target=lambda: answers.append(call()))
    thread.start()
    return thread, answers


class TestReviveAsTheRunEnds:
    def test_each_settlement_is_announced_with_its_outcome_before_the_next_run(
        self, client: httpx.Client, daemon: Daemon, scripts: Any
    ) -> None:
        node_id = create(client, prompt="x", model=scripts("down", [DOWN]))["node_id"]
        rounds = 8
        for _ in range(rounds - 1):
            # Revive the moment the status reads failed: the run may not have
            # announced its end yet.
            eventually(
                lambda: client.get(f"/v1/nodes/{node_id}").json()["status"] == "failed",
                timeout=20,
                interval=0,
            )

            revived = post(client, f"/v1/nodes/{node_id}/revive")
            assert revived.status_code == 200, revived.text
        wait_settled(client, node_id)
        events = events_once_settled(daemon, node_id, rounds)
        settled = [i for i, (type, _) in enumerate(events) if type == "node.settled"]
        assert len(settled) == rounds
        for i in settled:
            outcome = events[i][1]["outcome"]
            assert outcome is not None and outcome["reason"] == "provider_error"
            assert events[i - 1] == ("node.status.changed", {"status": "failed"})
        for i in settled[:-1]:
            assert events[i + 1] == ("node.status.changed", {"status": "running"})
        node = client.get(f"/v1/nodes/{node_id}").json()
        assert len(node["previous_outcomes"]) == rounds - 1 and node["runs"] == rounds


class TestRelaunchRace:
    def test_messages_during_a_relaunch_are_refused_never_the_relaunch(
        self, client: httpx.Client, daemon: Daemon, scripts: Any
    ) -> None:
        model = scripts("root", [SLOW])
        root = create(client, prompt="build", model=model)["node_id"]
        children = [
            create(client, prompt="c", parent=root, model=scripts(f"child-{i}", [SLOW]))["node_id"]
            for i in range(3)
        ]
        for child in children:
            wait_logged(daemon, child, "node.turn.started")
        wait_logged(daemon, root, "node.turn.started")
        thread, answers = in_background(lambda: client.post(f"/v1/nodes/{root}/relaunch-root"))
        codes: list[str] = []
        while thread.is_alive():
            sent = client.post(f"/v1/nodes/{root}/messages", json={"body": "more"})
            if sent.status_code == 409:
                codes.append(sent.json()["error"]["code"])
            else:
                assert sent.status_code == 202, sent.text
        thread.join()
        assert answers[0].status_code == 200, answers[0].text
        assert set(codes) <= {"node_relaunching"}
        node = client.get(f"/v1/nodes/{root}").json()
        assert (node["status"], node["runs"]) == ("running", 2)
        for child in children:
            assert client.get(f"/v1/nodes/{child}").json()["status"] == "cancelled"
        assert post(client, f"/v1/nodes/{root}/messages", {"body": "after"}).status_code == 202
        client.post(f"/v1/nodes/{root}/close")

    def test_the_prompt_comes_first_and_a_patched_deadline_is_kept(
        self, client: httpx.Client, daemon: Daemon, scripts: Any
    ) -> None:
        model = scripts("slow-root", [SLOW])
        root = create(client, prompt="build it", model=model, deadline="1h")["node_id"]
        wait_logged(daemon, root, "node.turn.started")
        client.post(f"/v1/nodes/{root}/messages", json={"body": "unread note"})
        client.patch(f"/v1/nodes/{root}/config", json={"deadline": "3h"})
        rewrite(model, ["rebuilt"])
        before = time.time()
        response = post(client, f"/v1/nodes/{root}/relaunch-root")
        assert response.status_code == 200, response.text
        deadline = datetime.fromisoformat(response.json()["deadline_at"]).timestamp()
        assert before + 3 * 3600 - 5 <= deadline <= time.time() + 3 * 3600 + 5
        assert wait_settled(client, root)["outcome"]["output_text"] == "rebuilt"
        messages = row(daemon, root, "state")["messages_full"]
        assert messages[0]["content"] == "build it\n\nunread note"


class TestReviveNeverRan:
    def test_its_prompt_is_read_before_the_message(
        self, client: httpx.Client, daemon: Daemon, scripts: Any
    ) -> None:
        model = scripts("late", ["on it"])
        node_id = create(client, prompt="the task", no_kickoff=True, model=model)["node_id"]
        post(client, f"/v1/nodes/{node_id}/revive", {"message": "start now"})
        assert wait_settled(client, node_id)["outcome"]["output_text"] == "on it"
        messages = row(daemon, node_id, "state")["messages_full"]
        assert messages[0]["content"] == "the task\n\nstart now"
        refused(
            post(client, f"/v1/nodes/{node_id}/revive", {"message": "  "}), 422, "invalid_request"
        )


class TestRecycleOutsideTheLock:
    def test_a_node_woken_while_its_summary_is_written_is_left_alone(
        self, client: httpx.Client, daemon: Daemon, scripts: Any
    ) -> None:
        model = scripts(
            "slow-summary",
            {"steps": ["one", "two"], "compaction": {"text": "Summary.", "delay": 3}},
        )
        node_id = create(client, prompt="a", model=model, root_lifecycle="resident")["node_id"]
        wait_settled(client, node_id)
        wait_status(client, node_id, "dormant")
        thread, answers = in_background(lambda: client.post(f"/v1/nodes/{node_id}/recycle"))
        # Recycle holds no lock while the model writes: a message wakes the node meanwhile.
        sent = client.post(f"/v1/nodes/{node_id}/messages", json={"body": "b"})
        assert sent.status_code == 202 and sent.json()["delivery"] == "woke"
        assert thread.is_alive()
        thread.join()
        refused(answers[0], 409, answers[0].json()["error"]["code"])
        assert answers[0].json()["error"]["code"] in ("node_changed", "node_running")
        wait_status(client, node_id, "dormant")
        state = row(daemon, node_id, "state")
        assert state["memory"] is None
        assert [m["content"] for m in state["messages"]] == ["a", "one", "b", "two"]

    def test_a_fault_outside_the_provider_is_a_clear_502(
        self, client: httpx.Client, daemon: Daemon, scripts: Any
    ) -> None:
        node_id = create(
            client, prompt="x", model=scripts("fine", ["fine"]), root_lifecycle="resident"
        )["node_id"]
        wait_settled(client, node_id)
        wait_status(client, node_id, "dormant")
        state = row(daemon, node_id, "state")
        client.patch(f"/v1/nodes/{node_id}/config", json={"model": scripts("nothing", [])})
        response = post(client, f"/v1/nodes/{node_id}/recycle")
        refused(response, 502, "summary_failed")
        assert "ScriptExhaustedError" in response.json()["error"]["message"]
        assert row(daemon, node_id, "state") == state
