"""Managed git worktrees: made on create, worked in, closed (branch kept) or abandoned."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import httpx
from tests.support.daemon import Daemon, create, wait_settled, wait_status
from tests.support.worktrees import branches, git, refused
from tests.support.worktrees import repo as repo  # the fixture, shared

SLOW = {"text": "still thinking", "delay": 30}


def write(path: str, content: str) -> dict[str, Any]:
    return {
        "tool_calls": [{"name": "fs-write-file", "arguments": {"path": path, "content": content}}]
    }


def test_a_node_writes_in_its_worktree_which_abandon_removes(
    client: httpx.Client, daemon: Daemon, scripts: Any, repo: Path
) -> None:
    model = scripts("writer", [write("new.py", "y = 2\n"), "written"])
    node = create(client, prompt="write", model=model, cwd=str(repo / "pkg"), worktree=True)
    node_id = node["node_id"]
    tree = node["worktree"]
    path = daemon.home / "worktrees" / node_id
    assert tree == {
        "name": node_id,
        "path": str(path),
        "branch": f"heron/{node_id}",
        "repository": str(repo),
        "base_commit": git(repo, "rev-parse", "HEAD").strip(),
        "workdir": str(path / "pkg"),
        "state": "active",
        "head_commit": None,
    }
    assert node["cwd"] == str(repo / "pkg")
    wait_settled(client, node_id)
    # The node wrote into the worktree's copy of its cwd; the user's checkout is untouched.
    assert (path / "pkg" / "new.py").read_text() == "y = 2\n"
    assert not (repo / "pkg" / "new.py").exists()
    assert git(repo, "status", "--porcelain") == ""
    assert f"heron/{node_id}" in branches(repo)

    abandoned = client.post(f"/v1/nodes/{node_id}/worktree/abandon")
    assert abandoned.status_code == 200, abandoned.text
    assert abandoned.json()["worktree"]["state"] == "abandoned"
    assert not path.exists()
    assert branches(repo) == ["main"]
    assert str(path) not in git(repo, "worktree", "list")
    assert (
        git(repo, "status", "--porcelain") == ""
        and git(repo, "rev-parse", "--abbrev-ref", "HEAD") == "main\n"
    )
    again = client.post(f"/v1/nodes/{node_id}/worktree/abandon")
    refused(again, 404, "no_worktree")


def test_close_keeps_the_branch_and_its_commits(
    client: httpx.Client, daemon: Daemon, scripts: Any, repo: Path
) -> None:
    commit = {
        "tool_calls": [
            {
                "name": "bash-run",
                "arguments": {
                    "command": "echo done > result.txt && git add result.txt && "
                    "git -c user.name=N -c user.email=n@example.invalid commit -qm work"
                },
            }
        ]
    }
    model = scripts("committer", [commit, "committed"])
    node = create(client, prompt="commit", model=model, cwd=str(repo), worktree="feature-x")
    node_id = node["node_id"]
    path = daemon.home / "worktrees" / "feature-x"
    assert node["worktree"]["branch"] == "heron/feature-x"
    assert node["worktree"]["workdir"] == str(path)
    wait_settled(client, node_id)
    closed = client.post(f"/v1/nodes/{node_id}/worktree/close")
    assert closed.status_code == 200, closed.text
    tree = closed.json()["worktree"]
    assert tree["state"] == "closed"
    assert not path.exists()
    tip = git(repo, "rev-parse", "heron/feature-x").strip()
    assert tree["head_commit"] == tip != tree["base_commit"]
    assert git(repo, "show", "heron/feature-x:result.txt") == "done\n"
    assert not (repo / "result.txt").exists()  # merges nothing
    assert client.get(f"/v1/nodes/{node_id}").json()["worktree"]["state"] == "closed"

    # The name is in use while its branch is.
    taken = client.post(
        "/v1/nodes", json={"no_kickoff": True, "cwd": str(repo), "worktree": "feature-x"}
    )
    refused(taken, 409, "worktree_exists")


def test_a_dirty_close_is_refused_and_loses_nothing(
    client: httpx.Client, scripts: Any, repo: Path
) -> None:
    model = scripts("dirty", [write("README.md", "changed\n"), "changed it"])
    node = create(client, prompt="edit", model=model, cwd=str(repo), worktree="dirty-one")
    node_id = node["node_id"]
    wait_settled(client, node_id)
    path = Path(node["worktree"]["path"])
    (path / "untracked.txt").write_text("new\n")
    error = refused(client.post(f"/v1/nodes/{node_id}/worktree/close"), 409, "worktree_dirty")
    assert sorted(error["details"]) == [" M README.md", "?? untracked.txt"]
    assert (path / "README.md").read_text() == "changed\n"
    assert client.get(f"/v1/nodes/{node_id}").json()["worktree"]["state"] == "active"
    assert client.post(f"/v1/nodes/{node_id}/worktree/abandon").status_code == 200
    assert not path.exists() and "heron/dirty-one" not in branches(repo)
    assert (repo / "README.md").read_text() == "hello\n"


def test_refused_while_the_node_runs(client: httpx.Client, scripts: Any, repo: Path) -> None:
    node = create(
        client, prompt="think", model=scripts("slow", [SLOW]), cwd=str(repo), worktree="busy"
    )
    node_id = node["node_id"]
    wait_status(client, node_id, "running")
    for action in ("close", "abandon"):
        refused(client.post(f"/v1/nodes/{node_id}/worktree/{action}"), 409, "node_running")
    assert Path(node["worktree"]["path"]).is_dir()
    client.post(f"/v1/nodes/{node_id}/close")
    wait_settled(client, node_id)
    assert client.post(f"/v1/nodes/{node_id}/worktree/close").status_code == 200


def test_removing_the_worktree_kills_the_jobs_running_in_it(
    client: httpx.Client, scripts: Any, repo: Path
) -> None:
    start = {"tool_calls": [{"name": "bash-start", "arguments": {"command": "sleep 600"}}]}
    model = scripts("jobs", [start, "started"])
    node = create(
        client,
        prompt="start",
        model=model,
        cwd=str(repo),
        worktree="with-job",
        root_lifecycle="resident",
    )
    node_id = node["node_id"]
    wait_status(client, node_id, "dormant")
    (job,) = client.get(f"/v1/nodes/{node_id}/jobs").json()
    assert job["status"] == "running" and job["cwd"] == node["worktree"]["workdir"]
    assert client.post(f"/v1/nodes/{node_id}/worktree/close").status_code == 200
    (killed,) = client.get(f"/v1/nodes/{node_id}/jobs").json()
    assert killed["status"] == "killed"
    client.post(f"/v1/nodes/{node_id}/close")


def test_bad_requests_create_nothing(
    client: httpx.Client, daemon: Daemon, tmp_path: Path, repo: Path
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    refused(
        client.post("/v1/nodes", json={"prompt": "x", "cwd": str(plain), "worktree": True}),
        422,
        "not_a_git_repository",
    )
    refused(
        client.post("/v1/nodes", json={"prompt": "x", "worktree": True}), 422, "worktree_needs_cwd"
    )
    for name in ("../escape", "a..b", "x.lock", "-dash", "sp ace"):
        response = client.post(
            "/v1/nodes", json={"prompt": "x", "cwd": str(repo), "worktree": name}
        )
        refused(response, 422, "invalid_worktree_name")
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    refused(
        client.post("/v1/nodes", json={"prompt": "x", "cwd": str(empty), "worktree": True}),
        422,
        "not_a_git_repository",
    )
    assert branches(repo) == ["main"]
    # A taken node id is refused before any worktree is made for it.
    create(client, no_kickoff=True, node_id="wt-taken")
    again = client.post(
        "/v1/nodes",
        json={"no_kickoff": True, "node_id": "wt-taken", "cwd": str(repo), "worktree": True},
    )
    refused(again, 409, "node_id_exists")
    assert branches(repo) == ["main"] and not (daemon.home / "worktrees" / "wt-taken").exists()
    # Nodes without a worktree answer no_worktree; ids are checked.
    refused(client.post("/v1/nodes/wt-taken/worktree/close"), 404, "no_worktree")
    refused(client.post("/v1/nodes/no-such-node/worktree/abandon"), 404, "node_not_found")
    refused(client.post("/v1/nodes/-bad/worktree/close"), 400, "invalid_node_id")
    assert client.get("/v1/nodes/wt-taken").json()["worktree"] is None


def test_a_worktree_deleted_by_hand_can_still_be_closed_and_abandoned(
    client: httpx.Client, repo: Path
) -> None:
    kept = create(client, no_kickoff=True, cwd=str(repo), worktree="by-hand-1")
    dropped = create(client, no_kickoff=True, cwd=str(repo), worktree="by-hand-2")
    for node in (kept, dropped):
        shutil.rmtree(node["worktree"]["path"])
    closed = client.post(f"/v1/nodes/{kept['node_id']}/worktree/close")
    assert closed.status_code == 200, closed.text
    assert closed.json()["worktree"]["head_commit"] == kept["worktree"]["base_commit"]
    abandoned = client.post(f"/v1/nodes/{dropped['node_id']}/worktree/abandon")
    assert abandoned.status_code == 200, abandoned.text
    assert branches(repo) == ["heron/by-hand-1", "main"]
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
