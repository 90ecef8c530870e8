"""Orchestrators: children, outcome delivery, yield, wait and closing a subtree.

The scripts decide which tools an orchestrator calls; what the children
answered is checked in the orchestrator's saved conversation (the scripted
model cannot quote it back), read from the daemon's database.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.daemon import Daemon, create, wait_settled, wait_status, write_script
from tests.support.orchestration import call, children, conversation, query, spawn, tool_statuses
from tests.support.polling import eventually


def statuses(daemon: Daemon, node_id: str, last: str | None = None) -> list[str]:
    """The node's logged statuses (once ``last`` is logged: events are written in batches)."""
    sql = (
        "SELECT data FROM heron_events WHERE node_id = ? AND type = 'node.status.changed' "
        "ORDER BY sequence_number"
    )

    def read() -> list[str]:
        return [json.loads(d)["status"] for (d,) in query(daemon, sql, node_id)]

    if last is None:
        return read()
    try:
        return eventually(
            read, lambda found: bool(found) and found[-1] == last, timeout=10, interval=0.02
        )
    except AssertionError:
        return read()  # the caller's check shows what was logged


def runs(client: httpx.Client, node_id: str) -> int:
    """How many runs the node has started (each wake-up is one)."""
    count: int = client.get(f"/v1/nodes/{node_id}").json()["runs"]
    return count


def slow(scripts: Any, name: str, text: str, delay: float) -> str:
    return str(scripts(name, [{"text": text, "delay": delay}]))


class TestChildren:
    def test_spawns_two_children_waits_and_gets_both_outcomes(
        self, client: httpx.Client, scripts: Any, daemon: Daemon
    ) -> None:
        alpha = scripts("alpha", ["alpha found 41 bugs"])
        beta = scripts("beta", [{"text": "beta fixed 42 tests", "delay": 0.5}])
        model = scripts(
            "fan-out",
            [
                {"tool_calls": [spawn("alpha", alpha), spawn("beta", beta)]},
                {"tool_calls": [call("wait-children")]},
                {"tool_calls": [call("list-children")]},
                "Both children are done.",
            ],
        )
        orchestrator = create(client, prompt="fan out", model=model, mode="orchestrator")
        node_id = orchestrator["node_id"]
        outcome = wait_settled(client, node_id)["outcome"]
        assert outcome["kind"] == "result" and outcome["output_text"] == "Both children are done."
        kids = children(client, node_id, 2)
        for name, spec in (("alpha", alpha), ("beta", beta)):
            kid = kids[name]
            assert kid["parent"] == node_id and kid["creator"] == node_id
            assert kid["root"] is False and kid["model"] == spec
            assert kid["status"] == "completed"
            # A child works in its parent's directory.
            assert kid["cwd"] == str(daemon.home / "nodes" / node_id)
        said = conversation(daemon, node_id)
        # wait-children handed over both outcomes, each exactly once (no message too).
        assert said.count("alpha found 41 bugs") == 1 and said.count("beta fixed 42 tests") == 1
        assert f"Child {kids['alpha']['node_id']} ('alpha') completed." in said
        assert runs(client, node_id) == 1
        assert [s for s, _ in tool_statuses(daemon, node_id)] == [
            "spawn-child",
            "spawn-child",
            "wait-children",
            "list-children",
        ]
        assert all(status == "ok" for _, status in tool_statuses(daemon, node_id))

    def test_a_child_works_in_its_parents_worktree(
        self, client: httpx.Client, scripts: Any, tmp_path: Path
    ) -> None:
        repo = tmp_path / "repo"
        repo.mkdir()
        (repo / "README.md").write_text("hello\n")
        email = ["-c", "user.name=Test", "-c", "user.email=test@example.invalid"]
        for args in (["init", "-q", "-b", "main"], ["add", "."], [*email, "commit", "-qm", "1"]):
            subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, timeout=30)
        kid = scripts("tree-kid", ["ok"])
        model = scripts("tree-parent", [{"tool_calls": [spawn("kid", kid)]}, "done", "done"])
        parent = create(
            client, prompt="p", model=model, mode="orchestrator", cwd=str(repo), worktree=True
        )
        wait_settled(client, parent["node_id"])
        child = children(client, parent["node_id"], 1)["kid"]
        assert child["cwd"] == parent["worktree"]["workdir"] != str(repo)
        client.post(f"/v1/nodes/{parent['node_id']}/worktree/abandon")

    def test_closing_the_parent_closes_children_and_grandchildren(
        self, client: httpx.Client, scripts: Any, daemon: Daemon
    ) -> None:
        worker = slow(scripts, "worker", "never", 60)
        model = scripts(
            "closing",
            [
                {"tool_calls": [spawn("inherits"), spawn("worker", worker)]},
                {"text": "holding on", "delay": 60},
            ],
        )
        parent = create(client, prompt="p", model=model, mode="orchestrator")["node_id"]
        kids = children(client, parent, 2)
        # Without a model of its own the child plays its parent's script (as a base
        # node it has no spawn-child: that call fails, and it holds on in the next turn).
        assert kids["inherits"]["model"] == model and kids["inherits"]["mode"] == "base"
        inherits = kids["inherits"]["node_id"]
        grandchild = create(client, no_kickoff=True, parent=inherits, model=worker)["node_id"]
        closed = client.post(f"/v1/nodes/{parent}/close", json={"reason": "enough"})
        assert closed.json()["status"] == "cancelled"
        for node_id, because in (
            (inherits, parent),
            (kids["worker"]["node_id"], parent),
            (grandchild, inherits),
        ):
            poll = client.get(f"/v1/nodes/{node_id}/outcome").json()
            assert poll["node_status"] == "cancelled"
            assert poll["outcome"]["reason"] == "cancelled"
            assert poll["outcome"]["detail"]["message"] == f"its parent {because} was closed"
        # The closed children's outcomes never woke the (settled) parent.
        assert statuses(daemon, parent, "cancelled").count("running") == 1
        assert runs(client, parent) == 1

    def test_relaunching_the_root_closes_its_children_without_telling_it(
        self, client: httpx.Client, scripts: Any, daemon: Daemon
    ) -> None:
        worker = slow(scripts, "relaunch-worker", "never", 60)
        model = scripts(
            "relaunched", [{"tool_calls": [spawn("worker", worker)]}, {"text": "hold", "delay": 60}]
        )
        root = create(client, prompt="p", model=model, mode="orchestrator")["node_id"]
        first = children(client, root, 1)["worker"]["node_id"]
        assert client.post(f"/v1/nodes/{root}/relaunch-root").status_code == 200
        # The fresh run spawns its worker again, under the same name.
        kids = eventually(
            lambda: [n for n in client.get("/v1/nodes").json() if n["parent"] == root],
            lambda kids: len(kids) >= 2,
            what="the relaunched root spawning again",
        )
        second = next(n for n in kids if n["node_id"] != first)
        assert second["name"] == "worker" and second["status"] == "running"
        assert client.get(f"/v1/nodes/{first}").json()["status"] == "cancelled"
        told = query(daemon, "SELECT body FROM heron_messages WHERE node_id = ?", root)
        assert [body for (body,) in told] == ["p", "p"]
        client.post(f"/v1/nodes/{root}/close")


class TestDelivery:
    def test_an_orchestrator_ending_its_turn_sleeps_until_its_child_reports(
        self, client: httpx.Client, scripts: Any, daemon: Daemon
    ) -> None:
        child = slow(scripts, "late", "the late child finished", 3)
        model = scripts(
            "dormant",
            [
                {"tool_calls": [spawn("late", child)]},
                "I will wait for my child.",
                "Thanks: the child finished.",
            ],
        )
        parent = create(client, prompt="go", model=model, mode="orchestrator")["node_id"]
        wait_status(client, parent, "dormant")
        assert client.get(f"/v1/nodes/{parent}/outcome").json()["state"] == "pending"
        outcome = wait_settled(client, parent)["outcome"]
        assert outcome["output_text"] == "Thanks: the child finished."
        assert runs(client, parent) == 2
        said = conversation(daemon, parent)
        assert "('late') completed." in said and said.count("the late child finished") == 1

    def test_outcome_delivery_on_create_wakes_a_dormant_parent_with_its_payload(
        self, client: httpx.Client, scripts: Any, daemon: Daemon
    ) -> None:
        parent = create(client, no_kickoff=True, model=scripts("woken", ["Noted."]))["node_id"]
        quiet = create(
            client,
            prompt="q",
            parent=parent,
            model=scripts("quiet", ["quiet result"]),
            outcome_delivery={"action": "none"},
        )["node_id"]
        wait_settled(client, quiet)
        create(
            client,
            prompt="lint",
            parent=parent,
            model=scripts("lint", ["lint is clean"]),
            outcome_delivery={"action": "message", "payload": "the lint lane"},
        )
        outcome = wait_settled(client, parent)["outcome"]
        assert outcome["output_text"] == "Noted."
        said = conversation(daemon, parent)
        assert "Note: the lint lane" in said and "lint is clean" in said
        assert "quiet result" not in said
        assert runs(client, parent) == 1

    def test_a_long_outcome_reaches_the_parent_cut_to_size(
        self, client: httpx.Client, scripts: Any, daemon: Daemon
    ) -> None:
        parent = create(client, no_kickoff=True, model=scripts("reader", ["Read it."]))["node_id"]
        long = "word " * 2000 + "THE-END"
        child = create(
            client,
            prompt="write a lot",
            parent=parent,
            model=scripts("verbose", [long]),
            outcome_delivery={"action": "message"},
        )["node_id"]
        wait_settled(client, parent)
        ((body,),) = query(daemon, "SELECT body FROM heron_messages WHERE node_id = ?", parent)
        assert body.startswith(f"Child {child} completed.\nOutcome: {{")
        assert "THE-END" not in body and "more characters)" in body
        assert len(body) < 2500


class TestYieldAndWait:
    def test_yield_hands_the_turn_back_and_the_child_wakes_the_parent(
        self, client: httpx.Client, scripts: Any, daemon: Daemon
    ) -> None:
        child = slow(scripts, "yield-child", "the worker is done", 3)
        model = scripts(
            "yielding",
            [
                {"tool_calls": [spawn("worker", child)]},
                {"tool_calls": [call("wait-children", timeout_seconds=60)]},
                "Back to work.",
            ],
        )
        parent = create(client, prompt="go", model=model, mode="orchestrator")["node_id"]
        children(client, parent, 1)
        answer = client.post(f"/v1/nodes/{parent}/yield", json={"reason": "let it work"})
        assert answer.status_code == 200 and answer.json()["status"] == "dormant"
        outcome = wait_settled(client, parent)["outcome"]
        assert outcome["output_text"] == "Back to work."
        logged = statuses(daemon, parent, "completed")
        assert logged == ["running", "dormant", "running", "completed"]
        assert runs(client, parent) == 2
        assert "the worker is done" in conversation(daemon, parent)
        again = client.post(f"/v1/nodes/{parent}/yield")
        assert again.status_code == 409 and again.json()["error"]["code"] == "node_settled"

    def test_yield_on_a_node_that_is_not_running_leaves_it(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        node_id = create(client, no_kickoff=True, model=scripts("idle", ["x"]))["node_id"]
        answer = client.post(f"/v1/nodes/{node_id}/yield")
        assert answer.status_code == 200 and answer.json()["status"] == "dormant"
        assert answer.json()["runs"] == 0

    def test_wait_parks_the_node_until_the_named_children_settle(
        self, client: httpx.Client, scripts: Any, daemon: Daemon
    ) -> None:
        first = slow(scripts, "first", "first part done", 2)
        second = slow(scripts, "second", "second part done", 4)
        model = scripts(
            "waiting",
            [
                {"tool_calls": [spawn("first", first), spawn("second", second)]},
                {"tool_calls": [call("wait-children", children=["first"])]},
                "Both parts arrived.",
            ],
        )
        parent = create(client, prompt="go", model=model, mode="orchestrator")["node_id"]
        kids = children(client, parent, 2)
        ids = [kids["first"]["node_id"], kids["second"]["node_id"]]
        answer = client.post(f"/v1/nodes/{parent}/wait", json={"children": ids})
        assert answer.status_code == 200, answer.text
        parked = answer.json()
        assert parked["node_id"] == parent and parked["status"] == "dormant"
        assert sorted(parked["pending"] + parked["settled"]) == sorted(ids)
        assert parked["deadline_at"] is None
        outcome = wait_settled(client, parent)["outcome"]
        assert outcome["output_text"] == "Both parts arrived."
        # One wake-up for both children (the first settling alone did not wake it).
        assert runs(client, parent) == 2
        said = conversation(daemon, parent)
        assert said.count("Every child you waited for has settled.") == 1
        assert "first part done" in said and "second part done" in said

    def test_a_wait_with_a_timeout_wakes_the_node_with_what_is_still_working(
        self, client: httpx.Client, scripts: Any, daemon: Daemon
    ) -> None:
        child = slow(scripts, "glacial", "too late", 60)
        model = scripts(
            "impatient",
            [{"tool_calls": [spawn("glacial", child)]}, "Waiting.", "Woke up.", "Again."],
        )
        parent = create(client, prompt="go", model=model, mode="orchestrator")["node_id"]
        wait_status(client, parent, "dormant")
        glacial = children(client, parent, 1)["glacial"]["node_id"]
        body = {"children": [glacial], "timeout_seconds": 1}
        parked = client.post(f"/v1/nodes/{parent}/wait", json=body).json()
        assert parked["pending"] == [glacial] and parked["deadline_at"] is not None
        eventually(
            lambda: runs(client, parent), lambda n: n >= 2, timeout=20, what="the wait timing out"
        )
        # Woken, it answers; its child is still working, so it sleeps again.
        wait_status(client, parent, "dormant")
        said = conversation(daemon, parent)
        assert "Your wait for your children timed out." in said
        assert f"Child {glacial} is still working (running)." in said
        client.post(f"/v1/nodes/{parent}/close")


@pytest.mark.slow
def test_a_wait_survives_a_restart_and_times_out_after_it(tmp_path: Path) -> None:
    default = write_script(tmp_path, "default", ["default"])
    daemon = Daemon(tmp_path / "home", {"HERON_PROVIDER": default}).start()
    try:
        child = write_script(tmp_path, "glacial", [{"text": "too late", "delay": 60}])
        steps = [{"tool_calls": [spawn("glacial", child)]}, "Waiting.", "Woke up."]
        model = write_script(tmp_path, "restart", steps)
        with daemon.client() as client:
            parent = create(client, prompt="go", model=model, mode="orchestrator")["node_id"]
            wait_status(client, parent, "dormant")
            glacial = children(client, parent, 1)["glacial"]["node_id"]
            body = {"children": [glacial], "timeout_seconds": 3}
            assert client.post(f"/v1/nodes/{parent}/wait", json=body).status_code == 200
        daemon.kill()
        daemon.start()
        with daemon.client() as client:
            eventually(
                lambda: runs(client, parent),
                lambda n: n >= 2,
                what="the wait timing out after the restart",
            )

            wait_status(client, parent, "dormant")
            assert "Your wait for your children timed out." in conversation(daemon, parent)
            assert client.get(f"/v1/nodes/{glacial}").json()["status"] == "running"
            client.post(f"/v1/nodes/{parent}/close")
    finally:
        daemon.stop()


class TestBadInput:
    def test_children_are_managed_only_by_their_parent(
        self, client: httpx.Client, scripts: Any, daemon: Daemon
    ) -> None:
        kid_model = slow(scripts, "kid", "never", 60)
        owner_model = scripts(
            "owner", [{"tool_calls": [spawn("kid", kid_model)]}, {"text": "hold", "delay": 60}]
        )
        owner = create(client, prompt="o", model=owner_model, mode="orchestrator")["node_id"]
        kid = children(client, owner, 1)["kid"]["node_id"]
        other_model = scripts(
            "other",
            [
                {
                    "tool_calls": [
                        call("message-child", child=kid, body="hi"),
                        call("close-child", child=kid),
                        call("message-child", child="nope", body="x"),
                        call("wait-children"),
                        call("list-children"),
                    ]
                },
                "ok",
            ],
        )
        other = create(client, prompt="x", model=other_model, mode="orchestrator")["node_id"]
        wait_settled(client, other)
        assert sorted(tool_statuses(daemon, other)) == [
            ("close-child", "error"),
            ("list-children", "ok"),
            ("message-child", "error"),
            ("message-child", "error"),
            ("wait-children", "error"),
        ]
        said = conversation(daemon, other)
        assert f"node {kid} is not a child of yours (its parent is {owner})" in said
        assert "you have no child 'nope' (your children: none yet)" in said
        assert "you have no children to wait for" in said
        assert client.get(f"/v1/nodes/{kid}").json()["status"] == "running"
        # The routes refuse children that are not the node's own.
        for strangers, not_children in (([kid, other], [other]), (["n-nosuchnode"], None)):
            answer = client.post(f"/v1/nodes/{owner}/wait", json={"children": strangers})
            assert answer.status_code == 422
            error = answer.json()["error"]
            assert error["code"] == "not_a_child"
            assert error["details"]["not_children"] == (not_children or strangers)
        for body in ({"children": []}, {}, {"children": [kid], "timeout_seconds": 0}):
            answer = client.post(f"/v1/nodes/{owner}/wait", json=body)
            assert answer.status_code == 422 and answer.json()["error"]["code"] == "invalid_request"
        settled = client.post(f"/v1/nodes/{other}/wait", json={"children": [kid]})
        assert settled.status_code == 409 and settled.json()["error"]["code"] == "node_settled"
        client.post(f"/v1/nodes/{owner}/close")

    def test_spawn_refusals_are_tool_errors(
        self, client: httpx.Client, scripts: Any, daemon: Daemon
    ) -> None:
        # The first twin is still at work when the second spawn checks the name.
        kid = scripts("dup-kid", [{"text": "kid done", "delay": 3}])
        model = scripts(
            "refusals",
            [
                {
                    "tool_calls": [
                        spawn("twin", kid),
                        spawn("twin", kid),
                        spawn("late", kid, deadline="soon"),
                        spawn("shell", kid, scopes=["act"]),
                        spawn("bad-model", "nosuch:model"),
                    ]
                },
                {"tool_calls": [call("wait-children", children=["twin"])]},
                "done",
            ],
        )
        node_id = create(client, prompt="x", model=model, mode="orchestrator", scopes=["ask"])[
            "node_id"
        ]
        wait_settled(client, node_id)
        assert sorted(tool_statuses(daemon, node_id)) == [
            *[("spawn-child", "error")] * 4,
            ("spawn-child", "ok"),
            ("wait-children", "ok"),
        ]
        said = conversation(daemon, node_id)
        assert "you already have a child named 'twin' at work" in said
        assert "a child cannot have scopes you lack: act" in said
        assert "cannot spawn that child: deadline" in said
        assert "cannot spawn that child: unknown provider" in said
        (twin,) = [n for n in client.get("/v1/nodes").json() if n["parent"] == node_id]
        assert twin["name"] == "twin" and twin["scopes"] == ["ask"]

    def test_outcome_delivery_is_checked_at_create(self, client: httpx.Client) -> None:
        parent = create(client, no_kickoff=True)["node_id"]
        for delivery in (
            {"action": "email"},
            {"payload": "x"},
            {"action": "message", "extra": 1},
            {"action": "message", "payload": 7},
        ):
            body = {"no_kickoff": True, "parent": parent, "outcome_delivery": delivery}
            answer = client.post("/v1/nodes", json=body)
            assert answer.status_code == 422, delivery
            assert answer.json()["error"]["code"] == "invalid_outcome_delivery"
        rootless = client.post("/v1/nodes", json={"outcome_delivery": {"action": "message"}})
        assert rootless.status_code == 422
        assert "needs a parent" in rootless.json()["error"]["message"]

    def test_a_base_node_has_no_orchestrator_tools(
        self, client: httpx.Client, scripts: Any, daemon: Daemon
    ) -> None:
        model = scripts("base", [{"tool_calls": [spawn("x")]}, "could not"])
        node_id = create(client, prompt="x", model=model)["node_id"]
        wait_settled(client, node_id)
        said = conversation(daemon, node_id)
        assert "unknown tool 'spawn-child'" in said and "push-report" in said
        assert query(daemon, "SELECT count(*) FROM heron_nodes WHERE parent = ?", node_id) == [(0,)]
