"""A node's commands run in bubblewrap: the daemon's files, processes and secrets out of
reach, on a real daemon; and what the daemon does where no sandbox can start."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.daemon import Daemon, create, wait_settled, write_script
from tests.support.worktrees import git

from heron.runtime import RuntimeConfig
from heron.runtime.kinds._service import kind_skills
from heron.runtime.nodes._tools import NodeTools
from heron.runtime.shell._sandbox import NodeSandbox
from heron.tools import bash_tools
from heron.tools.present import PresentZipTool

pytestmark = pytest.mark.slow

MARKERS = {
    "OPENAI_API_KEY": "sk-env-marker-5f1c2a",
    "HERON_TOKEN": "token-marker-93d0be",
}
INSTALLED = "sk-installed-marker-7e44c1"


def run(command: str) -> dict[str, Any]:
    return {"name": "bash-run", "arguments": {"command": command}}


def broken_bwrap(folder: Path, says: str) -> Path:
    """A folder holding a ``bwrap`` that fails saying ``says``, to put first on ``PATH``
    (a bubblewrap that cannot make namespaces, as in a locked-down container)."""
    fake = folder / "bin"
    fake.mkdir()
    bwrap = fake / "bwrap"
    bwrap.write_text(f"#!/bin/sh\necho '{says}' >&2\nexit 1\n")
    bwrap.chmod(bwrap.stat().st_mode | stat.S_IXUSR)
    return fake


def transcript(client: httpx.Client, node_id: str) -> str:
    page = client.get("/v1/canvas/history/read", params={"node_id": node_id, "limit": 500})
    assert page.status_code == 200, page.text
    return json.dumps(page.json())


def test_a_nodes_commands_cannot_reach_the_daemons_secrets(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    for folder in (home, work):
        folder.mkdir()
    outside = Path("/var/tmp") / f"heron-escape-{os.getpid()}"  # exists in the sandbox
    env = {
        "HERON_PROVIDER": write_script(home, "s", ["ok"]),
        "HERON_SANDBOX_ENV": "HERON_KEPT",
        "HERON_KEPT": "kept",
        "HERON_OTHER": "other-marker-1b2c",
        **MARKERS,
    }
    own = Daemon(home, env).start()
    try:
        with own.client() as client:
            status = client.get("/v1/status").json()
            assert status["sandbox"]["active"] is True, status["sandbox"]
            assert status["sandbox"]["backend"] == "bubblewrap"
            installed = client.put("/v1/model-auth/anthropic", json={"api_key": INSTALLED})
            assert installed.status_code == 200, installed.text
            credentials = home / "credentials.json"
            assert INSTALLED in credentials.read_text()  # there to be stolen, were it visible
            daemon_pid = status["pid"]
            steps = [
                run(f"cat {credentials}; ls -a {home}; ls {own.socket}"),
                run(f"cat /proc/{daemon_pid}/environ; ls /proc | grep -c '^[0-9]'"),
                run("env; env > env.txt"),
                run(f"echo inside > inside.txt; mkdir {outside}; echo t > /tmp/t"),
                run("cat /tmp/t; setsid sleep 600.4321 >/dev/null 2>&1 & echo started"),
            ]
            model = write_script(
                home, "agent", [{"tool_calls": [step]} for step in steps] + ["done"]
            )
            node = create(client, prompt="x", scopes=["act"], cwd=str(work), model=model)
            settled = wait_settled(client, node["node_id"], timeout=60)
            assert settled["outcome"]["output_text"] == "done"
            text = transcript(client, node["node_id"])
            # A node working in a folder that holds $HERON_HOME: its file tools refuse it.
            looks = [
                {"name": "fs-read-file", "arguments": {"path": "home/credentials.json"}},
                {"name": "fs-grep", "arguments": {"pattern": "installed-marker"}},
                {"name": "fs-glob", "arguments": {"pattern": "**/*.json"}},
                run("cat home/credentials.json; ls home"),
            ]
            model = write_script(home, "looker", [{"tool_calls": looks}, "done"])
            node = create(client, prompt="x", scopes=["act"], cwd=str(tmp_path), model=model)
            assert wait_settled(client, node["node_id"], timeout=60)["outcome"]["output_text"]
            looked = transcript(client, node["node_id"])
            # Even working in $HERON_HOME itself, its secret files stay out of reach.
            read = {"name": "fs-read-file", "arguments": {"path": "credentials.json"}}
            model = write_script(home, "inside", [{"tool_calls": [read]}, "done"])
            node = create(client, prompt="x", scopes=["act"], cwd=str(home), model=model)
            assert wait_settled(client, node["node_id"], timeout=60)["outcome"]["output_text"]
            looked += transcript(client, node["node_id"])
    finally:
        own.stop()
    assert looked.count("not available to these tools") == 2
    assert INSTALLED not in looked and "credentials.json: No such file" in looked
    for secret in [*MARKERS.values(), INSTALLED, "other-marker-1b2c"]:
        assert secret not in text
        assert secret not in (work / "env.txt").read_text()
    assert "No such file or directory" in text  # credentials.json, the socket, /proc/<pid>
    seen = (work / "env.txt").read_text()
    assert "HERON_KEPT=kept\n" in seen and "HOME=/tmp\n" in seen
    assert "HERON_OTHER" not in seen and "HERON_HOME" not in seen
    assert (work / "inside.txt").read_text() == "inside\n"  # the working directory is writable
    escaped = outside.exists()
    if escaped:
        outside.rmdir()
    assert not escaped  # the rest is read-only
    assert "Read-only file system" in text
    assert not list((home / "sandbox").glob("*")), "the node's /tmp goes with its shell"
    assert not _running("sleep\x00600.4321\x00")


def test_without_a_sandbox_the_daemon_says_so_or_refuses(tmp_path: Path) -> None:
    """A ``bwrap`` that cannot make namespaces (as in a locked-down container)."""
    fake = broken_bwrap(tmp_path, "bwrap: No permissions to create new namespace")
    home = tmp_path / "home"
    env = {
        "HERON_PROVIDER": write_script(tmp_path, "s", ["ok"]),
        "PATH": f"{fake}:{os.environ['PATH']}",
    }
    refused = Daemon(home, env)
    with pytest.raises(RuntimeError, match="exited at startup") as failed:
        refused.start("--require-sandbox")
    assert "no sandbox for node commands" in str(failed.value)
    assert "No permissions to create new namespace" in str(failed.value)

    own = Daemon(tmp_path / "home2", env).start()
    try:
        with own.client() as client:
            sandbox = client.get("/v1/status").json()["sandbox"]
    finally:
        own.stop()
    assert sandbox["active"] is False and sandbox["mode"] == "auto"
    assert "No permissions to create new namespace" in sandbox["problem"]
    assert sandbox["host_commands"] == "process_group"
    assert "node commands run WITHOUT a sandbox" in own.log.read_text()


def _running(cmdline: str) -> bool:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if Path(f"/proc/{entry}/cmdline").read_bytes() == cmdline.encode():
                    return True
            except OSError:
                pass
    return False


def test_a_worktree_node_commits_but_cannot_plant_a_hook(
    client: httpx.Client, scripts: Any, tmp_path: Path
) -> None:
    """The repository's git directory is writable (a commit needs it) except its hooks and
    config, which would run code as the daemon's user at the owner's next git command."""
    commit = run(
        "echo done > result.txt && git add result.txt && "
        "git -c user.name=N -c user.email=n@example.invalid commit -qm work && echo committed"
    )
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("hello\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "-c", "user.name=T", "-c", "user.email=t@example.invalid", "commit", "-qm", "1")
    common = repo / ".git"
    plant = run(
        f"echo 'touch /tmp/pwned' > {common}/hooks/post-checkout; "
        f"git config --file {common}/config core.hooksPath /tmp"
    )
    model = scripts("committer", [{"tool_calls": [commit]}, {"tool_calls": [plant]}, "done"])
    node = create(client, prompt="commit", model=model, cwd=str(repo), worktree="sandboxed")
    wait_settled(client, node["node_id"], timeout=60)
    text = transcript(client, node["node_id"])
    assert "committed" in text
    assert git(repo, "show", "heron/sandboxed:result.txt") == "done\n"
    assert not (common / "hooks" / "post-checkout").exists()
    assert "hooksPath" not in (common / "config").read_text()
    # The hook's write fails; git's config rewrite (a rename over it) too.
    assert "post-checkout: Read-only file system" in text
    assert "could not write config file" in text


def test_daemon_start_passes_require_sandbox_on(tmp_path: Path) -> None:
    """``heron daemon start --require-sandbox``: the detached daemon refuses too."""
    fake = broken_bwrap(tmp_path, "bwrap: no")
    env = {
        **os.environ,
        "HERON_HOME": str(tmp_path / "home"),
        "HERON_PROVIDER": write_script(tmp_path, "s", ["ok"]),
        "PATH": f"{fake}:{os.environ['PATH']}",
    }
    env.pop("HERON_SOCKET", None)
    done = subprocess.run(
        [sys.executable, "-m", "heron", "daemon", "start", "--require-sandbox"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert "no sandbox for node commands" in done.stderr + done.stdout


def test_the_net_scope_decides_whether_commands_reach_the_network(
    client: httpx.Client, scripts: Any, tmp_path: Path
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        # bash's /dev/tcp, not this Python: a node's /tmp is its own, so an interpreter
        # installed under /tmp (a CI checkout) is out of the sandbox's sight.
        probe = run(f"(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>&1 && echo ok-''connected")
        seen = {}
        for scopes in (["act"], ["act", "net"]):
            model = scripts("-".join(scopes), [{"tool_calls": [probe]}, "done"])
            node = create(client, prompt="x", scopes=scopes, cwd=str(tmp_path), model=model)
            wait_settled(client, node["node_id"], timeout=60)
            seen["+".join(scopes)] = transcript(client, node["node_id"])
    assert "ok-connected" not in seen["act"] and "Connection refused" in seen["act"]
    assert "ok-connected" in seen["act+net"]


def test_daemon_start_warns_when_commands_run_unsandboxed(tmp_path: Path) -> None:
    fake = broken_bwrap(tmp_path, "bwrap: no namespaces here")
    env = {
        **os.environ,
        "HERON_HOME": str(tmp_path / "home"),
        "HERON_PROVIDER": write_script(tmp_path, "s", ["ok"]),
        "PATH": f"{fake}:{os.environ['PATH']}",
    }
    env.pop("HERON_SOCKET", None)
    heron = [sys.executable, "-m", "heron", "daemon"]
    try:
        done = subprocess.run(
            [*heron, "start"], env=env, capture_output=True, text=True, timeout=120, check=False
        )
    finally:
        subprocess.run([*heron, "stop"], env=env, capture_output=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "node commands run without a sandbox (bubblewrap cannot start" in done.stderr
    assert "no namespaces here" in done.stderr


def test_off_means_no_bubblewrap_at_all(tmp_path: Path) -> None:
    sandbox = NodeSandbox(RuntimeConfig(home=tmp_path, sandbox="off"))
    sandbox.check()
    status = sandbox.status()
    assert (status.active, status.mode, status.problem) == (False, "off", "HERON_SANDBOX=off")
    assert status.host_commands == "process_group" and sandbox.contain is None
    assert sandbox.for_node("n-1", tmp_path) is None
    assert sandbox.hidden_from_files == ()
    on = NodeSandbox(RuntimeConfig(home=tmp_path / "home", sandbox="require"))
    on.check()  # bubblewrap works here: no refusal
    assert on.status().host_commands == "pid_namespace"
    assert str((tmp_path / "home").resolve()) in on.hidden_from_files


@pytest.mark.parametrize(
    ("url", "hidden"),
    [
        ("postgresql+psycopg://heron:pw@/heron?host=/srv/pg", ["/srv/pg"]),
        ("postgresql+psycopg:///heron", ["/run/postgresql"]),
        ("postgresql+psycopg://heron:pw@db.example:5432/heron", []),
    ],
)
def test_a_postgresql_reached_by_socket_is_hidden(
    tmp_path: Path, url: str, hidden: list[str]
) -> None:
    """Over a Unix socket the daemon's user may need no password (peer authentication):
    its folder goes; over TCP the password is what protects it (withheld)."""
    sandbox = NodeSandbox(RuntimeConfig(home=tmp_path, database_url=url))
    assert {os.path.realpath(path) for path in hidden} <= set(sandbox.hidden)
    if not hidden:
        assert os.path.realpath("/run/postgresql") not in sandbox.hidden


def test_a_nodes_present_skill_never_zips_the_daemons_home(tmp_path: Path) -> None:
    home = tmp_path / ".heron"
    home.mkdir()
    (home / "credentials.json").write_text("{}")
    made = NodeTools(tools=[], hidden=(str(home),))
    (skill,) = kind_skills(["present"], workspace=tmp_path, made=made, shell=bash_tools)
    zip_tool = next(t for t in skill.tools if t.name == "present-zip")
    assert isinstance(zip_tool, PresentZipTool)
    assert zip_tool.workspace.hidden == (home,)
