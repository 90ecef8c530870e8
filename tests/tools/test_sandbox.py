"""``bash_tools(sandbox=Sandbox(...))``: every command under bubblewrap, for real."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from tests.support.polling import eventually

from heron import ToolContext, UserError
from heron.tools import Sandbox, bash_tools, sandbox_environment
from heron.tools._sandbox import contained, sandbox_problem

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")


async def run(tools: list[object], command: str) -> str:
    (bash_run,) = [t for t in tools if getattr(t, "name", None) == "bash-run"]
    result = await bash_run.execute({"command": command}, ToolContext())  # type: ignore[attr-defined]
    return str(result.content[0].text)


def test_paths_are_checked() -> None:
    with pytest.raises(ValueError, match="not an absolute path"):
        Sandbox(writable=("relative",))
    with pytest.raises(TypeError, match="list of paths"):
        Sandbox(hidden="/etc")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cannot hold / itself"):
        Sandbox(writable=("/",))  # the host's /proc would come back with it
    with pytest.raises(UserError, match="cannot work in /"):
        bash_tools("/", sandbox=Sandbox())
    assert sandbox_problem() is None


async def test_commands_write_only_their_folder_and_never_see_hidden_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work, keep = tmp_path / "work", tmp_path / "tmp"
    for folder in (work, keep):
        folder.mkdir()
    # Outside /tmp (a tmpfs of its own inside): what hides it is all that hides it.
    private = Path(tempfile.mkdtemp(prefix="heron-private-", dir="/var/tmp"))
    try:
        await _sandboxed(work, private, keep, monkeypatch)
    finally:
        shutil.rmtree(private)


async def _sandboxed(
    work: Path, private: Path, keep: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (private / "key").write_text("sk-sandbox-marker")
    monkeypatch.setenv("SOME_API_KEY", "sk-env-marker")
    sandbox = Sandbox(hidden=(str(private),), tmp=str(keep), network=False)
    async with bash_tools(work, sandbox=sandbox, base_env=sandbox_environment()) as tools:
        seen = await run(tools, f"cat {private}/key; ls -a {private}; env; echo made > here.txt")
        assert "sk-sandbox-marker" not in seen and "sk-env-marker" not in seen
        assert "HOME=/tmp" in seen and "SOME_API_KEY" not in seen
        # No capability to undo the hiding, whoever runs it (root keeps them by default).
        unhide = await run(
            tools, f"grep CapEff /proc/self/status; umount -l {private}; cat {private}/key"
        )
        assert "0000000000000000" in unhide and "sk-sandbox-marker" not in unhide
        assert (work / "here.txt").read_text() == "made\n"
        refused = await run(tools, "touch /var/tmp/heron-sandbox-escape")
        assert "Read-only file system" in refused
        escape = Path("/var/tmp") / "heron-sandbox-escape"
        assert not escape.exists()
        # /tmp is the given folder: it lasts from one command to the next.
        await run(tools, "echo kept > /tmp/note")
        assert "kept" in await run(tools, "cat /tmp/note")
        assert (keep / "note").read_text() == "kept\n"
        # Its own processes only, and no network but a loopback of its own.
        counted = re.search(r"stdout:\n(\d+)", await run(tools, "ls /proc | grep -c '^[0-9]'"))
        assert counted is not None and int(counted[1]) < 5
        server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        try:
            # bash's /dev/tcp, not this Python (it may live under /tmp, which the sandbox
            # replaces with the given folder).
            probe = f"(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>&1"
            assert "Connection refused" in await run(tools, probe)
        finally:
            server.close()


async def test_nothing_a_command_starts_outlives_it(tmp_path: Path) -> None:
    """Without ``outlive``, even ``setsid`` cannot keep a process past its command."""
    async with bash_tools(tmp_path, sandbox=Sandbox()) as tools:
        await run(tools, "setsid sleep 600.2468 >/dev/null 2>&1 & echo started")
    assert _gone(b"sleep\x00600.2468\x00")


def test_contained_keeps_the_host_but_not_the_leftovers(tmp_path: Path) -> None:
    script = f"setsid sleep 600.1357 >/dev/null 2>&1 & echo $$ > {tmp_path}/pid"
    done = subprocess.run(contained(["sh", "-c", script]), check=False, timeout=30)
    assert done.returncode == 0
    assert (tmp_path / "pid").read_text().strip() in ("1", "2")  # its own PID namespace
    assert _gone(b"sleep\x00600.1357\x00")


def _gone(cmdline: bytes, seconds: float = 10) -> bool:
    """Whether no process runs ``cmdline`` (polled: a namespace's end takes a moment)."""
    try:
        eventually(
            lambda: (
                not any(_runs(entry, cmdline) for entry in os.listdir("/proc") if entry.isdigit())
            ),
            timeout=seconds,
            interval=0.02,
        )
    except AssertionError:
        return False
    return True


def _runs(pid: str, cmdline: bytes) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
        if stat[stat.rfind(b")") + 2 :].split()[0] in (b"Z", b"X"):
            return False
        return Path(f"/proc/{pid}/cmdline").read_bytes() == cmdline
    except OSError:
        return False
