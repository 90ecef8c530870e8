"""Worktrees at the edges: git failures undone, forks, removed worktrees, lost repositories."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.daemon import Daemon, create, wait_settled, wait_status
from tests.support.jobs import gone, start, wait_jobs
from tests.support.polling import eventually
from tests.support.worktrees import branches, git, refused
from tests.support.worktrees import repo as repo  # the fixture, shared

from heron.runtime.worktrees._service import GitError
from heron.runtime.worktrees._service import git as git_command

COMMIT = ["-c", "user.name=T", "-c", "user.email=t@example.invalid", "commit", "-q"]


def test_a_failed_worktree_add_leaves_nothing_behind(
    client: httpx.Client, daemon: Daemon, repo: Path
) -> None:
    # git makes the branch and the worktree, then the hook fails the command.
    hook = repo / ".git" / "hooks" / "post-checkout"
    hook.write_text("#!/bin/sh\necho 'hook says no' >&2\nexit 1\n")
    hook.chmod(0o755)
    response = client.post(
        "/v1/nodes", json={"no_kickoff": True, "cwd": str(repo), "worktree": "hooked"}
    )
    error = refused(response, 422, "worktree_failed")
    assert "hook says no" in error["message"]
    assert branches(repo) == ["main"]
    assert not (daemon.home / "worktrees" / "hooked").exists()
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    hook.unlink()
    made = create(client, no_kickoff=True, cwd=str(repo), worktree="hooked")  # name is free
    assert made["worktree"]["state"] == "active"


def test_a_fork_gets_its_own_worktree_from_the_originals_branch(
    client: httpx.Client, repo: Path
) -> None:
    node = create(client, no_kickoff=True, cwd=str(repo / "pkg"), worktree="original")
    path = Path(node["worktree"]["path"])
    (path / "pkg" / "mod.py").write_text("x = 2\n")
    git(path, "add", ".")
    git(path, *COMMIT, "-m", "on the branch")
    (path / "scratch.txt").write_text("uncommitted\n")
    tip = git(path, "rev-parse", "HEAD").strip()

    response = client.post(f"/v1/nodes/{node['node_id']}/fork", json={})
    assert response.status_code == 201, response.text
    fork = response.json()
    tree = fork["worktree"]
    assert tree["branch"] == f"heron/{fork['node_id']}" and tree["state"] == "active"
    assert tree["base_commit"] == tip  # from the original's branch, not the user's HEAD
    forked = Path(tree["path"])
    assert tree["workdir"] == str(forked / "pkg")
    assert (forked / "pkg" / "mod.py").read_text() == "x = 2\n"
    assert not (forked / "scratch.txt").exists()  # commits only
    assert (repo / "pkg" / "mod.py").read_text() == "x = 1\n"

    body = {"fork_from": node["node_id"], "worktree": False, "no_kickoff": True}
    plain = client.post("/v1/nodes", json=body)  # explicitly in the user's checkout
    assert plain.status_code == 201 and plain.json()["worktree"] is None


def test_a_node_whose_worktree_was_removed_runs_no_more(
    client: httpx.Client, scripts: Any, repo: Path
) -> None:
    model = scripts("stopped", ["first answer", "second answer"])
    node = create(client, prompt="go", model=model, cwd=str(repo), worktree="removed-one")
    node_id = node["node_id"]
    assert wait_settled(client, node_id)["node_status"] == "completed"
    assert client.post(f"/v1/nodes/{node_id}/worktree/close").status_code == 200
    # A dormant resident one refuses messages; a stopped one refuses revive.
    resident = create(
        client, prompt="go", model=model, cwd=str(repo), worktree="removed-two",
        root_lifecycle="resident",
    )  # fmt: skip
    wait_status(client, resident["node_id"], "dormant")
    abandoned = client.post(f"/v1/nodes/{resident['node_id']}/worktree/abandon")
    assert abandoned.status_code == 200, abandoned.text
    message = client.post(f"/v1/nodes/{resident['node_id']}/messages", json={"body": "more"})
    refused(message, 409, "worktree_removed")
    revive = client.post(f"/v1/nodes/{resident['node_id']}/revive", json={})
    refused(revive, 409, "worktree_removed")
    relaunch = client.post(f"/v1/nodes/{resident['node_id']}/relaunch-root")
    refused(relaunch, 409, "worktree_removed")
    assert client.get(f"/v1/nodes/{resident['node_id']}").json()["status"] == "dormant"
    assert client.get(f"/v1/nodes/{resident['node_id']}").json()["runs"] == 1


def test_removing_a_worktree_stops_its_jobs_processes(
    client: httpx.Client, scripts: Any, repo: Path
) -> None:
    model = scripts("worker", [start("sleep 600"), "started"])
    node = create(
        client, prompt="go", model=model, cwd=str(repo), worktree="with-sleep",
        root_lifecycle="resident",
    )  # fmt: skip
    node_id = node["node_id"]
    wait_status(client, node_id, "dormant")
    (job,) = wait_jobs(client, node_id, ["running"])
    assert client.post(f"/v1/nodes/{node_id}/worktree/abandon").status_code == 200
    assert gone(job["pid"])
    client.post(f"/v1/nodes/{node_id}/close")


def test_abandon_when_the_repository_is_gone(client: httpx.Client, tmp_path: Path) -> None:
    lost = tmp_path / "lost"
    lost.mkdir()
    (lost / "a.txt").write_text("a\n")
    git(lost, "init", "-q", "-b", "main")
    git(lost, "add", ".")
    git(lost, *COMMIT, "-m", "first")
    node = create(client, no_kickoff=True, cwd=str(lost), worktree="orphaned")
    node_id = node["node_id"]
    shutil.rmtree(lost)
    refused(client.post(f"/v1/nodes/{node_id}/worktree/close"), 409, "git_failed")
    abandoned = client.post(f"/v1/nodes/{node_id}/worktree/abandon")
    assert abandoned.status_code == 200, abandoned.text
    assert abandoned.json()["worktree"]["state"] == "abandoned"
    assert not Path(node["worktree"]["path"]).exists()


def _running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie nobody reaped does not count)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


async def test_a_git_timeout_stops_git_and_its_hooks(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "hook.pid"
    hook = repo / ".git" / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\necho $$ > {marker}.tmp && mv {marker}.tmp {marker}\nsleep 600\n")
    hook.chmod(0o755)
    target = tmp_path / "slow-tree"
    with pytest.raises(GitError, match="longer than 1 s"):
        await git_command("worktree", "add", "-b", "heron/slow", str(target), cwd=repo, seconds=1)
    eventually(marker.exists, timeout=10, interval=0.02)
    pid = int(marker.read_text())
    # The hook went with git: one process group.
    eventually(lambda: not _running(pid), timeout=10, interval=0.02, what="the hook exiting")
