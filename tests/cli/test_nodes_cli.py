"""``heron nodes ...`` against a real daemon, found through ``HERON_HOME`` as a shell would.

Commands run in process (Typer's ``CliRunner``); the one that needs a real
terminal signal (Ctrl-C while watching) runs ``heron`` as a subprocess.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
from tests.support.cli import created, heron, settle, wait_status
from tests.support.daemon import Daemon

from heron import api
from heron.client import APIError, Heron

pytestmark = pytest.mark.usefixtures("on_daemon")

Scripts = Any


# -- create, get, list -----------------------------------------------------------


def test_create_sends_every_option_and_get_shows_the_node(
    client: Heron, scripts: Scripts, tmp_path: Path
) -> None:
    model = scripts("quiet", ["Done."])
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"type": "object", "properties": {"n": {"type": "integer"}}}))
    done = heron(
        "nodes", "create", "Count the files.", "--model", model, "--name", "counter",
        "--deadline", "1h", "--schema", str(schema), "--scope", "ask", "--scope", "act",
        "--node-id", "cli-counter", "--no-kickoff",
    )  # fmt: skip
    assert done.out == (
        "created node cli-counter (dormant)\nwatch it: heron nodes watch cli-counter\n"
    )
    node = client.nodes.retrieve("cli-counter")
    assert (node.prompt, node.name, node.model) == ("Count the files.", "counter", model)
    assert node.cwd == str(tmp_path.resolve())  # the current directory by default
    assert node.scopes == ["ask", "act"] and node.has_output_schema
    assert node.deadline_at is not None and node.status == "dormant"

    shown = heron("nodes", "get", "cli-counter")
    assert shown.code == 0
    assert re.search(r"^id +cli-counter$", shown.out, re.M)
    assert re.search(r"^status +dormant$", shown.out, re.M)
    assert re.search(r"^prompt +Count the files\.$", shown.out, re.M)
    assert re.search(rf"^cwd +{re.escape(str(tmp_path.resolve()))}$", shown.out, re.M)
    assert re.search(r"^scopes +ask, act$", shown.out, re.M)

    as_json = heron("nodes", "get", "cli-counter", "--json")
    assert json.loads(as_json.out) == client.nodes.retrieve("cli-counter").model_dump(mode="json")


def test_no_scopes_and_unknown_scopes(client: Heron, scripts: Scripts) -> None:
    model = scripts("none", ["x"])
    done = heron("nodes", "create", "go", "--model", model, "--no-kickoff", "--no-scopes", "--json")
    assert done.code == 0, done
    assert client.nodes.retrieve(json.loads(done.out)["node_id"]).scopes == []
    before = len(client.nodes.list())
    typo = heron("nodes", "create", "go", "--model", model, "--scope", "memory-read")
    assert typo.code == 2 and "unknown scope 'memory-read'" in typo.err
    assert "known scopes: act, ask, memory:read, memory:write, net, schedule" in typo.err
    none = heron("nodes", "create", "go", "--model", model, "--scope", "none")
    assert none.code == 2 and "--no-scopes grants none" in none.err
    both = heron("nodes", "create", "go", "--no-scopes", "--scope", "ask")
    assert both.code != 0 and "do not go together" in both.err
    assert len(client.nodes.list()) == before  # none of them created a node


def test_list_limit_prints_the_next_page_command(client: Heron, scripts: Scripts) -> None:
    model = scripts("paged", ["x"])
    for _ in range(3):
        client.nodes.create(prompt="p", model=model, no_kickoff=True)
    everything = [n.node_id for n in client.nodes.list()]
    first = heron("nodes", "list", "--limit", "2", "--json")
    assert first.code == 0 and [n["node_id"] for n in json.loads(first.out)] == everything[:2]
    match = re.fullmatch(r"more: heron nodes list --limit 2 --after (\S+)\n", first.err)
    assert match, first.err
    second = heron("nodes", "list", "--limit", "2", "--after", match[1], "--json")
    assert [n["node_id"] for n in json.loads(second.out)] == everything[2:4]
    assert heron("nodes", "list", "--limit", "0").code == 2


def test_outcome_shows_an_answer_cut_off_by_max_tokens(client: Heron, scripts: Scripts) -> None:
    model = scripts("cut", [{"text": "Half an ans", "stop_reason": "max_tokens"}])
    node = client.nodes.create(prompt="x", model=model)
    settle(client, node.node_id)
    done = heron("nodes", "outcome", node.node_id)
    assert done.code == 0 and "Half an ans" in done.out
    assert "stopped: max_tokens (the answer was cut off at the model's token limit)" in done.out
    watched = heron("nodes", "watch", node.node_id)
    assert watched.code == 0 and "stopped: max_tokens" in watched.out
    empty = client.nodes.create(prompt="x", model=scripts("cut0", [{"stop_reason": "max_tokens"}]))
    settle(client, empty.node_id)
    failed = heron("nodes", "outcome", empty.node_id)
    assert failed.code == 3 and "failed: max_tokens" in failed.out
    assert (
        json.loads(heron("nodes", "outcome", node.node_id, "--json").out)["outcome"]["stop_reason"]
        == "max_tokens"
    )


def test_create_json_prints_the_created_node(client: Heron, scripts: Scripts) -> None:
    done = heron("nodes", "create", "Hi", "--model", scripts("hi", ["Hello."]), "--json")
    node = json.loads(done.out)
    assert done.code == 0 and node["prompt"] == "Hi"
    assert client.nodes.retrieve(node["node_id"]).node_id == node["node_id"]


def test_an_inline_schema_is_sent_and_a_bad_one_creates_nothing(
    client: Heron, scripts: Scripts
) -> None:
    model = scripts("s", ["x"])
    inline = heron("nodes", "create", "go", "--model", model, "--no-kickoff", "--json",
                   "--schema", '{"type": "object"}')  # fmt: skip
    assert json.loads(inline.out)["has_output_schema"] is True
    before = len(client.nodes.list())
    for schema, problem in [
        ("{not json", "--schema is not valid JSON (and no such file)"),
        ("[1, 2]", "--schema must hold a JSON object"),
    ]:
        done = heron("nodes", "create", "go", "--model", model, "--schema", schema)
        assert done.code == 1 and done.err.startswith(f"heron: error: {problem}"), done
    assert len(client.nodes.list()) == before


def test_api_errors_are_one_line_with_their_code(client: Heron, scripts: Scripts) -> None:
    model = scripts("s", ["x"])
    first = heron("nodes", "create", "a", "--model", model, "--node-id", "cli-dup")
    assert first.code == 0
    again = heron("nodes", "create", "a", "--model", model, "--node-id", "cli-dup")
    assert again.code == 1
    assert again.err.startswith("heron: error: node_id_exists: ") and again.err.count("\n") == 1

    bad = heron("nodes", "create", "a", "--model", model, "--name", "x" * 600)
    assert bad.code == 1
    assert bad.err.startswith("heron: error: invalid_request: the request does not match")
    assert "(name: " in bad.err

    missing = heron("nodes", "get", "no-such-node")
    assert missing.code == 1
    assert missing.err.startswith("heron: error: node_not_found: ")
    assert "Traceback" not in missing.err

    for command in ("watch", "outcome", "message", "revive"):
        args = ["nodes", command, "no-such-node", *(["hi"] if command == "message" else [])]
        unknown = heron(*args)
        assert unknown.code == 1 and unknown.err.startswith("heron: error: node_not_found: ")

    debug = heron("--debug", "nodes", "get", "no-such-node")
    assert debug.code == 1 and "Traceback" in debug.err and "NotFoundError" in debug.err


@pytest.mark.parametrize(
    "args",
    [
        ["get", "bad id"],
        ["watch", "../etc"],
        ["outcome", "a/b"],
        ["message", "--", "-x", "hi"],  # an id that looks like an option comes after `--`
        ["interrupt", "a b"],
        ["cancel", "a b"],
        ["fork", "a b"],
        ["revive", "a b"],
        ["create", "go", "--node-id", "no way"],
    ],
)
def test_an_invalid_id_is_refused_before_anything_is_sent(args: list[str]) -> None:
    done = heron("nodes", *args)
    assert done.code == 1, done
    assert re.match(r"heron: error: invalid node id '.*': 1-128 letters", done.err), done


def test_list_is_a_table_filtered_by_status(client: Heron, scripts: Scripts) -> None:
    model = scripts("s", ["Listed."])
    done_id = created(heron("nodes", "create", "List me please", "--model", model))
    settle(client, done_id)
    asleep = created(heron("nodes", "create", "Sleep", "--model", model, "--no-kickoff",
                           "--name", "sleeper"))  # fmt: skip

    table = heron("nodes", "list")
    assert table.code == 0
    header, *rows = table.out.splitlines()
    assert header.split() == ["ID", "STATUS", "NAME", "/", "PROMPT", "CREATED", "TURNS"]
    by_id = {row.split()[0]: row for row in rows}
    assert re.match(
        rf"{done_id} +completed +List me please +\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d +1$",
        by_id[done_id],
    )
    assert re.match(rf"{asleep} +dormant +sleeper ", by_id[asleep])

    dormant = heron("nodes", "list", "--status", "dormant")
    ids = {row.split()[0] for row in dormant.out.splitlines()[1:]}
    assert asleep in ids and done_id not in ids

    listed = json.loads(heron("nodes", "list", "--json", "--status", "completed").out)
    assert done_id in {node["node_id"] for node in listed}
    assert {node["status"] for node in listed} == {"completed"}

    wrong = heron("nodes", "list", "--status", "asleep")
    assert wrong.code == 2 and "'asleep' is none of running, dormant" in wrong.err


# -- watch -------------------------------------------------------------------------

TOOLS_SCRIPT: list[Any] = [
    {
        "text": "Reading two things.",
        "tool_calls": [
            {"name": "fs-read-file", "arguments": {"path": "/no/such/file.txt"}},
            {"name": "get-current-time", "arguments": {}},
        ],
    },
    {
        "tool_calls": [
            {
                "name": "push-report",
                "arguments": {"tier": "milestone", "title": "Halfway", "body": "One read failed."},
            }
        ]
    },
    "All done.",
]


def test_create_watch_draws_text_tool_steps_reports_and_the_outcome(
    client: Heron, scripts: Scripts
) -> None:
    done = heron("nodes", "create", "Read", "--model", scripts("tools", TOOLS_SCRIPT), "--watch")
    assert done.code == 0, done
    node_id = created(done)
    lines = done.out.splitlines()
    assert lines[1:3] == ["· turn 1", "Reading two things."]
    start = lines.index("Reading two things.")
    # The two calls run side by side: each is a line as it starts and one as it ends,
    # and either may start or finish first.
    steps = lines[start + 1 : start + 5]
    read = steps.index("  ↳ fs-read-file · reading a file …")
    clock = steps.index("  ↳ get-current-time · checking the time …")
    assert read < steps.index("  ✗ fs-read-file · reading a file failed"), steps
    assert clock < steps.index("  ✓ get-current-time · checking the time"), steps
    assert lines[start + 5] == "· turn 2"
    report = lines.index("▍ report · milestone · Halfway")
    assert lines[report + 1] == "  One read failed."
    assert lines[-3:-1] == ["All done.", "✓ completed"]
    assert re.fullmatch(rf"{node_id} · completed · 3 turns · tokens \d+ in / \d+ out", lines[-1])

    # Watched again once settled, the run replays from the daemon's log (no text deltas
    # there): each message is drawn once, and the exit status is the outcome's.
    again = heron("nodes", "watch", node_id)
    assert again.code == 0
    assert again.out.count("Reading two things.") == 1 and again.out.count("All done.") == 1
    assert again.out.startswith("· running\n· turn 1\nReading two things.\n"), again
    assert "· turn 3\nAll done.\n" in again.out, again
    assert "failed" in again.out and "✓ completed" in again.out


class LateStreams:
    """A Unix-socket relay to the daemon that holds a node's event stream request back
    until that node has finished a tool call: a watcher that joins late, every time."""

    def __init__(self, daemon: Daemon, path: Path, client: Heron) -> None:
        self.daemon, self.client = daemon, client
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(path))
        self.server.listen()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                near, _ = self.server.accept()
                far = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                far.connect(str(self.daemon.socket))
                threading.Thread(target=self._pump, args=(far, near, False), daemon=True).start()
                threading.Thread(target=self._pump, args=(near, far, True), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, requests: bool) -> None:
        with contextlib.suppress(OSError), source, sink:
            while chunk := source.recv(65536):
                asked = re.search(rb"GET /v1/nodes/([^/ ]+)/events", chunk) if requests else None
                if asked is not None:
                    with self.client.nodes.events(asked[1].decode(), after=0) as stream:
                        next(e for e in stream if isinstance(e, api.ToolCallCompleted))
                sink.sendall(chunk)

    def close(self) -> None:
        self.server.close()


def test_create_watch_draws_the_first_turn_even_when_it_joins_late(
    daemon: Daemon, client: Heron, scripts: Scripts, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Joined without a cursor, a running node's finished tool steps are not sent
    # again: a fresh node is watched from its first event.
    clock = {"name": "get-current-time", "arguments": {}}
    model = scripts(
        "quick", [{"text": "Quick.", "tool_calls": [clock]}, {"text": "Slow.", "delay": 1}]
    )
    relay = LateStreams(daemon, Path(tempfile.mkdtemp(dir="/tmp")) / "late.sock", client)
    monkeypatch.setenv("HERON_SOCKET", str(relay.server.getsockname()))
    try:
        done = heron("nodes", "create", "Go", "--model", model, "--watch")
    finally:
        relay.close()
    assert done.code == 0, done
    lines = done.out.splitlines()
    assert lines[1:7] == [
        "· turn 1",
        "Quick.",
        "  ↳ get-current-time · checking the time …",
        "  ✓ get-current-time · checking the time",
        "· turn 2",
        "Slow.",
    ], done


def test_watch_of_a_failing_node_exits_3_with_the_reason(client: Heron, scripts: Scripts) -> None:
    model = scripts("boom", [{"error": "the model fell over", "status": 500}])
    node_id = created(heron("nodes", "create", "Fail", "--model", model))
    done = heron("nodes", "watch", node_id)
    assert done.code == 3, done  # not 2: that is a usage error's
    assert "✗ failed: provider_error" in done.out
    assert "the model fell over" in done.out


def test_watch_after_skips_what_was_seen(client: Heron, scripts: Scripts) -> None:
    clock = {"name": "get-current-time", "arguments": {}}
    model = scripts("two", [{"text": "First.", "tool_calls": [clock]}, "Second."])
    node_id = created(heron("nodes", "create", "Go", "--model", model))
    settle(client, node_id)
    with client.nodes.events(node_id, after=0) as stream:
        first = next(e.sequence_number for e in stream if isinstance(e, api.OutputTextDone))
    tail = heron("nodes", "watch", node_id, "--after", str(first))
    assert tail.code == 0, tail
    assert "First." not in tail.out
    assert "✓ get-current-time" in tail.out and "Second." in tail.out
    # How many turns came before the cursor is not known: the turn is not numbered.
    assert "· a new turn\nSecond.\n" in tail.out, tail


# -- outcome -----------------------------------------------------------------------


def test_outcome_exit_statuses(client: Heron, scripts: Scripts) -> None:
    ok = created(heron("nodes", "create", "Hi", "--model", scripts("ok", ["Fine."])))
    settle(client, ok)
    result = heron("nodes", "outcome", ok)
    assert (result.code, result.out) == (0, "✓ completed\nFine.\n")
    poll = json.loads(heron("nodes", "outcome", ok, "--json").out)
    assert poll["state"] == "settled" and poll["outcome"]["output_text"] == "Fine."

    slow = scripts("slow", [{"text": "Late.", "delay": 3}])
    pending_id = created(heron("nodes", "create", "Hi", "--model", slow))
    pending = heron("nodes", "outcome", pending_id)
    assert (pending.code, pending.out) == (4, f"pending: node {pending_id} is running\n")
    followed = heron("nodes", "outcome", pending_id, "--follow")
    assert (followed.code, followed.out) == (0, "✓ completed\nLate.\n")

    failing = scripts("fail", [{"error": "no model today", "status": 500}])
    failed_id = created(heron("nodes", "create", "Hi", "--model", failing))
    failed = heron("nodes", "outcome", failed_id, "--wait", "25")
    assert failed.code == 3
    assert failed.out.startswith("✗ failed: provider_error\n")

    # Bad usage exits 2, as the README's exit statuses say.
    too_long = heron("nodes", "outcome", ok, "--wait", "30")
    assert too_long.code == 2 and "--follow" in too_long.err, too_long
    both = heron("nodes", "outcome", ok, "--wait", "3", "--follow")
    assert both.code == 2 and "do not go together" in both.err
    # A usage error keeps Click's 2, which no outcome shares.
    assert heron("nodes", "outcome", ok, "--wait", "soon").code == 2
    shown = " ".join(heron("nodes", "outcome", "--help").out.split())
    assert "3 it settled with a failure" in shown and "4 not settled yet" in shown
    assert "2 a usage error" in shown


def test_outcome_follow_json_is_the_poll_as_without_follow(client: Heron, scripts: Scripts) -> None:
    slow = scripts("slow", [{"text": "Late.", "delay": 1}])
    node_id = created(heron("nodes", "create", "Hi", "--model", slow))
    followed = heron("nodes", "outcome", node_id, "--follow", "--json")
    assert followed.code == 0, followed
    polled = heron("nodes", "outcome", node_id, "--json")
    assert json.loads(followed.out) == json.loads(polled.out)
    assert json.loads(followed.out)["outcome"]["output_text"] == "Late."


# -- steering ----------------------------------------------------------------------


def test_message_wakes_a_dormant_node(client: Heron, scripts: Scripts) -> None:
    node_id = created(heron("nodes", "create", "Wait", "--model", scripts("m", ["Got it."]),
                            "--no-kickoff"))  # fmt: skip
    done = heron("nodes", "message", node_id, "Here you go")
    assert done.code == 0
    assert re.fullmatch(rf"message \d+ sent: node {node_id} woke to read it\n", done.out)
    assert isinstance(settle(client, node_id), api.NodeResult)
    empty = heron("nodes", "message", node_id, "  ")
    assert empty.code == 1 and "the message is empty" in empty.err


def test_interrupt_revive_cancel_and_fork(client: Heron, scripts: Scripts) -> None:
    slow = scripts("slow", [{"text": "Slow.", "delay": 30}])
    node_id = created(heron("nodes", "create", "Work", "--model", slow))
    wait_status(client, node_id, "running")

    stopped = heron("nodes", "interrupt", node_id)
    # The status is said once, with what comes next.
    assert stopped.out == f"node {node_id} interrupted: heron nodes revive {node_id} goes on\n"

    revived = heron("nodes", "revive", node_id, "--message", "go on")
    assert revived.out == f"node {node_id} revived (running)\n", revived

    cancelled = heron("nodes", "cancel", node_id, "--reason", "enough", "--json")
    assert cancelled.code == 0 and json.loads(cancelled.out)["status"] == "cancelled"
    outcome = heron("nodes", "outcome", node_id)
    assert outcome.code == 3 and outcome.out.startswith("✗ failed: cancelled\n")
    assert "enough" in outcome.out

    late = heron("nodes", "interrupt", node_id)
    assert late.code == 1 and re.match(r"heron: error: node_\w+: ", late.err), late

    forked = heron("nodes", "fork", node_id, "--prompt", "Again", "--name", "twin")
    match = re.fullmatch(rf"forked {node_id} into node (\S+) \((running|dormant)\)\n", forked.out)
    assert forked.code == 0 and match, forked
    fork = client.nodes.retrieve(match[1])
    assert fork.forked_from == node_id and fork.name == "twin" and fork.prompt == "Again"
    assert heron("nodes", "cancel", match[1]).out == f"node {match[1]} cancelled\n"


# -- Ctrl-C ------------------------------------------------------------------------


@pytest.mark.slow
def test_ctrl_c_stops_watching_and_leaves_the_node_running(
    daemon: Daemon, client: Heron, scripts: Scripts
) -> None:
    clock = {"name": "get-current-time", "arguments": {}}
    model = scripts("slow", [{"text": "Thinking hard.", "tool_calls": [clock]}, {"delay": 60}])
    node = client.nodes.create(prompt="Go", model=model, cwd=str(daemon.home))
    env = {**os.environ, "HERON_HOME": str(daemon.home)}
    for variable in ("HERON_BASE_URL", "HERON_SOCKET", "HERON_TOKEN"):
        env.pop(variable, None)
    lines: list[str] = []
    seen = threading.Event()
    with subprocess.Popen(
        [sys.executable, "-m", "heron", "nodes", "watch", node.node_id],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as watcher:

        def read() -> None:
            assert watcher.stdout is not None
            for line in watcher.stdout:
                lines.append(line)
                if "Thinking hard." in line:
                    seen.set()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            assert seen.wait(60), lines
            watcher.send_signal(signal.SIGINT)
            assert watcher.wait(30) == 130
            reader.join(10)
        finally:
            if watcher.poll() is None:
                watcher.kill()
    out = "".join(lines)
    assert f"stopped watching; node {node.node_id} keeps running" in out
    assert f"heron nodes watch {node.node_id} --after " in out
    assert client.nodes.retrieve(node.node_id).status == "running"
    client.nodes.cancel(node.node_id)


# -- durations ---------------------------------------------------------------------


def test_one_duration_syntax_with_errors_in_words(client: Heron, scripts: Scripts) -> None:
    model = scripts("d", ["x"])
    day = json.loads(
        heron("nodes", "create", "a", "--model", model, "--deadline", "1d", "--no-kickoff",
              "--json").out
    )  # fmt: skip
    node = client.nodes.retrieve(day["node_id"])
    assert node.deadline_at is not None
    left = (node.deadline_at - node.created_at).total_seconds()
    assert 86400 - 5 < left <= 86400 + 5

    for flag, value in (("--deadline", "soon"), ("--deadline", "1y"), ("--deadline", "0s")):
        done = heron("nodes", "create", "a", "--model", model, flag, value)
        assert done.code == 2, done  # a usage error, caught before anything is sent
        said = " ".join(done.err.split())
        assert "duration" in said and "\\d" not in said and "^" not in said, said
    assert "d (days), h (hours)" in " ".join(
        heron("nodes", "create", "a", "--deadline", "soon").err.split()
    )
    pruned = heron("canvas", "prune", "--older-than", "30m", "--dry-run")
    assert pruned.code == 0 and pruned.out.startswith("would prune "), pruned
    assert heron("canvas", "prune", "--older-than", "a week").code == 2
    assert heron("crons", "create", "@daily", "go", "--deadline", "1w").code == 2

    # The daemon reads the same syntax, and says what is wrong in words.
    cwd = str(Path.cwd())
    made = client.request("POST", "/v1/nodes", {"prompt": "a", "cwd": cwd, "deadline": "2d",
                                                "no_kickoff": True, "model": model})  # fmt: skip
    assert made["deadline_at"] is not None
    with pytest.raises(APIError) as refused:
        client.request("POST", "/v1/nodes", {"prompt": "a", "cwd": cwd, "deadline": "soon"})
    assert "'soon' is not a duration" in str(refused.value.details)
    assert "\\d" not in str(refused.value.details)


# -- watching a node already running ---------------------------------------------------


def test_watch_of_a_running_node_says_at_once_what_it_does_then_its_history_in_order(
    client: Heron, scripts: Scripts
) -> None:
    push = {"tier": "progress", "title": "Step", "body": "Halfway."}
    model = scripts(
        "joined",
        [
            {"text": "First part.", "tool_calls": [{"name": "push-report", "arguments": push}]},
            {"text": "Second part.", "delay": 8},
        ],
    )
    node = client.nodes.create(prompt="Go", model=model, cwd=str(Path.cwd()))
    with client.nodes.events(node.node_id, after=0) as stream:
        turns = 0
        for event in stream:
            turns += isinstance(event, api.TurnStarted)
            if turns == 2:
                break
    done = heron("nodes", "watch", node.node_id)
    assert done.code == 0, done
    lines = done.out.splitlines()
    assert re.fullmatch(
        rf"{node.node_id} is running · 1 run · \d+ turns? so far · tokens \d+ in / \d+ out",
        lines[0],
    ), done.out
    # The text came before the report its turn pushed, and is drawn so.
    assert lines.index("First part.") < lines.index("▍ report · progress · Step")
    assert lines.index("▍ report · progress · Step") < lines.index("Second part.")
    assert "✓ completed" in lines


def test_watch_of_a_node_reading_its_prompt_shows_its_status_first(
    client: Heron, scripts: Scripts
) -> None:
    model = scripts("slow-start", [{"text": "Late.", "delay": 8}])
    node = client.nodes.create(prompt="Go", model=model, cwd=str(Path.cwd()))
    wait_status(client, node.node_id, "running")
    done = heron("nodes", "watch", node.node_id)
    assert done.code == 0, done
    lines = done.out.splitlines()
    assert lines[0].startswith(f"{node.node_id} is running · 1 run · 0 turns")
    # The turn is said if it started after the watcher joined (then it is the first).
    assert lines[1:3] in (["Late.", "✓ completed"], ["· turn 1", "Late."]), done
