"""Fork, revive, revive-all, recycle, relaunch-root, promote and demote on a real daemon."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import httpx
from tests.support.daemon import (
    SLOW,
    Daemon,
    create,
    query,
    rewrite,
    wait_logged,
    wait_settled,
    wait_status,
)
from tests.support.lineage import events_once_settled, post, refused, row
from tests.support.polling import eventually

DECLINE = {"name": "decline", "arguments": {"reason": "cannot", "code": "no"}}
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def text(daemon: Daemon, node_id: str, column: str) -> Any:
    """One plain column of the node's row."""
    return query(daemon, f"SELECT {column} FROM heron_nodes WHERE node_id = ?", node_id)[0][0]


def logged(daemon: Daemon, node_id: str) -> list[tuple[Any, ...]]:
    sql = "SELECT sequence_number, type FROM heron_events WHERE node_id = ? ORDER BY 1"
    return query(daemon, sql, node_id)


class TestFork:
    def test_the_fork_continues_the_conversation_and_the_original_is_untouched(
        self, client: httpx.Client, daemon: Daemon, scripts: Any
    ) -> None:
        # Steps are chosen by how many answers the conversation holds: a fork that
        # did not carry the original's answer would get the first step again.
        model = scripts("fork", ["The code word is heron.", "Earlier I said: heron."])
        original = create(client, prompt="Pick a code word.", model=model, scopes=["act"])
        node_id = original["node_id"]
        wait_settled(client, node_id)
        wait_logged(daemon, node_id, "node.settled")
        before = client.get(f"/v1/nodes/{node_id}").json()
        state = row(daemon, node_id, "state")
        outcome = client.get(f"/v1/nodes/{node_id}/outcome").json()
        events = logged(daemon, node_id)

        response = post(client, f"/v1/nodes/{node_id}/fork", {"prompt": "What was it?"})
        assert response.status_code == 201, response.text
        fork = response.json()
        assert fork["node_id"] != node_id and fork["status"] == "running"
        assert (fork["model"], fork["scopes"], fork["parent"]) == (model, ["act"], None)
        poll = wait_settled(client, fork["node_id"])
        assert poll["outcome"]["output_text"] == "Earlier I said: heron."
        forked = row(daemon, fork["node_id"], "state")["messages_full"]
        assert forked[: len(state["messages_full"])] == state["messages_full"]
        assert forked[-2]["content"] == "What was it?"
        assert client.get(f"/v1/nodes/{fork['node_id']}").json()["forked_from"] == node_id
        wait_logged(daemon, fork["node_id"], "node.settled")
        assert logged(daemon, fork["node_id"])[0] == (1, "node.status.changed")

        assert client.get(f"/v1/nodes/{node_id}").json() == before
        assert row(daemon, node_id, "state") == state
        assert client.get(f"/v1/nodes/{node_id}/outcome").json() == outcome
        assert logged(daemon, node_id) == events

    def test_without_a_prompt_the_fork_waits_and_a_message_continues_it(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        model = scripts("idle-fork", ["first", "second"])
        node_id = create(client, prompt="go", model=model, name="orig")["node_id"]
        wait_settled(client, node_id)
        fork = post(client, f"/v1/nodes/{node_id}/fork", {"name": "copy", "node_id": "fork-1"})
        assert fork.status_code == 201, fork.text
        assert fork.json()["status"] == "dormant" and fork.json()["name"] == "copy"
        assert fork.json()["node_id"] == "fork-1" and fork.json()["runs"] == 0
        client.post("/v1/nodes/fork-1/messages", json={"body": "and then?"})
        assert wait_settled(client, "fork-1")["outcome"]["output_text"] == "second"
        taken = post(client, f"/v1/nodes/{node_id}/fork", {"node_id": "fork-1"})
        refused(taken, 409, "node_id_exists")

    def test_a_running_node_is_forked_as_last_saved(
        self, client: httpx.Client, scripts: Any, daemon: Daemon
    ) -> None:
        model = scripts("busy", [SLOW])
        node_id = create(client, prompt="think hard", model=model)["node_id"]
        wait_logged(daemon, node_id, "node.turn.started")
        fork = post(client, f"/v1/nodes/{node_id}/fork")
        assert fork.status_code == 201 and fork.json()["status"] == "dormant"
        assert row(daemon, fork.json()["node_id"], "state") is None  # nothing saved yet
        assert client.get(f"/v1/nodes/{node_id}").json()["status"] == "running"
        client.post(f"/v1/nodes/{node_id}/close")

    def test_a_fork_during_a_second_run_has_the_first_runs_conversation(
        self, client: httpx.Client, scripts: Any, daemon: Daemon
    ) -> None:
        model = scripts("twice", ["first answer", SLOW])
        node_id = create(client, prompt="one", model=model, root_lifecycle="resident")["node_id"]
        wait_settled(client, node_id)
        wait_status(client, node_id, "dormant")
        saved = row(daemon, node_id, "state")
        client.post(f"/v1/nodes/{node_id}/messages", json={"body": "two"})
        wait_logged(daemon, node_id, "node.turn.started", 2)
        fork = post(client, f"/v1/nodes/{node_id}/fork").json()
        assert fork["status"] == "dormant"
        forked = row(daemon, fork["node_id"], "state")
        assert forked == saved
        assert [m["content"] for m in forked["messages_full"]] == ["one", "first answer"]
        client.post(f"/v1/nodes/{node_id}/close")

    def test_a_fork_of_a_child_sits_beside_it_and_copies_its_workspace(
        self, client: httpx.Client, scripts: Any, daemon: Daemon, tmp_path: Path
    ) -> None:
        parent = create(client, no_kickoff=True)["node_id"]
        child = create(client, prompt="x", parent=parent, model=scripts("c", ["ok"]))["node_id"]
        wait_settled(client, child)
        own = daemon.home / "nodes" / child
        (own / "notes.txt").write_text("kept")
        fork = post(client, f"/v1/nodes/{child}/fork", {"no_kickoff": True}).json()
        assert (fork["parent"], fork["root"], fork["forked_from"]) == (parent, False, child)
        copied = daemon.home / "nodes" / fork["node_id"]
        assert (copied / "notes.txt").read_text() == "kept"
        (copied / "notes.txt").write_text("changed in the fork")
        assert (own / "notes.txt").read_text() == "kept"
        # An explicit cwd is shared, not copied.
        shared = tmp_path / "shared"
        shared.mkdir()
        pinned = create(client, no_kickoff=True, cwd=str(shared), mode="orchestrator")
        twin = post(client, f"/v1/nodes/{pinned['node_id']}/fork").json()
        assert (twin["cwd"], twin["mode"]) == (str(shared), "orchestrator")
        assert not (daemon.home / "nodes" / twin["node_id"]).exists()

    def test_fork_from_on_create_copies_what_the_create_leaves_unset(
        self, client: httpx.Client, daemon: Daemon, scripts: Any
    ) -> None:
        first = scripts("source", ["from the source"])
        node_id = create(
            client,
            prompt="p",
            model=first,
            scopes=["ask"],
            situational_context="ambient",
            mode="orchestrator",
        )["node_id"]
        wait_settled(client, node_id)
        second = scripts("own", ["unused", "the create's own model"])
        forked = create(client, prompt="more", fork_from=node_id, model=second, name="mine")
        assert (forked["model"], forked["name"], forked["mode"]) == (second, "mine", "orchestrator")
        assert forked["scopes"] == ["ask"]
        assert text(daemon, forked["node_id"], "situational_context") == "ambient"
        outcome = wait_settled(client, forked["node_id"])["outcome"]
        assert outcome["output_text"] == "the create's own model"
        refused(client.post("/v1/nodes", json={"fork_from": "no-such-node"}), 404, "node_not_found")

    def test_fork_refusals(self, client: httpx.Client) -> None:
        refused(post(client, "/v1/nodes/no-such-node/fork"), 404, "node_not_found")
        refused(post(client, "/v1/nodes/-bad/fork"), 400, "invalid_node_id")
        waiting = create(client, no_kickoff=True)["node_id"]
        refused(post(client, f"/v1/nodes/{waiting}/fork", {"parent": "x"}), 422, "invalid_request")
        refused(post(client, f"/v1/nodes/{waiting}/fork", {"name": 3}), 422, "invalid_request")
        bad = client.post(f"/v1/nodes/{waiting}/fork", content=b"{", headers=_JSON)
        refused(bad, 400, "malformed_json")


_JSON = {"content-type": "application/json"}


class TestRevive:
    def test_a_node_failed_by_its_provider_revives_and_completes(
        self, client: httpx.Client, daemon: Daemon, scripts: Any
    ) -> None:
        model = scripts("flaky", [{"error": "overloaded", "status": 503}])
        node_id = create(client, prompt="try", model=model)["node_id"]
        failed = wait_settled(client, node_id)["outcome"]
        assert failed["reason"] == "provider_error"
        rewrite(model, ["Recovered answer."])
        revived = post(client, f"/v1/nodes/{node_id}/revive")
        assert revived.status_code == 200, revived.text
        assert revived.json()["status"] == "running" and revived.json()["settled_at"] is None
        poll = wait_settled(client, node_id)
        assert poll["outcome"]["output_text"] == "Recovered answer."
        assert poll["node_status"] == "completed"
        node = client.get(f"/v1/nodes/{node_id}").json()
        previous = node["previous_outcomes"]
        assert [p["outcome"] for p in previous] == [failed]
        assert previous[0]["status"] == "failed" and previous[0]["settled_at"] is not None
        assert node["forked_from"] is None
        events = events_once_settled(daemon, node_id, 2)
        settled = [data for type, data in events if type == "node.settled"]
        assert settled == [{"outcome": failed}, {"outcome": poll["outcome"]}]

    def test_a_dormant_node_revives_with_a_message(
        self, client: httpx.Client, daemon: Daemon, scripts: Any
    ) -> None:
        node_id = create(client, no_kickoff=True, model=scripts("wake", ["awake"]))["node_id"]
        revived = post(client, f"/v1/nodes/{node_id}/revive", {"message": "wake up"})
        assert revived.json()["status"] == "running" and revived.json()["runs"] == 1
        assert wait_settled(client, node_id)["outcome"]["output_text"] == "awake"
        messages = row(daemon, node_id, "state")["messages_full"]
        assert messages[0]["content"] == "wake up"

    def test_a_message_to_a_node_that_never_ran_comes_after_its_prompt(
        self, client: httpx.Client, daemon: Daemon, scripts: Any
    ) -> None:
        model = scripts("brief", ["on it"])
        node_id = create(client, prompt="the brief", no_kickoff=True, model=model)["node_id"]
        sent = post(client, f"/v1/nodes/{node_id}/messages", {"body": "go now"})
        assert sent.json()["delivery"] == "woke"
        wait_settled(client, node_id)
        messages = row(daemon, node_id, "state")["messages_full"]
        assert [m["content"] for m in messages[:2]] == ["the brief\n\ngo now", "on it"]

    def test_refusals(self, client: httpx.Client, daemon: Daemon, scripts: Any) -> None:
        done = create(client, prompt="x", model=scripts("done", ["done"]))["node_id"]
        wait_settled(client, done)
        refused(post(client, f"/v1/nodes/{done}/revive"), 409, "node_settled")
        closed = create(client, no_kickoff=True)["node_id"]
        client.post(f"/v1/nodes/{closed}/close")
        refused(post(client, f"/v1/nodes/{closed}/revive"), 409, "node_settled")
        busy = create(client, prompt="x", model=scripts("busy", [SLOW]))["node_id"]
        refused(post(client, f"/v1/nodes/{busy}/revive"), 409, "node_running")
        client.post(f"/v1/nodes/{busy}/close")
        refused(post(client, "/v1/nodes/no-such-node/revive"), 404, "node_not_found")
        refused(post(client, "/v1/nodes/-bad/revive"), 400, "invalid_node_id")
        refused(post(client, f"/v1/nodes/{closed}/revive", {"message": ""}), 422, "invalid_request")
        refused(post(client, f"/v1/nodes/{closed}/revive", {"msg": "x"}), 422, "invalid_request")

    def test_a_node_past_its_deadline_needs_a_new_one_first(
        self, client: httpx.Client, daemon: Daemon, scripts: Any
    ) -> None:
        model = scripts("late", [{"error": "down", "status": 503}])
        node_id = create(client, prompt="x", model=model, deadline="1h")["node_id"]
        wait_settled(client, node_id)
        with sqlite3.connect(daemon.home / "heron.db") as db:  # as if the hour went by
            db.execute("UPDATE heron_nodes SET deadline_at = 1 WHERE node_id = ?", (node_id,))
        refused(post(client, f"/v1/nodes/{node_id}/revive"), 409, "deadline_passed")
        assert client.get(f"/v1/nodes/{node_id}").json()["status"] == "failed"
        client.patch(f"/v1/nodes/{node_id}/config", json={"deadline": "1h"})
        rewrite(model, ["made it"])
        post(client, f"/v1/nodes/{node_id}/revive")
        assert wait_settled(client, node_id)["outcome"]["output_text"] == "made it"

    def test_a_failed_node_whose_model_is_gone_stays_failed(
        self, client: httpx.Client, daemon: Daemon, scripts: Any
    ) -> None:
        model = scripts("gone", [{"error": "down", "status": 503}])
        node_id = create(client, prompt="x", model=model)["node_id"]
        outcome = wait_settled(client, node_id)["outcome"]
        Path(model.removeprefix("scripted:")).write_text("not json")
        refused(post(client, f"/v1/nodes/{node_id}/revive"), 422, "invalid_model")
        poll = client.get(f"/v1/nodes/{node_id}/outcome").json()
        assert (poll["node_status"], poll["outcome"]) == ("failed", outcome)


class TestReviveAll:
    def test_revives_exactly_the_involuntarily_stopped(self, tmp_path: Path, scripts: Any) -> None:
        home = tmp_path / "home"
        daemon = Daemon(home, {"HERON_PROVIDER": scripts("default", ["ok"])}).start()
        try:
            with daemon.client() as client:
                flaky = scripts("flaky", [{"error": "overloaded", "status": 503}])
                gone = scripts("gone", [{"error": "overloaded", "status": 503}])
                slow = scripts("slow", [SLOW])
                provider = create(client, prompt="x", model=flaky)["node_id"]
                unloadable = create(client, prompt="x", model=gone)["node_id"]
                crashed = create(client, prompt="x", model=scripts("short", []))["node_id"]
                declined = create(
                    client,
                    prompt="x",
                    output_schema=SCHEMA,
                    model=scripts("decline", [{"tool_calls": [DECLINE]}]),
                )["node_id"]
                no_result = create(
                    client, prompt="x", output_schema=SCHEMA, model=scripts("chat", ["a"] * 3)
                )["node_id"]
                # Its child first (a settled node takes none), then it runs and settles.
                done = create(client, prompt="x", no_kickoff=True)["node_id"]
                orphaned = create(client, prompt="x", parent=done, model=flaky)["node_id"]
                assert post(client, f"/v1/nodes/{done}/revive").status_code == 200
                dormant = create(client, no_kickoff=True)["node_id"]
                cancelled = create(client, no_kickoff=True)["node_id"]
                client.post(f"/v1/nodes/{cancelled}/close")
                interrupted = create(client, prompt="x", model=slow)["node_id"]
                running = create(client, prompt="x", model=slow)["node_id"]
                for node_id in (provider, unloadable, crashed, declined, no_result, done):
                    wait_settled(client, node_id)
                wait_settled(client, orphaned)
                outcome = client.get(f"/v1/nodes/{no_result}/outcome").json()["outcome"]
                assert (outcome["reason"], outcome["detail"]["error_type"]) == (
                    "no_result",
                    "NoResultSubmitted",
                )
                crash = client.get(f"/v1/nodes/{crashed}/outcome").json()["outcome"]
                assert (crash["reason"], crash["detail"]["error_type"]) == (
                    "crashed",
                    "ScriptExhaustedError",
                )
                wait_logged(daemon, interrupted, "node.turn.started")
                client.post(f"/v1/nodes/{interrupted}/interrupt")
                wait_status(client, interrupted, "interrupted")
                rewrite(flaky, [SLOW])
                Path(gone.removeprefix("scripted:")).write_text("not json")

                response = post(client, "/v1/nodes/revive-all")
                assert response.status_code == 200, response.text
                body = response.json()
                assert [n["node_id"] for n in body["revived"]] == [provider, crashed]
                assert all(n["status"] == "running" for n in body["revived"])
                (failure,) = body["failed"]
                assert failure["node_id"] == unloadable
                assert failure["error"]["code"] == "invalid_model"
                assert "not valid JSON" in failure["error"]["message"]
                expected = {
                    unloadable: "failed",
                    declined: "failed",
                    no_result: "failed",
                    done: "completed",
                    orphaned: "failed",
                    dormant: "dormant",
                    cancelled: "cancelled",
                    interrupted: "interrupted",  # interrupted on request: meant
                    running: "running",
                }
                for node_id, status in expected.items():
                    assert client.get(f"/v1/nodes/{node_id}").json()["status"] == status
                for node_id in (provider, interrupted, running):
                    client.post(f"/v1/nodes/{node_id}/close")
                wait_settled(client, crashed)  # an empty script crashes it again
                again = post(client, "/v1/nodes/revive-all").json()
                assert {n["node_id"] for n in again["revived"]} == {crashed}
        finally:
            daemon.stop()

    def test_a_node_under_a_settled_parent_is_neither_revived_nor_forked(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        # A settled node takes no new children: the child comes first, then the close.
        parent = create(client, prompt="x", no_kickoff=True)["node_id"]
        model = scripts("child", [{"error": "down", "status": 503}])
        child = create(client, prompt="x", parent=parent, model=model)["node_id"]
        wait_settled(client, child)
        assert post(client, f"/v1/nodes/{parent}/close").status_code == 200
        response = post(client, f"/v1/nodes/{child}/revive")
        refused(response, 409, "parent_settled")
        assert parent in response.json()["error"]["message"]
        refused(post(client, f"/v1/nodes/{child}/fork"), 409, "parent_settled")
        assert client.get(f"/v1/nodes/{child}").json()["status"] == "failed"

    def test_is_not_taken_for_a_node_id(self, client: httpx.Client) -> None:
        # A fixed path, not a node id: a GET is a method it does not serve.
        response = client.get("/v1/nodes/revive-all")
        refused(response, 405, "method_not_allowed")
        assert response.headers["allow"] == "POST"
        assert client.post("/v1/nodes/revive-all").status_code == 200


class TestRecycle:
    def test_keeps_the_id_and_carries_the_summary(
        self, client: httpx.Client, daemon: Daemon, scripts: Any
    ) -> None:
        model = scripts(
            "recycle",
            {"steps": ["The code is 7.", "Noted."], "compaction": "Summary: the code is 7."},
        )
        node_id = create(client, prompt="remember 7", model=model, root_lifecycle="resident")[
            "node_id"
        ]
        wait_settled(client, node_id)
        wait_status(client, node_id, "dormant")
        before = row(daemon, node_id, "state")
        response = post(client, f"/v1/nodes/{node_id}/recycle")
        assert response.status_code == 200, response.text
        assert response.json()["summary"] == "Summary: the code is 7."
        assert response.json()["node"]["node_id"] == node_id
        assert response.json()["node"]["status"] == "dormant"
        state = row(daemon, node_id, "state")
        assert state["memory"] == "Summary: the code is 7." and state["messages"] == []
        assert state["messages_full"] == before["messages_full"]
        assert state["compactions"] == before["compactions"] + 1
        # The next run starts from the summary alone: no earlier answer is in its
        # context, so the script plays its first step again.
        client.post(f"/v1/nodes/{node_id}/messages", json={"body": "what was it?"})
        eventually(
            lambda: client.get(f"/v1/nodes/{node_id}").json(),
            lambda node: (node["runs"], node["status"]) == (2, "dormant"),
            timeout=20,
            interval=0.02,
        )

        after = row(daemon, node_id, "state")
        assert after["memory"] == "Summary: the code is 7."
        assert [m["content"] for m in after["messages"]] == ["what was it?", "The code is 7."]

    def test_a_node_its_context_broke_recovers_by_recycle_then_revive(
        self, client: httpx.Client, daemon: Daemon, scripts: Any
    ) -> None:
        # The second answer fails (say, the context grew too long): with a fresh
        # context the conversation holds no answer, so the first step plays again.
        model = scripts(
            "overflow",
            {
                "steps": ["short answer", {"error": "context too long", "status": 400}],
                "compaction": "Summary so far.",
            },
        )
        node_id = create(client, prompt="a", model=model)["node_id"]
        wait_settled(client, node_id)
        fork = post(client, f"/v1/nodes/{node_id}/fork", {"prompt": "b"}).json()["node_id"]
        assert wait_settled(client, fork)["outcome"]["reason"] == "provider_error"
        recycled = post(client, f"/v1/nodes/{fork}/recycle")
        assert recycled.status_code == 200, recycled.text
        assert recycled.json()["node"]["status"] == "failed"
        post(client, f"/v1/nodes/{fork}/revive", {"message": "carry on"})
        poll = wait_settled(client, fork)
        assert (poll["node_status"], poll["outcome"]["output_text"]) == (
            "completed",
            "short answer",
        )
        assert row(daemon, fork, "state")["memory"] == "Summary so far."

    def test_refusals_leave_the_state_alone(
        self, client: httpx.Client, daemon: Daemon, scripts: Any
    ) -> None:
        broken = scripts(
            "no-summary",
            {"steps": ["fine"], "compaction": {"error": "summariser down", "status": 503}},
        )
        node_id = create(client, prompt="x", model=broken, root_lifecycle="resident")["node_id"]
        wait_settled(client, node_id)
        wait_status(client, node_id, "dormant")
        state = row(daemon, node_id, "state")
        refused(post(client, f"/v1/nodes/{node_id}/recycle"), 502, "provider_error")
        assert row(daemon, node_id, "state") == state
        empty = scripts("empty-summary", {"steps": ["fine"], "compaction": "  "})
        client.patch(f"/v1/nodes/{node_id}/config", json={"model": empty})
        refused(post(client, f"/v1/nodes/{node_id}/recycle"), 502, "empty_summary")
        assert row(daemon, node_id, "state") == state

        fresh = create(client, no_kickoff=True)["node_id"]
        refused(post(client, f"/v1/nodes/{fresh}/recycle"), 409, "no_conversation")
        done = create(client, prompt="x", model=scripts("done", ["ok"]))["node_id"]
        wait_settled(client, done)
        refused(post(client, f"/v1/nodes/{done}/recycle"), 409, "node_settled")
        busy = create(client, prompt="x", model=scripts("busy", [SLOW]))["node_id"]
        refused(post(client, f"/v1/nodes/{busy}/recycle"), 409, "node_running")
        client.post(f"/v1/nodes/{busy}/close")
        refused(post(client, "/v1/nodes/no-such-node/recycle"), 404, "node_not_found")


class TestRelaunchRoot:
    def test_closes_the_tree_and_runs_the_root_again_from_its_prompt(
        self, client: httpx.Client, daemon: Daemon, scripts: Any
    ) -> None:
        # One step only: a root that kept its old conversation would run out of script.
        # The tree first (a settled node takes no children), then the root runs and settles.
        root = create(client, prompt="build it", model=scripts("root", ["built"]), no_kickoff=True)
        root = root["node_id"]
        slow = scripts("slow-child", [SLOW])
        child = create(client, prompt="c", parent=root, model=slow)["node_id"]
        grandchild = create(client, prompt="g", parent=child, model=slow)["node_id"]
        assert post(client, f"/v1/nodes/{root}/revive").status_code == 200
        first = wait_settled(client, root)["outcome"]
        wait_logged(daemon, grandchild, "node.turn.started")

        response = post(client, f"/v1/nodes/{grandchild}/relaunch-root")
        assert response.status_code == 200, response.text
        assert response.json()["node_id"] == root and response.json()["status"] == "running"
        for node_id in (child, grandchild):
            assert client.get(f"/v1/nodes/{node_id}").json()["status"] == "cancelled"
        poll = wait_settled(client, root)
        assert poll["outcome"]["output_text"] == "built" and poll["node_status"] == "completed"
        node = client.get(f"/v1/nodes/{root}").json()
        assert node["runs"] == 2
        messages = row(daemon, root, "state")["messages_full"]
        assert [m["content"] for m in messages] == ["build it", "built"]
        assert [p["outcome"] for p in node["previous_outcomes"]] == [first]
        assert row(daemon, root, "extra")["relaunches"] == 1

    def test_a_running_root_is_stopped_first_and_a_root_without_prompt_is_refused(
        self, client: httpx.Client, daemon: Daemon, scripts: Any
    ) -> None:
        model = scripts("slow-root", [SLOW])
        root = create(client, prompt="long job", model=model)["node_id"]
        wait_logged(daemon, root, "node.turn.started")
        rewrite(model, ["quick now"])
        response = post(client, f"/v1/nodes/{root}/relaunch-root")
        assert response.status_code == 200, response.text
        poll = wait_settled(client, root)
        assert poll["outcome"]["output_text"] == "quick now"
        assert client.get(f"/v1/nodes/{root}").json()["previous_outcomes"] == []

        broken = scripts("broken-root", ["x"])
        root = create(client, prompt="again", model=broken)["node_id"]
        wait_settled(client, root)
        Path(broken.removeprefix("scripted:")).write_text("not json")
        refused(post(client, f"/v1/nodes/{root}/relaunch-root"), 422, "invalid_model")
        node = client.get(f"/v1/nodes/{root}").json()
        assert (node["status"], node["runs"]) == ("completed", 1)

        silent = create(client, no_kickoff=True)["node_id"]
        refused(post(client, f"/v1/nodes/{silent}/relaunch-root"), 409, "no_prompt")
        refused(post(client, "/v1/nodes/no-such-node/relaunch-root"), 404, "node_not_found")


class TestMode:
    def test_promote_and_demote_are_recorded_for_the_next_run(
        self, client: httpx.Client, daemon: Daemon, scripts: Any
    ) -> None:
        node_id = create(client, no_kickoff=True, model=scripts("m", ["ok"]))["node_id"]
        promoted = post(client, f"/v1/nodes/{node_id}/promote")
        assert promoted.status_code == 200 and promoted.json()["mode"] == "orchestrator"
        assert promoted.json()["runs"] == 0  # recorded, nothing started
        assert post(client, f"/v1/nodes/{node_id}/promote").json()["mode"] == "orchestrator"
        assert post(client, f"/v1/nodes/{node_id}/demote").json()["mode"] == "base"
        assert client.get(f"/v1/nodes/{node_id}").json()["mode"] == "base"
        woke = post(client, f"/v1/nodes/{node_id}/promote", {"message": "fan out"})
        assert woke.json()["mode"] == "orchestrator" and woke.json()["runs"] == 1
        wait_settled(client, node_id)
        messages = row(daemon, node_id, "state")["messages_full"]
        assert [m["content"] for m in messages] == ["fan out", "ok"]
        # A refusal changes nothing, and says how to go on.
        refused_demote = post(client, f"/v1/nodes/{node_id}/demote")
        refused(refused_demote, 409, "node_settled")
        assert "fork it" in refused_demote.json()["error"]["message"]
        assert client.get(f"/v1/nodes/{node_id}").json()["mode"] == "orchestrator"
        refused(post(client, "/v1/nodes/no-such-node/promote"), 404, "node_not_found")
        refused(post(client, "/v1/nodes/-bad/demote"), 400, "invalid_node_id")
        refused(post(client, f"/v1/nodes/{node_id}/promote", {"mode": "x"}), 422, "invalid_request")

    def test_a_failed_node_is_told_to_be_revived_first(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        model = scripts("down", [{"error": "down", "status": 503}])
        node_id = create(client, prompt="x", model=model)["node_id"]
        wait_settled(client, node_id)
        response = post(client, f"/v1/nodes/{node_id}/promote", {"message": "go"})
        refused(response, 409, "node_settled")
        assert "revive it first" in response.json()["error"]["message"]
        assert client.get(f"/v1/nodes/{node_id}").json()["mode"] == "base"
