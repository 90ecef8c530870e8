"""Outcome delivery exactly once, across revives and restarts; spawn replay; children
and a closing or settled parent (real daemons, scripted models)."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

import httpx
from tests.support.daemon import (
    Daemon,
    create,
    forget_tool_call_step,
    wait_settled,
    wait_status,
    wait_tool_call_recorded,
    write_script,
)
from tests.support.orchestration import call, children, conversation, query, spawn, tool_statuses
from tests.support.polling import eventually


def delivered(daemon: Daemon, node_id: str) -> Any:
    ((extra,),) = query(daemon, "SELECT extra FROM heron_nodes WHERE node_id = ?", node_id)
    return json.loads(extra).get("delivered")


class TestExactlyOnce:
    def test_a_child_settling_as_its_parent_waits_is_handed_over_once(
        self, client: httpx.Client, scripts: Any, daemon: Daemon
    ) -> None:
        # The child settles while wait-children is being called: the tool and the
        # message delivery race for it; whichever wins, the parent reads it once.
        parents = []
        for i in range(6):
            kid = scripts(f"racer-{i}", [{"text": f"racer {i} result", "delay": 0.05 * i}])
            model = scripts(
                f"race-{i}",
                [
                    {"tool_calls": [spawn("racer", kid)]},
                    {"tool_calls": [call("wait-children", timeout_seconds=20)]},
                    "Got it.",
                    "Got it again.",
                ],
            )
            parents.append(create(client, prompt="go", model=model, mode="orchestrator"))
        for i, parent in enumerate(parents):
            node_id = parent["node_id"]
            wait_settled(client, node_id)
            said = conversation(daemon, node_id)
            assert said.count(f"racer {i} result") == 1, said
            kid = children(client, node_id, 1)["racer"]
            claim = delivered(daemon, kid["node_id"])
            assert claim["how"] in ("wait-children", "message")
            settled_at = query(
                daemon, "SELECT settled_at FROM heron_outcomes WHERE node_id = ?", kid["node_id"]
            )
            assert claim["settled_at"] == settled_at[0][0]

    def test_a_revived_child_reports_its_new_outcome_too(
        self, client: httpx.Client, scripts: Any, daemon: Daemon, tmp_path: Path
    ) -> None:
        flaky = scripts("flaky-kid", [{"error": "overloaded", "status": 503}])
        parent = create(
            client,
            prompt="go",
            mode="orchestrator",
            root_lifecycle="resident",
            model=scripts(
                "resident",
                [
                    {"tool_calls": [spawn("flaky", flaky)]},
                    "Waiting.",
                    "It failed.",
                    "It worked.",
                ],
            ),
        )["node_id"]
        kid = children(client, parent, 1)["flaky"]["node_id"]
        wait_settled(client, kid)
        eventually(
            lambda: "It failed." in conversation(daemon, parent),
            what="the failure reaching the parent",
        )
        wait_status(client, parent, "dormant")
        first = delivered(daemon, kid)
        Path(flaky.removeprefix("scripted:")).write_text(json.dumps(["second try ok"]))
        assert client.post(f"/v1/nodes/{kid}/revive").status_code == 200
        eventually(
            lambda: "It worked." in conversation(daemon, parent),
            what="the revived child's outcome arriving",
        )
        said = conversation(daemon, parent)
        assert said.count("('flaky') failed.") == 1 and said.count("second try ok") == 1
        second = delivered(daemon, kid)
        assert second["settled_at"] != first["settled_at"] and second["how"] == "message"
        client.post(f"/v1/nodes/{parent}/close")

    def test_an_outcome_nobody_delivered_arrives_after_a_restart(self, tmp_path: Path) -> None:
        default = write_script(tmp_path, "default", ["default"])
        daemon = Daemon(tmp_path / "home", {"HERON_PROVIDER": default}).start()
        try:
            parent_model = write_script(tmp_path, "parent", ["Heard."])
            with daemon.client() as client:
                parent = create(client, no_kickoff=True, model=parent_model)["node_id"]
                kid = create(
                    client,
                    prompt="k",
                    parent=parent,
                    model=write_script(tmp_path, "kid", ["restart-proof result"]),
                    outcome_delivery={"action": "message"},
                )["node_id"]
                wait_settled(client, parent)
            daemon.stop()
            # As if the daemon died between the child settling and its delivery: the
            # claim, the message and the parent's answer never happened.
            with sqlite3.connect(daemon.home / "heron.db") as db:
                (extra,) = db.execute(
                    "SELECT extra FROM heron_nodes WHERE node_id = ?", (kid,)
                ).fetchone()
                db.execute(
                    "UPDATE heron_nodes SET extra = ? WHERE node_id = ?",
                    (json.dumps({**json.loads(extra), "delivered": None}), kid),
                )
                db.execute("DELETE FROM heron_messages WHERE node_id = ?", (parent,))
                db.execute("DELETE FROM heron_outcomes WHERE node_id = ?", (parent,))
                db.execute(
                    "UPDATE heron_nodes SET status = 'dormant', settled_at = NULL, state = NULL"
                    " WHERE node_id = ?",
                    (parent,),
                )
            daemon.start()
            with daemon.client() as client:
                outcome = wait_settled(client, parent)["outcome"]
                assert outcome["output_text"] == "Heard."
                assert "restart-proof result" in conversation(daemon, parent)
                assert delivered(daemon, kid)["how"] == "message"
                # Started again, nothing is delivered twice.
            daemon.stop()
            daemon.start()
            with daemon.client() as client:
                assert client.get(f"/v1/nodes/{parent}").json()["runs"] == 2
            told = query(daemon, "SELECT body FROM heron_messages WHERE node_id = ?", parent)
            assert len(told) == 1
        finally:
            daemon.stop()

    def test_a_revived_parent_hears_from_the_children_that_settled_meanwhile(
        self, client: httpx.Client, scripts: Any, daemon: Daemon
    ) -> None:
        flaky = scripts("flaky-parent", [{"error": "overloaded", "status": 503}])
        # Created asleep, so it cannot fail before its child exists (no child is
        # created under a settled parent); the message wakes it, and it fails.
        parent = create(client, prompt="go", model=flaky, no_kickoff=True)["node_id"]
        kid = create(
            client,
            prompt="k",
            parent=parent,
            model=scripts("patient-kid", [{"text": "done while you were down", "delay": 1}]),
            outcome_delivery={"action": "message"},
        )["node_id"]
        woke = client.post(f"/v1/nodes/{parent}/messages", json={"body": "start"})
        assert woke.status_code == 202, woke.text
        assert wait_settled(client, parent)["node_status"] == "failed"
        wait_settled(client, kid)
        assert delivered(daemon, kid) is None  # nobody to tell: kept for a revive
        Path(flaky.removeprefix("scripted:")).write_text(json.dumps(["Back.", "Heard it."]))
        assert client.post(f"/v1/nodes/{parent}/revive").status_code == 200
        eventually(
            lambda: "done while you were down" in conversation(daemon, parent),
            what="the revived parent hearing",
        )
        assert delivered(daemon, kid)["how"] == "message"
        assert conversation(daemon, parent).count("done while you were down") == 1


def test_a_spawn_run_again_after_a_crash_returns_its_child(tmp_path: Path) -> None:
    default = write_script(tmp_path, "default", ["default"])
    daemon = Daemon(tmp_path / "home", {"HERON_PROVIDER": default}).start()
    try:
        kid = write_script(tmp_path, "kid", [{"text": "kid", "delay": 60}])
        steps = [
            {"tool_calls": [spawn("only", kid, deliver_outcome=False)]},
            {"text": "hold", "delay": 60},
        ]
        model = write_script(tmp_path, "spawner", steps)
        with daemon.client() as client:
            parent = create(client, prompt="go", model=model, mode="orchestrator")["node_id"]
            first = children(client, parent, 1)["only"]["node_id"]
            eventually(
                lambda: tool_statuses(daemon, parent),
                lambda statuses: ("spawn-child", "ok") in statuses,
            )
            wait_tool_call_recorded(daemon, parent)
        daemon.kill()
        # The crash came before the spawn's step was recorded: it runs again.
        forget_tool_call_step(daemon, parent)
        write_script(tmp_path, "spawner", [steps[0], "All set."])
        daemon.start()
        with daemon.client() as client:
            assert wait_settled(client, parent)["outcome"]["output_text"] == "All set."
            kids = [n for n in client.get("/v1/nodes").json() if n["parent"] == parent]
            assert [k["node_id"] for k in kids] == [first]
            assert f"Spawned child {first} ('only')" in conversation(daemon, parent)
            assert ("spawn-child", "error") not in tool_statuses(daemon, parent)
            client.post(f"/v1/nodes/{first}/close")
    finally:
        daemon.stop()


class TestSettledParents:
    def test_no_child_is_created_under_a_settled_parent(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        parent = create(client, prompt="x", model=scripts("done", ["done"]))["node_id"]
        wait_settled(client, parent)
        refused = client.post("/v1/nodes", json={"prompt": "late", "parent": parent})
        assert refused.status_code == 409, refused.text
        assert refused.json()["error"]["code"] == "node_settled"
        assert [n for n in client.get("/v1/nodes").json() if n["parent"] == parent] == []

    def test_a_close_racing_creates_leaves_no_child_running(
        self, client: httpx.Client, scripts: Any, daemon: Daemon
    ) -> None:
        busy = scripts("busy", [{"text": "busy", "delay": 60}])
        parent = create(client, no_kickoff=True)["node_id"]
        answers: list[int] = []

        def spawn_many() -> None:
            with daemon.client() as own:
                for _ in range(15):
                    body = {"prompt": "w", "parent": parent, "model": busy}
                    answers.append(own.post("/v1/nodes", json=body).status_code)

        creators = [threading.Thread(target=spawn_many) for _ in range(2)]
        for thread in creators:
            thread.start()
        eventually(
            lambda: any(n["parent"] == parent for n in client.get("/v1/nodes").json()),
            interval=0.01,
        )

        assert client.post(f"/v1/nodes/{parent}/close").status_code == 200
        for thread in creators:
            thread.join(timeout=60)
        assert set(answers) <= {201, 409} and 201 in answers
        kids = [n for n in client.get("/v1/nodes").json() if n["parent"] == parent]
        assert len(kids) == answers.count(201)
        for kid in kids:
            assert wait_settled(client, kid["node_id"])["node_status"] == "cancelled"

    def test_closing_a_parent_closes_a_running_grandchild(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        grand = scripts("grand", [{"text": "deep", "delay": 60}])
        middle = scripts(
            "middle", [{"tool_calls": [spawn("grand", grand)]}, {"text": "hold", "delay": 60}]
        )
        parent = create(client, no_kickoff=True)["node_id"]
        mid = create(client, prompt="g", parent=parent, mode="orchestrator", model=middle)
        grandchild = children(client, mid["node_id"], 1)["grand"]["node_id"]
        wait_status(client, grandchild, "running")
        assert client.post(f"/v1/nodes/{parent}/close").status_code == 200
        for node_id in (mid["node_id"], grandchild):
            poll = wait_settled(client, node_id)
            assert poll["node_status"] == "cancelled"
        assert (
            client.get(f"/v1/nodes/{grandchild}/outcome").json()["outcome"]["detail"]["message"]
            == f"its parent {mid['node_id']} was closed"
        )


def test_the_outcomes_of_one_wait_share_a_budget_under_the_message_cap() -> None:
    from heron.runtime.orchestration._service import (
        MAX_OUTCOME,
        MIN_OUTCOME,
        OUTCOMES_BUDGET,
        outcome_limit,
        outcome_text,
    )

    assert outcome_limit(1) == MAX_OUTCOME and outcome_limit(10_000) == MIN_OUTCOME
    assert outcome_limit(256) * 256 <= OUTCOMES_BUDGET
    row = {"node_id": "n-kid", "name": None, "status": "completed"}
    outcome = {"kind": "result", "output_text": "x " * 50_000}
    texts = [outcome_text(row, outcome, limit=outcome_limit(256)) for _ in range(256)]
    assert len("\n\n".join(texts)) < 256 * 1024
    assert all("cut; the whole outcome is at GET /v1/nodes/n-kid/outcome" in t for t in texts)
