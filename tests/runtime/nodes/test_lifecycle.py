"""The core node lifecycle over plain HTTP on the daemon's Unix socket."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import httpx
from tests.support.daemon import SLOW, Daemon, create, query, wait_logged, wait_settled, wait_status

TIME = {"name": "get-current-time", "arguments": {}}


class TestCreate:
    def test_returns_at_once_running_and_settles_with_the_answer(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        model = scripts("answer", [{"tool_calls": [TIME]}, "It is noon."])
        node = create(client, prompt="What time is it?", model=model, name="clock")
        assert node["status"] == "running"
        assert node["root"] is True and node["parent"] is None
        assert (node["name"], node["prompt"], node["runs"]) == ("clock", "What time is it?", 1)
        poll = wait_settled(client, node["node_id"])
        assert poll["outcome"] == {
            "kind": "result",
            "structured_result": None,
            "output_text": "It is noon.",
            "final_report_path": None,
            "stop_reason": "end_turn",
        }
        assert poll["node_status"] == "completed"
        done = client.get(f"/v1/nodes/{node['node_id']}").json()
        assert done["turns"] == 2 and done["input_tokens"] > 0 and done["output_tokens"] > 0
        assert done["settled_at"] is not None

    def test_a_reused_node_id_is_a_409_and_changes_nothing(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        create(client, prompt="one", node_id="twice", model=scripts("a", ["first"]))
        again = client.post("/v1/nodes", json={"prompt": "two", "node_id": "twice"})
        assert again.status_code == 409
        assert again.json()["error"]["code"] == "node_id_exists"
        assert client.get("/v1/nodes/twice").json()["prompt"] == "one"

    def test_a_child_is_not_a_root_unless_it_says_so(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        model = scripts("quick", ["ok"])
        parent = create(client, prompt="parent", model=model)
        child = create(client, prompt="child", parent=parent["node_id"], model=model)
        assert child["root"] is False and child["parent"] == parent["node_id"]
        missing = client.post("/v1/nodes", json={"prompt": "x", "parent": "no-such-node"})
        assert missing.status_code == 404

    def test_list_is_a_plain_array_filterable_by_status_and_root(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        waiting = create(client, no_kickoff=True, root=False, model=scripts("idle", ["ok"]))
        listed = client.get("/v1/nodes").json()
        assert isinstance(listed, list)
        assert waiting["node_id"] in {n["node_id"] for n in listed}
        dormant = client.get("/v1/nodes", params={"status": "dormant", "root": "false"}).json()
        assert waiting["node_id"] in {n["node_id"] for n in dormant}
        assert all(n["status"] == "dormant" and n["root"] is False for n in dormant)
        roots = client.get("/v1/nodes", params={"root": "true"}).json()
        assert waiting["node_id"] not in {n["node_id"] for n in roots}

    def test_list_pages_with_limit_and_the_next_cursor_header(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        model = scripts("paged", ["ok"])
        for _ in range(5):
            create(client, no_kickoff=True, model=model)
        everything = client.get("/v1/nodes").json()
        assert "heron-next-cursor" not in client.get("/v1/nodes").headers  # no limit: all
        pages: list[list[dict[str, Any]]] = []
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {"limit": 2, **({"after": cursor} if cursor else {})}
            response = client.get("/v1/nodes", params=params)
            assert response.status_code == 200
            page = response.json()
            assert isinstance(page, list) and 1 <= len(page) <= 2  # still a plain array
            pages.append(page)
            cursor = response.headers.get("heron-next-cursor")
            if cursor is None:
                break
        assert [n["node_id"] for p in pages for n in p] == [n["node_id"] for n in everything]
        assert all(len(p) == 2 for p in pages[:-1])
        # Filters apply before the limit.
        dormant = client.get("/v1/nodes", params={"status": "dormant", "limit": 1})
        assert [n["status"] for n in dormant.json()] == ["dormant"]
        for bad in ({"limit": 0}, {"limit": 1001}, {"limit": "x"}):
            assert client.get("/v1/nodes", params=bad).status_code == 422, bad
        wrong = client.get("/v1/nodes", params={"after": "not a cursor"})
        assert wrong.status_code == 400 and wrong.json()["error"]["code"] == "invalid_cursor"

    def test_invalid_create_parameters_are_422_with_a_code(self, client: httpx.Client) -> None:
        cases = {
            "invalid_cwd": {"cwd": "relative/dir"},
            "invalid_model": {"model": "nonsense:thing"},
            "invalid_output_schema": {"output_schema": {"type": "no-such-type"}},
        }
        for code, body in cases.items():
            response = client.post("/v1/nodes", json={"prompt": "x", **body})
            assert response.status_code == 422, body
            assert response.json()["error"]["code"] == code
        bad_deadline = client.post("/v1/nodes", json={"prompt": "x", "deadline": "soon"})
        assert bad_deadline.status_code == 422

    def test_unknown_scopes_are_refused_naming_the_known_ones(self, client: httpx.Client) -> None:
        for scopes in (["memory-read"], ["ask", "none"], [""]):
            response = client.post("/v1/nodes", json={"prompt": "x", "scopes": scopes})
            assert response.status_code == 422, scopes
            error = response.json()["error"]
            assert error["code"] == "invalid_request"
            if scopes != [""]:
                (problem,) = error["details"]
                assert (
                    "known scopes: act, ask, memory:read, memory:write, net, schedule"
                    in (problem["msg"])
                )
        typo = client.post("/v1/nodes", json={"prompt": "x", "scopes": ["memory-read"]})
        assert "did you mean 'memory:read'?" in typo.json()["error"]["details"][0]["msg"]
        # An empty list is "no scopes", kept as such.
        none = client.post("/v1/nodes", json={"no_kickoff": True, "scopes": []})
        assert none.status_code == 201 and none.json()["scopes"] == []

    def test_an_output_schema_whose_ref_leads_nowhere_is_refused_at_create(
        self, client: httpx.Client
    ) -> None:
        broken = {
            "type": "object",
            "$defs": {"Name": {"type": "string"}},
            "properties": {"a": {"$ref": "#/$defs/Name"}, "b": {"$ref": "#/$defs/Missing"}},
        }
        remote = {"$ref": "https://example.invalid/schema.json"}
        for schema in (broken, remote, json.dumps(broken)):
            response = client.post("/v1/nodes", json={"prompt": "x", "output_schema": schema})
            assert response.status_code == 422, schema
            error = response.json()["error"]
            assert error["code"] == "invalid_output_schema"
            assert "does not resolve" in error["message"]
        assert error["details"] == ["/properties/b: $ref '#/$defs/Missing' does not resolve"]
        # References that resolve (and "$ref" keys that are data, in an enum) are fine.
        fine = {
            "$defs": {"Name": {"type": "string"}},
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/Name"}, "c": {"enum": [{"$ref": "#/x"}]}},
        }
        ok = client.post("/v1/nodes", json={"no_kickoff": True, "output_schema": fine})
        assert ok.status_code == 201, ok.text


class TestMessages:
    def test_no_kickoff_waits_dormant_until_a_message_wakes_it(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        node = create(client, prompt="later", no_kickoff=True, model=scripts("w", ["awake"]))
        assert node["status"] == "dormant" and node["runs"] == 0
        assert client.get(f"/v1/nodes/{node['node_id']}/outcome").json()["state"] == "pending"
        sent = client.post(f"/v1/nodes/{node['node_id']}/messages", json={"body": "go now"})
        assert sent.status_code == 202 and sent.json()["delivery"] == "woke"
        assert wait_settled(client, node["node_id"])["outcome"]["output_text"] == "awake"

    def test_a_running_node_reads_a_message_at_its_next_turn(
        self, client: httpx.Client, scripts: Any, daemon: Daemon
    ) -> None:
        model = scripts("m", [{"tool_calls": [TIME], "delay": 1.5}, "noted"])
        node = create(client, prompt="work", model=model)
        node_id = node["node_id"]
        sent = client.post(f"/v1/nodes/{node_id}/messages", json={"body": "also the lane"})
        assert sent.json()["delivery"] == "queued"
        wait_settled(client, node_id)
        assert client.get(f"/v1/nodes/{node_id}").json()["runs"] == 1  # no second run
        claimed = query(
            daemon, "SELECT claimed_run FROM heron_messages WHERE node_id = ? ORDER BY 1", node_id
        )
        assert claimed == [(1,), (1,)]  # the kickoff and the follow-up, both in run 1
        state = query(daemon, "SELECT state FROM heron_nodes WHERE node_id = ?", node_id)[0][0]
        assert "also the lane" in state

    def test_a_resident_root_stays_dormant_for_follow_ups(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        model = scripts("r", ["first answer", "second answer"])
        node = create(client, prompt="hi", root_lifecycle="resident", model=model)
        node_id = node["node_id"]
        first = wait_settled(client, node_id)
        assert first["outcome"]["output_text"] == "first answer"
        wait_status(client, node_id, "dormant")
        woke = client.post(f"/v1/nodes/{node_id}/messages", json={"body": "more?"})
        assert woke.json()["delivery"] == "woke"
        again = wait_status(client, node_id, "dormant")
        assert again["runs"] == 2 and again["turns"] == 2
        # Its outcome is its latest answer, and agrees with its status.
        latest = client.get(f"/v1/nodes/{node_id}/outcome").json()
        assert latest["state"] == "settled" and latest["node_status"] == "dormant"
        assert latest["outcome"]["output_text"] == "second answer"

    def test_a_resident_root_at_work_on_a_later_message_is_pending_until_it_answers(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        model = scripts("r2", ["first answer", {"text": "second answer", "delay": 1.0}])
        node_id = create(client, prompt="hi", root_lifecycle="resident", model=model)["node_id"]
        wait_settled(client, node_id)
        wait_status(client, node_id, "dormant")
        client.post(f"/v1/nodes/{node_id}/messages", json={"body": "more?"})
        working = client.get(f"/v1/nodes/{node_id}/outcome").json()
        assert (working["state"], working["node_status"]) == ("pending", "running")
        assert working["outcome"] is None
        # A long poll waits for the new answer (not the stale first one).
        answered = client.get(f"/v1/nodes/{node_id}/outcome", params={"wait": 20}).json()
        assert answered["state"] == "settled"
        assert answered["outcome"]["output_text"] == "second answer"

    def test_cancelling_a_resident_fork_that_answered_settles_it_cancelled(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        model = scripts("r3", ["original answer", "fork answer"])
        source = create(client, prompt="hi", root_lifecycle="resident", model=model)["node_id"]
        wait_settled(client, source)
        wait_status(client, source, "dormant")
        fork = create(client, prompt="and you?", fork_from=source)["node_id"]
        answered = wait_settled(client, fork)
        assert answered["outcome"]["output_text"] == "fork answer"
        wait_status(client, fork, "dormant")
        closed = client.post(f"/v1/nodes/{fork}/close", json={"reason": "done with it"})
        assert closed.json()["status"] == "cancelled"
        poll = client.get(f"/v1/nodes/{fork}/outcome").json()
        assert (poll["node_status"], poll["outcome"]["kind"]) == ("cancelled", "failure")
        assert poll["outcome"]["reason"] == "cancelled"
        # The answer it had is not lost: it is kept among its previous outcomes.
        (kept,) = client.get(f"/v1/nodes/{fork}").json()["previous_outcomes"]
        assert kept["outcome"]["output_text"] == "fork answer" and kept["status"] == "dormant"

    def test_a_terminal_node_that_settled_takes_no_messages(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        node = create(client, prompt="hi", model=scripts("t", ["bye"]))
        wait_settled(client, node["node_id"])
        late = client.post(f"/v1/nodes/{node['node_id']}/messages", json={"body": "hello?"})
        assert late.status_code == 409 and late.json()["error"]["code"] == "node_settled"


class TestStopping:
    def test_interrupting_a_node_that_is_not_running_names_its_state(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        # The seed's codes: node_dormant for a node waiting for a message, node_settled.
        dormant = create(client, prompt="later", no_kickoff=True, model=scripts("d", ["x"]))
        refused = client.post(f"/v1/nodes/{dormant['node_id']}/interrupt")
        assert refused.status_code == 409
        assert refused.json()["error"]["code"] == "node_dormant"
        assert "send one to wake it" in refused.json()["error"]["message"]
        done = create(client, prompt="hi", model=scripts("s", ["bye"]))
        wait_settled(client, done["node_id"])
        settled = client.post(f"/v1/nodes/{done['node_id']}/interrupt")
        assert settled.status_code == 409
        assert settled.json()["error"]["code"] == "node_settled"

    def test_interrupt_stops_the_turn_and_keeps_the_node(
        self, client: httpx.Client, scripts: Any, daemon: Daemon
    ) -> None:
        model = scripts("slow", [SLOW, "resumed"])
        node_id = create(client, prompt="think", model=model)["node_id"]
        wait_logged(daemon, node_id, "node.turn.started")
        stopped = client.post(f"/v1/nodes/{node_id}/interrupt")
        assert stopped.status_code == 200 and stopped.json()["status"] == "interrupted"
        assert client.get(f"/v1/nodes/{node_id}/outcome").json()["state"] == "pending"
        again = client.post(f"/v1/nodes/{node_id}/interrupt")
        assert again.status_code == 409 and again.json()["error"]["code"] == "node_not_running"
        # The interrupted turn never answered, so the next message gets the script's
        # first step again: a fresh slow turn. Closing ends it for good.
        client.post(f"/v1/nodes/{node_id}/messages", json={"body": "carry on"})
        wait_status(client, node_id, "running")
        closed = client.post(f"/v1/nodes/{node_id}/close", json={"reason": "enough"})
        assert closed.json()["status"] == "cancelled"
        outcome = client.get(f"/v1/nodes/{node_id}/outcome").json()["outcome"]
        assert outcome["kind"] == "failure" and outcome["reason"] == "cancelled"
        assert outcome["detail"]["message"] == "enough"

    def test_close_on_a_dormant_node_and_twice(self, client: httpx.Client, scripts: Any) -> None:
        node_id = create(client, no_kickoff=True, model=scripts("d", ["x"]))["node_id"]
        assert client.post(f"/v1/nodes/{node_id}/close").json()["status"] == "cancelled"
        assert client.post(f"/v1/nodes/{node_id}/close").json()["status"] == "cancelled"
        poll = client.get(f"/v1/nodes/{node_id}/outcome").json()
        assert poll["state"] == "settled" and poll["outcome"]["reason"] == "cancelled"

    def test_closing_a_parent_closes_its_subtree(self, client: httpx.Client, scripts: Any) -> None:
        model = scripts("tree", [SLOW])
        parent = create(client, prompt="p", model=model)["node_id"]
        child = create(client, prompt="c", parent=parent, model=model)["node_id"]
        grandchild = create(client, no_kickoff=True, parent=child, model=model)["node_id"]
        client.post(f"/v1/nodes/{parent}/close")
        for node_id in (parent, child, grandchild):
            assert client.get(f"/v1/nodes/{node_id}").json()["status"] == "cancelled"

    def test_a_deadline_cancels_the_node_as_deadline_exceeded(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        node = create(client, prompt="slow", deadline="1s", model=scripts("late", [SLOW]))
        assert node["deadline_at"] is not None
        poll = wait_settled(client, node["node_id"])
        assert poll["outcome"]["kind"] == "failure"
        assert poll["outcome"]["reason"] == "deadline_exceeded"
        assert poll["node_status"] == "cancelled"

    def test_outcome_wait_answers_when_the_node_settles(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        node_id = create(client, prompt="x", model=scripts("w2", [{"text": "ok", "delay": 0.5}]))[
            "node_id"
        ]
        poll = client.get(f"/v1/nodes/{node_id}/outcome", params={"wait": 25}).json()
        assert poll["state"] == "settled" and poll["node_status"] == "completed"
        pending = client.get(f"/v1/nodes/{node_id}/outcome", params={"wait": 0}).json()
        assert pending["state"] == "settled"


class TestStructuredResults:
    SCHEMA: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "version": {"type": "string"}},
        "required": ["name", "version"],
        "additionalProperties": False,
    }

    def test_an_invalid_submission_goes_back_to_the_agent_then_a_valid_one_settles(
        self, client: httpx.Client, scripts: Any, daemon: Daemon
    ) -> None:
        bad = {"name": "submit-result", "arguments": {"result": {"name": "heron"}}}
        good = {
            "name": "submit-result",
            "arguments": {"result": {"name": "heron", "version": "0.1.0"}},
        }
        model = scripts("s", [{"tool_calls": [bad]}, {"tool_calls": [good]}])
        node = create(client, prompt="report", output_schema=self.SCHEMA, model=model)
        assert node["has_output_schema"] is True
        poll = wait_settled(client, node["node_id"])
        assert poll["outcome"]["kind"] == "result"
        assert poll["outcome"]["structured_result"] == {"name": "heron", "version": "0.1.0"}
        wait_logged(daemon, node["node_id"], "node.settled")
        events = query(
            daemon,
            "SELECT data FROM heron_events WHERE node_id = ? AND type = ? ORDER BY 1",
            node["node_id"],
            "node.tool_call.completed",
        )
        statuses = [e[0] for e in events]
        assert '"status": "error"' in statuses[0] and '"status": "ok"' in statuses[1]

    def test_a_result_submitted_as_a_message_arrives_is_kept_while_the_node_reads_it(
        self, client: httpx.Client, scripts: Any, daemon: Daemon
    ) -> None:
        good = {"name": "submit-result", "arguments": {"result": {"name": "a", "version": "1"}}}
        model = scripts("late-msg", [{"tool_calls": [good], "delay": 1.5}, "read it too"])
        node_id = create(client, prompt="r", output_schema=self.SCHEMA, model=model)["node_id"]
        wait_logged(daemon, node_id, "node.turn.started")
        sent = client.post(f"/v1/nodes/{node_id}/messages", json={"body": "one more thing"})
        assert sent.json()["delivery"] == "queued"
        outcome = wait_settled(client, node_id)["outcome"]
        assert outcome["kind"] == "result", outcome
        assert outcome["structured_result"] == {"name": "a", "version": "1"}
        assert outcome["output_text"] == "read it too"

    def test_the_schema_may_come_as_a_json_string(self, client: httpx.Client, scripts: Any) -> None:
        import json

        submit = {"name": "submit-result", "arguments": {"result": {"n": 3}}}
        schema = json.dumps({"type": "object", "properties": {"n": {"type": "integer"}}})
        node = create(
            client, prompt="n", output_schema=schema, model=scripts("j", [{"tool_calls": [submit]}])
        )
        assert wait_settled(client, node["node_id"])["outcome"]["structured_result"] == {"n": 3}

    def test_a_decline_is_an_outcome_value(self, client: httpx.Client, scripts: Any) -> None:
        decline = {
            "name": "decline",
            "arguments": {"reason": "no repo here", "code": "no_repo", "retryable": True},
        }
        model = scripts("dec", [{"tool_calls": [decline]}])
        node = create(client, prompt="report", output_schema=self.SCHEMA, model=model)
        outcome = wait_settled(client, node["node_id"])["outcome"]
        assert outcome == {
            "kind": "failure",
            "reason": "declined",
            "declined": {"reason": "no repo here", "code": "no_repo", "retryable": True},
            "detail": None,
        }

    def test_an_agent_that_never_submits_is_reminded_then_fails(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        model = scripts("never", ["I think it is done.", "Really done.", "Still done."])
        node = create(client, prompt="x", output_schema=self.SCHEMA, model=model)
        poll = wait_settled(client, node["node_id"])
        # Its own reason, not "crashed": nothing failed, the agent just never submitted.
        assert poll["outcome"]["reason"] == "no_result"
        assert poll["outcome"]["detail"]["error_type"] == "NoResultSubmitted"
        assert "without submitting" in poll["outcome"]["detail"]["message"]
        assert client.get(f"/v1/nodes/{node['node_id']}").json()["turns"] == 3

    def test_the_result_route_validates_against_the_schema(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        node_id = create(
            client, no_kickoff=True, output_schema=self.SCHEMA, model=scripts("x", ["x"])
        )["node_id"]
        bad = client.post(f"/v1/nodes/{node_id}/result", json={"result": {"name": 1}})
        assert bad.status_code == 422
        error = bad.json()["error"]
        assert error["code"] == "invalid_result"
        assert any("version" in d for d in error["details"])
        assert any("name" in d for d in error["details"])
        good = client.post(
            f"/v1/nodes/{node_id}/result", json={"result": {"name": "a", "version": "1"}}
        )
        assert good.status_code == 200 and good.json()["accepted"] is True
        plain = create(client, no_kickoff=True, model=scripts("y", ["y"]))["node_id"]
        refused = client.post(f"/v1/nodes/{plain}/result", json={"result": {}})
        assert refused.status_code == 409
        assert refused.json()["error"]["code"] == "no_output_schema"


class TestFailures:
    def test_a_provider_error_is_an_outcome_not_a_crash(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        model = scripts("down", [{"error": "upstream overloaded", "status": 529}])
        poll = wait_settled(client, create(client, prompt="x", model=model)["node_id"])
        assert poll["outcome"]["reason"] == "provider_error"
        assert "upstream overloaded" in poll["outcome"]["detail"]["message"]
        assert poll["node_status"] == "failed"

    def test_an_unknown_tool_call_is_answered_and_the_node_goes_on(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        call = {"name": "bash-run", "arguments": {"command": "rm -rf /"}}
        model = scripts("scope", [{"tool_calls": [call]}, "could not"])
        node = create(client, prompt="x", scopes=[], model=model)
        assert wait_settled(client, node["node_id"])["outcome"]["output_text"] == "could not"


class TestScopes:
    def test_act_brings_file_and_shell_tools_confined_to_the_cwd(
        self, client: httpx.Client, scripts: Any, tmp_path: Path, daemon: Daemon
    ) -> None:
        write = {"name": "fs-write-file", "arguments": {"path": "notes.txt", "content": "hi\n"}}
        run = {"name": "bash-run", "arguments": {"command": "wc -c < notes.txt"}}
        escape = {"name": "fs-read-file", "arguments": {"path": "../../etc/passwd"}}
        model = scripts("act", [{"tool_calls": [write]}, {"tool_calls": [run, escape]}, "ok"])
        node = create(client, prompt="x", scopes=["act"], cwd=str(tmp_path), model=model)
        assert wait_settled(client, node["node_id"])["outcome"]["kind"] == "result"
        wait_logged(daemon, node["node_id"], "node.settled")  # every earlier event too
        assert (tmp_path / "notes.txt").read_text() == "hi\n"
        statuses = [
            json.loads(d)["status"]
            for (d,) in query(
                daemon,
                "SELECT data FROM heron_events WHERE node_id = ? AND type = ? ORDER BY 1",
                node["node_id"],
                "node.tool_call.completed",
            )
        ]
        assert sorted(statuses) == ["error", "ok", "ok"]  # the escape was refused

    def test_without_act_there_are_no_file_or_shell_tools(
        self, client: httpx.Client, scripts: Any, daemon: Daemon
    ) -> None:
        call = {"name": "bash-run", "arguments": {"command": "echo hi"}}
        model = scripts("noact", [{"tool_calls": [call]}, "could not"])
        node = create(client, prompt="x", scopes=["ask"], model=model)
        assert wait_settled(client, node["node_id"])["outcome"]["output_text"] == "could not"
        state = query(daemon, "SELECT state FROM heron_nodes WHERE node_id = ?", node["node_id"])
        # The model was told the tool does not exist, and which ones it has.
        assert (
            "unknown tool 'bash-run'; available tools: ask-questions, get-current-time"
            in (state[0][0])
        )

    def test_a_node_without_a_cwd_works_in_its_own_directory(
        self, client: httpx.Client, scripts: Any, daemon: Daemon
    ) -> None:
        write = {"name": "fs-write-file", "arguments": {"path": "out.txt", "content": "x"}}
        node = create(client, prompt="x", model=scripts("own", [{"tool_calls": [write]}, "ok"]))
        wait_settled(client, node["node_id"])
        assert (daemon.home / "nodes" / node["node_id"] / "out.txt").read_text() == "x"

    def test_ask_leaves_the_node_dormant_until_a_message_answers(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        from heron.runtime.nodes._tools import ASK_TOOL
        from heron.tools import question_answer_tool

        assert question_answer_tool().name == ASK_TOOL
        ask = {"name": ASK_TOOL, "arguments": {"questions": [{"question": "Which branch?"}]}}
        model = scripts("ask", [{"tool_calls": [ask]}, "Merged main."])
        node_id = create(client, prompt="merge it", scopes=["ask"], model=model)["node_id"]
        wait_status(client, node_id, "dormant")
        assert client.get(f"/v1/nodes/{node_id}/outcome").json()["state"] == "pending"
        client.post(f"/v1/nodes/{node_id}/messages", json={"body": "main"})
        poll = wait_settled(client, node_id)
        assert poll["outcome"]["output_text"] == "Merged main."
        assert poll["node_status"] == "completed"


class TestConfig:
    def test_patch_changes_name_description_model_and_deadline(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        node_id = create(client, no_kickoff=True, model=scripts("c1", ["from c1"]))["node_id"]
        other = scripts("c2", ["from c2"])
        patched = client.patch(
            f"/v1/nodes/{node_id}/config",
            json={"name": "renamed", "description": "d", "model": other, "deadline": "1h"},
        )
        assert patched.status_code == 200
        body = patched.json()
        assert (body["name"], body["description"], body["model"]) == ("renamed", "d", other)
        assert body["deadline_at"] is not None
        client.post(f"/v1/nodes/{node_id}/messages", json={"body": "go"})
        assert wait_settled(client, node_id)["outcome"]["output_text"] == "from c2"
        bad = client.patch(f"/v1/nodes/{node_id}/config", json={"model": "nope:x"})
        assert bad.status_code == 422 and bad.json()["error"]["code"] == "invalid_model"


class TestContext:
    def test_situational_context_stays_out_of_the_visible_prompt(
        self, client: httpx.Client, scripts: Any, daemon: Daemon
    ) -> None:
        node = create(
            client,
            prompt="visible brief",
            situational_context="the user is on call tonight",
            cwd=str(Path(daemon.home)),
            model=scripts("ctx", ["ok"]),
        )
        assert node["prompt"] == "visible brief" and node["cwd"] == str(daemon.home)
        wait_settled(client, node["node_id"])
        state = query(daemon, "SELECT state FROM heron_nodes WHERE node_id = ?", node["node_id"])
        assert "visible brief" in state[0][0]
        assert "on call tonight" not in state[0][0]


class TestSystem:
    def test_health_status_and_openapi(self, client: httpx.Client) -> None:
        assert client.get("/healthz").json()["ok"] is True
        status = client.get("/v1/status").json()
        assert status["database"].startswith("sqlite")
        assert status["listeners"][0]["kind"] == "unix"
        assert sum(status["nodes"].values()) >= 0 and status["uptime_seconds"] >= 0
        spec = client.get("/openapi.json").json()
        assert "/v1/nodes/{node_id}/outcome" in spec["paths"]

    def test_no_documentation_page_that_needs_the_internet(self, client: httpx.Client) -> None:
        """FastAPI's /docs and /redoc load their scripts from a CDN: not served at all."""
        for path in ("/docs", "/redoc", "/docs/oauth2-redirect"):
            response = client.get(path)
            assert response.status_code == 404, (path, response.text[:200])
            assert response.json()["error"]["code"] == "not_found"


class TestPlacement:
    def test_a_creator_that_does_not_exist_is_404(self, client: httpx.Client) -> None:
        response = client.post("/v1/nodes", json={"prompt": "x", "creator": "no-such-creator"})
        assert response.status_code == 404
        error = response.json()["error"]
        assert error["code"] == "node_not_found"
        assert error["message"] == "creator: no node 'no-such-creator'"
        made = create(client, no_kickoff=True)
        child = create(client, no_kickoff=True, creator=made["node_id"])
        assert child["creator"] == made["node_id"]

    def test_pin_cwd_wins_over_cwd_and_refuses_a_worktree(
        self, client: httpx.Client, tmp_path: Path
    ) -> None:
        pinned, other = tmp_path / "pinned", tmp_path / "other"
        pinned.mkdir()
        other.mkdir()
        node = create(client, no_kickoff=True, cwd=str(other), pin_cwd=str(pinned))
        assert (node["cwd"], node["pin_cwd"]) == (str(pinned), True)
        both = {"no_kickoff": True, "pin_cwd": str(pinned), "worktree": True}
        refused = client.post("/v1/nodes", json=both)
        assert refused.status_code == 422
        assert "pinned to" in refused.json()["error"]["message"]

    def test_a_fork_of_a_pinned_node_stays_pinned(
        self, client: httpx.Client, tmp_path: Path
    ) -> None:
        pinned, other = tmp_path / "pin", tmp_path / "elsewhere"
        pinned.mkdir()
        other.mkdir()
        source = create(client, no_kickoff=True, pin_cwd=str(pinned))["node_id"]
        fork = create(client, no_kickoff=True, fork_from=source)
        assert (fork["cwd"], fork["pin_cwd"]) == (str(pinned), True)
        moved = client.post(
            "/v1/nodes", json={"no_kickoff": True, "fork_from": source, "cwd": str(other)}
        )
        assert moved.status_code == 422 and moved.json()["error"]["code"] == "invalid_cwd"
        repinned = create(client, no_kickoff=True, fork_from=source, pin_cwd=str(other))
        assert (repinned["cwd"], repinned["pin_cwd"]) == (str(other), True)

    def test_children_of_a_pinned_orchestrator_are_pinned_to_its_directory(
        self, client: httpx.Client, scripts: Any, tmp_path: Path
    ) -> None:
        child_model = scripts("pinned-child", ["child done"])
        spawn = {"name": "spawn-child", "arguments": {"prompt": "part", "model": child_model}}
        model = scripts("pinned-parent", [{"tool_calls": [spawn]}, "spawned"])
        parent = create(
            client, prompt="go", model=model, mode="orchestrator", pin_cwd=str(tmp_path)
        )["node_id"]
        wait_settled(client, parent)
        (child,) = [n for n in client.get("/v1/nodes").json() if n["parent"] == parent]
        assert (child["cwd"], child["pin_cwd"]) == (str(tmp_path), True)


class TestStopReasons:
    def test_an_answer_cut_off_by_max_tokens_says_so(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        model = scripts("cut", [{"text": "The answer is a long", "stop_reason": "max_tokens"}])
        node = create(client, prompt="x", model=model)
        poll = wait_settled(client, node["node_id"])
        outcome = poll["outcome"]
        assert (outcome["kind"], outcome["stop_reason"]) == ("result", "max_tokens")
        assert outcome["output_text"] == "The answer is a long"
        assert poll["node_status"] == "completed"

    def test_cut_off_before_any_text_is_a_max_tokens_failure(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        model = scripts("empty", [{"text": "", "stop_reason": "max_tokens"}])
        node = create(client, prompt="x", model=model)
        poll = wait_settled(client, node["node_id"])
        outcome = poll["outcome"]
        assert (outcome["kind"], outcome["reason"]) == ("failure", "max_tokens")
        assert "token limit" in outcome["detail"]["message"]
        assert poll["node_status"] == "failed"
