"""``heron nodes`` lineage, orchestration and parts verbs, ``heron profiles`` and
``heron kinds``, against a real daemon."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tests.support.cli import heron, settle, wait_status
from tests.support.polling import eventually

from heron.client import Heron

pytestmark = pytest.mark.usefixtures("on_daemon")

SLOW = {"text": "working", "delay": 60}


def test_promote_demote_and_tree(client: Heron, scripts: Any) -> None:
    model = scripts("lead", ["ok"])
    lead = client.nodes.create(prompt="Lead the work", model=model, no_kickoff=True)
    promoted = heron("nodes", "promote", lead.node_id)
    assert promoted.out == (
        f"node {lead.node_id} promoted: an orchestrator from its next run (dormant)\n"
    ), promoted
    assert client.nodes.retrieve(lead.node_id).mode == "orchestrator"
    kid = client.nodes.create(
        prompt="Do a part", model=model, parent=lead.node_id, no_kickoff=True, name="helper"
    )
    grandkid = client.nodes.create(
        prompt="Do a smaller part", model=model, parent=kid.node_id, no_kickoff=True
    )

    drawn = heron("nodes", "tree", lead.node_id)
    assert drawn.code == 0, drawn
    lines = drawn.out.splitlines()
    assert lines[0].startswith(f"{lead.node_id}  dormant  orchestrator")
    assert re.match(rf"^\S+ {kid.node_id}  dormant  helper$", lines[1]), lines
    assert re.match(rf"^\s+\S+ {grandkid.node_id}  dormant", lines[2]), lines
    every = heron("nodes", "tree")
    assert every.code == 0 and f"{kid.node_id}  dormant" in every.out
    trees = json.loads(heron("nodes", "tree", lead.node_id, "--json").out)
    assert trees[0]["node"]["node_id"] == lead.node_id
    assert trees[0]["children"][0]["children"][0]["node"]["node_id"] == grandkid.node_id
    assert heron("nodes", "tree", "no-such-node").code == 1

    waited = heron("nodes", "wait", lead.node_id, kid.node_id, "--timeout", "1h")
    assert waited.code == 0, waited
    assert f"waits (dormant) for 1 child: {kid.node_id}; gives up at " in waited.out
    assert heron("nodes", "wait", lead.node_id, kid.node_id, "--timeout", "8d").code == 2

    demoted = heron("nodes", "demote", lead.node_id, "--json")
    assert demoted.code == 0 and json.loads(demoted.out)["mode"] == "base"


def test_recycle_relaunch_root_and_reports(client: Heron, scripts: Any) -> None:
    report = {
        "tool_calls": [
            {
                "name": "push-report",
                "arguments": {"tier": "milestone", "title": "Half", "body": "Half way there."},
            }
        ]
    }
    model = scripts(
        "recyclable", {"steps": [report, "Done.", "Again."], "compaction": "A short summary."}
    )
    node = client.nodes.create(prompt="Work", model=model, root_lifecycle="resident")
    settle(client, node.node_id)
    wait_status(client, node.node_id, "dormant")  # a resident root waits for more

    listed = heron("nodes", "reports", node.node_id)
    assert listed.code == 0, listed
    assert re.match(r"▍ report \d+ · milestone · Half · ", listed.out), listed.out
    assert "  Half way there." in listed.out
    assert json.loads(heron("nodes", "reports", node.node_id, "--json").out)[0]["title"] == "Half"
    assert (
        "pushed no reports of tier final"
        in heron("nodes", "reports", node.node_id, "--tier", "final").out
    )
    assert heron("nodes", "reports", node.node_id, "--tier", "big").code == 2

    recycled = heron("nodes", "recycle", node.node_id)
    assert recycled.code == 0, recycled
    assert recycled.out.startswith(f"node {node.node_id} recycled (dormant)")
    assert "  A short summary." in recycled.out

    again = heron("nodes", "relaunch-root", node.node_id)
    assert again.code == 0, again
    assert again.out.startswith(f"tree of {node.node_id} relaunched from its root {node.node_id}")


def test_revive_all_and_yield(client: Heron, scripts: Any) -> None:
    flaky = scripts("flaky", [{"error": "the model is down", "status": 500}, "Recovered."])
    failed = client.nodes.create(prompt="Try", model=flaky)
    settle(client, failed.node_id)
    # The script replays from the start of the conversation: the revived run succeeds.
    Path(flaky.removeprefix("scripted:")).write_text(json.dumps(["Recovered."]))
    done = heron("nodes", "revive-all")
    assert done.code == 0, done
    assert done.out.startswith("revived ") and f"  {failed.node_id} (running)" in done.out
    settle(client, failed.node_id)
    revived = json.loads(heron("nodes", "revive-all", "--json").out)["revived"]
    assert failed.node_id not in {node["node_id"] for node in revived}  # it completed

    lead = client.nodes.create(prompt="Lead", model=scripts("y", [SLOW]), mode="orchestrator")
    wait_status(client, lead.node_id, "running")
    handed = heron("nodes", "yield", lead.node_id, "--reason", "children work")
    assert handed.code == 0, handed
    assert re.fullmatch(
        rf"node {lead.node_id} yielded \(\w+\): its children's outcomes wake it\n", handed.out
    ), handed
    client.nodes.cancel(lead.node_id)


def test_jobs_list_and_cancel(client: Heron, scripts: Any) -> None:
    start = {"tool_calls": [{"name": "bash-start", "arguments": {"command": "sleep 120"}}]}
    node = client.nodes.create(prompt="Run it", model=scripts("jobs", [start, SLOW]))
    eventually(lambda: client.nodes.jobs.list(node.node_id))
    listed = heron("nodes", "jobs", "list", node.node_id)
    assert listed.code == 0, listed
    assert re.search(r"^bash-1 +running .*sleep 120", listed.out, re.M), listed.out
    cancelled = heron("nodes", "jobs", "cancel", node.node_id, "bash-1")
    assert cancelled.out == f"job bash-1 of node {node.node_id} cancelled (killed)\n", cancelled
    assert json.loads(heron("nodes", "jobs", "list", node.node_id, "--json").out)[0]["status"] == (
        "killed"
    )
    client.nodes.cancel(node.node_id)


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, capture_output=True, check=True, timeout=30)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "README.md").write_text("hello\n")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", ".")
    _git(root, "-c", "user.name=T", "-c", "user.email=t@example.invalid", "commit", "-qm", "one")
    return root


def test_worktree_close_and_abandon(client: Heron, scripts: Any, repo: Path) -> None:
    model = scripts("wt", ["ok"])
    kept = client.nodes.create(prompt="x", model=model, cwd=str(repo), worktree="cli-kept")
    gone = client.nodes.create(prompt="x", model=model, cwd=str(repo), worktree="cli-gone")
    settle(client, kept.node_id)
    settle(client, gone.node_id)
    closed = heron("nodes", "worktree", "close", kept.node_id)
    assert closed.out == f"worktree of node {kept.node_id} closed; its branch stays\n", closed
    abandoned = heron("nodes", "worktree", "abandon", gone.node_id, "--json")
    assert abandoned.code == 0 and json.loads(abandoned.out)["worktree"]["state"] == "abandoned"


def test_profiles_and_kinds(client: Heron) -> None:
    made = heron("profiles", "ensure", "cli-app", "--description", "Nightly reviews",
                 "--default-kind", "general")  # fmt: skip
    assert made.code == 0, made
    assert made.out.startswith("profile cli-app created\n")
    assert re.search(r"^description +Nightly reviews$", made.out, re.M)
    again = heron("profiles", "ensure", "cli-app", "--default-kind", "-")
    assert again.out.startswith("profile cli-app ensured\n"), again
    assert client.profiles.retrieve("cli-app").default_kind is None
    assert client.profiles.retrieve("cli-app").description == "Nightly reviews"  # kept

    listed = heron("profiles", "list")
    assert re.search(r"^cli-app +- +- +Nightly reviews", listed.out, re.M), listed.out
    assert re.search(r"^default ", listed.out, re.M)
    names = [p["name"] for p in json.loads(heron("profiles", "list", "--json").out)]
    assert "cli-app" in names and names == sorted(names)
    shown = heron("profiles", "get", "cli-app")
    assert re.search(r"^store +/", shown.out, re.M), shown
    missing = heron("profiles", "get", "no-such-profile")
    assert missing.code == 1 and "heron profiles ensure no-such-profile" in missing.err

    # A create naming an unknown profile says how to make it with the CLI.
    refused = heron("nodes", "create", "x", "--profile", "not-made-yet")
    assert refused.code == 1 and "heron profiles ensure not-made-yet" in refused.err

    kinds = heron("kinds", "list")
    assert kinds.code == 0 and re.search(r"^general +builtin ", kinds.out, re.M), kinds.out
    kind_names = {k["name"] for k in json.loads(heron("kinds", "list", "--json").out)["kinds"]}
    assert "general" in kind_names
    general = heron("kinds", "get", "general")
    assert general.code == 0 and "instruction" in general.out
    assert heron("kinds", "get", "no-such-kind").code == 1
