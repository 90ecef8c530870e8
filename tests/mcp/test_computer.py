"""Computer: the Docker backend's clear failure here, and the bubblewrap sandbox for real."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest

from heron.mcp import Computer, ComputerError, MCPClient, MemoryStorage

from .conftest import TOOLS_SPEC

pytestmark = pytest.mark.slow


async def test_docker_backend_fails_at_once_without_an_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Point the SDK at a socket nobody listens on, whatever this machine has.
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    computer = Computer(tmp_path, [8080], tools=[TOOLS_SPEC])
    with pytest.raises(ComputerError, match="no Docker engine is reachable"):
        await computer.start()
    with pytest.raises(ComputerError, match="not started"):
        computer.get_connection()


def test_arguments_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ComputerError, match="not a folder"):
        Computer(tmp_path / "missing", [])
    with pytest.raises(ComputerError, match="port numbers"):
        Computer(tmp_path, [0])
    with pytest.raises(ComputerError, match="port numbers"):
        Computer(tmp_path, "8080")  # type: ignore[arg-type]
    with pytest.raises(ComputerError, match="backend must be"):
        Computer(tmp_path, [], backend="vm")  # type: ignore[arg-type]


needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")


@needs_bwrap
async def test_bubblewrap_sandbox_writes_only_inside_its_mount(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    outside = tmp_path / "outside.txt"
    async with Computer(work, [], tools=[TOOLS_SPEC], backend="bubblewrap") as computer:
        async with MCPClient("job", computer.get_connection(), MemoryStorage()) as client:
            assert "write-file" in {t.name for t in await client.list_tools()}
            inside = await client.call_tool(
                "write-file", {"path": str(work / "note.txt"), "text": "hello"}
            )
            assert not inside.is_error, inside.text
            assert (work / "note.txt").read_text() == "hello"

            # /tmp inside is a private tmpfs: a write there never reaches the host.
            await client.call_tool("write-file", {"path": str(outside), "text": "x"})
            assert not outside.exists()
            # Anywhere else outside the mount is read-only.
            probe = Path(__file__).with_name("sandbox-probe.txt")
            refused = await client.call_tool("write-file", {"path": str(probe), "text": "x"})
            assert refused.is_error and "Read-only file system" in refused.text
            assert not probe.exists()

            etc = await client.call_tool("write-file", {"path": "/etc/heron-test", "text": "x"})
            assert etc.is_error and "Read-only file system" in etc.text

            # Its own PID namespace: the server sees itself as a low pid, not the host's.
            sandbox_pid = (await client.call_tool("pid", {})).structured
            assert isinstance(sandbox_pid, int) and sandbox_pid < 10
        socket_path = computer.socket_path
    assert not socket_path.exists()  # stopped and cleaned up


@needs_bwrap
async def test_bubblewrap_sandbox_sees_no_secrets_of_the_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_PROVIDER_API_KEY", "sk-host-secret")
    # A private file outside /tmp, the mount and the code: like ~/.ssh or /root.
    private = Path(tempfile.mkdtemp(prefix="heron-private-", dir="/var/tmp"))
    try:
        (private / "id_key").write_text("private key")
        async with Computer(tmp_path, [], tools=[TOOLS_SPEC], backend="bubblewrap") as computer:
            async with MCPClient("job", computer.get_connection(), MemoryStorage()) as client:
                key = await client.call_tool("getenv", {"name": "FAKE_PROVIDER_API_KEY"})
                assert key.text == "<unset>"
                home = await client.call_tool("getenv", {"name": "HOME"})
                assert home.text == "/tmp"
                path = await client.call_tool("getenv", {"name": "PATH"})
                assert path.text == os.environ["PATH"]
                hidden = await client.call_tool("read-file", {"path": str(private / "id_key")})
                assert hidden.is_error and "No such file" in hidden.text
                # The system's own files stay readable: tools need them.
                hosts = await client.call_tool("read-file", {"path": "/etc/hosts"})
                assert not hosts.is_error, hosts.text
    finally:
        shutil.rmtree(private)


@needs_bwrap
async def test_bubblewrap_start_failure_reports_the_servers_error(tmp_path: Path) -> None:
    computer = Computer(tmp_path, [], tools=["no_such_module:TOOLS"], backend="bubblewrap")
    expected = "exited: heron.mcp: tool spec 'no_such_module:TOOLS': cannot import"
    with pytest.raises(ComputerError, match=re.escape(expected)):
        await computer.start()
