"""Computer: the Docker backend's clear failure here, and the bubblewrap sandbox for real."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import socket
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.polling import eventually_async

from heron.mcp import Computer, ComputerError, MCPClient, MemoryStorage
from heron.mcp._computer import DEFAULT_TOOLS

from .conftest import TOOLS_SPEC
from .fake_docker import FakeEngine, RunningEngine

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
    with pytest.raises(ComputerError, match="tools is empty"):
        Computer(tmp_path, [], tools=[])
    assert Computer(tmp_path).tools == DEFAULT_TOOLS  # the file and shell tools


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
async def test_the_file_and_shell_tools_run_sandboxed_in_one_line(tmp_path: Path) -> None:
    async with Computer(tmp_path, backend="bubblewrap") as computer:
        async with MCPClient("job", computer.get_connection(), MemoryStorage()) as client:
            names = {t.name for t in await client.list_tools()}
            assert {"fs-read-file", "fs-write-file", "bash-run", "bash-start"} <= names
            ran = await client.call_tool("bash-run", {"command": "pwd; echo hi > made.txt"})
            assert not ran.is_error and str(tmp_path) in ran.text, ran.text
            read = await client.call_tool("fs-read-file", {"path": "made.txt"})
            assert "hi" in read.text, read.text
            escape = await client.call_tool("bash-run", {"command": "touch /etc/heron-escape"})
            assert "Read-only file system" in escape.text
    assert (tmp_path / "made.txt").read_text() == "hi\n"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def _get(port: int, seconds: float = 20) -> bytes:
    """``GET /`` on ``127.0.0.1:port``, retried until something answers."""

    async def get() -> bytes:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET / HTTP/1.0\r\n\r\n")
            await writer.drain()
            answer = await reader.read()
            writer.close()
        except OSError:
            return b""
        return answer

    answer: bytes = await eventually_async(
        get, timeout=seconds, what=f"something answering on port {port}"
    )
    return answer


@needs_bwrap
async def test_bubblewrap_forwards_only_the_listed_ports(tmp_path: Path) -> None:
    """A server inside is reached on its listed port; the host's other ports are not
    reachable from inside (the network is the sandbox's own)."""

    async def host_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"host service")
        writer.close()

    host_service = await asyncio.start_server(host_answer, "127.0.0.1", 0)
    host_port = host_service.sockets[0].getsockname()[1]
    (tmp_path / "index.html").write_text("served from the sandbox")
    listed = _free_port()
    connect = (
        f"{sys.executable} -c \"import socket; socket.create_connection(('127.0.0.1', {host_port}),"
        " timeout=5); print('reached')\""
    )
    try:
        async with Computer(tmp_path, [listed], backend="bubblewrap") as computer:
            async with MCPClient("job", computer.get_connection(), MemoryStorage()) as client:
                serve = f"{sys.executable} -m http.server {listed} --bind 127.0.0.1"
                started = await client.call_tool("bash-start", {"command": serve})
                assert not started.is_error, started.text
                assert b"served from the sandbox" in await _get(listed)
                reach = await client.call_tool("bash-run", {"command": connect})
                assert "reached" not in reach.text and "Connection refused" in reach.text
        with pytest.raises(OSError):  # the forward went with the computer
            await asyncio.open_connection("127.0.0.1", listed)
    finally:
        host_service.close()


@needs_bwrap
async def test_bubblewrap_start_failure_reports_the_servers_error(tmp_path: Path) -> None:
    computer = Computer(tmp_path, [], tools=["no_such_module:TOOLS"], backend="bubblewrap")
    expected = "exited: heron.mcp: tool spec 'no_such_module:TOOLS': cannot import"
    with pytest.raises(ComputerError, match=re.escape(expected)):
        await computer.start()


@pytest.fixture
def fake_engine(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeEngine]:
    """A Docker Engine API stand-in, reached through DOCKER_HOST."""
    folder = Path(tempfile.mkdtemp(prefix="heron-docker-", dir="/tmp"))
    running = RunningEngine(folder / "docker.sock")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{folder}/docker.sock")
    yield running.engine
    running.stop()
    shutil.rmtree(folder)


async def test_docker_backend_runs_the_server_as_this_user_and_removes_the_container(
    tmp_path: Path, fake_engine: FakeEngine
) -> None:
    async with Computer(tmp_path, [8080], tools=[TOOLS_SPEC]) as computer:
        (spec,) = (c.spec for c in fake_engine.containers.values())
        assert spec["User"] == f"{os.getuid()}:{os.getgid()}"
        assert spec["WorkingDir"] == "/workspace"
        assert f"{tmp_path}:/workspace:rw" in spec["HostConfig"]["Binds"]
        async with MCPClient("job", computer.get_connection(), MemoryStorage()) as client:
            assert (await client.call_tool("echo", {"text": "boxed"})).text == "boxed"
    # Created, then started as a separate request; removed on the way out.
    calls = [(m, p) for m, p in fake_engine.requests if p.startswith("/containers/")]
    assert calls[0] == ("POST", "/containers/create")
    assert ("POST", "/containers/c1/start") in calls
    assert calls[-1] == ("DELETE", "/containers/c1")
    assert fake_engine.containers == {} and fake_engine.removed == ["c1"]


async def test_a_container_that_fails_to_start_is_removed(
    tmp_path: Path, fake_engine: FakeEngine
) -> None:
    fake_engine.fail_start = True
    with pytest.raises(ComputerError, match=r"could not start a container .* no such file /nope"):
        await Computer(tmp_path, [], tools=[TOOLS_SPEC]).start()
    assert fake_engine.removed == ["c1"] and fake_engine.containers == {}


async def test_a_container_that_never_listens_times_out_with_its_logs(
    tmp_path: Path, fake_engine: FakeEngine
) -> None:
    fake_engine.run_containers = False
    fake_engine.canned_logs = b"PermissionError: [Errno 13] /run/heron/mcp.sock\n"
    computer = Computer(tmp_path, [], tools=[TOOLS_SPEC], start_timeout=0.3)
    with pytest.raises(ComputerError, match=r"did not listen within 0\.3 s: PermissionError"):
        await computer.start()
    assert fake_engine.removed == ["c1"]
