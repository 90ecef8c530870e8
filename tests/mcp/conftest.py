"""Helpers shared by the MCP tests: server processes on loopback and Unix sockets."""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

TOOLS_FILE = Path(__file__).with_name("served_tools.py")
TOOLS_SPEC = f"{TOOLS_FILE}:TOOLS"


# A client's first message in the 2025-06-18 handshake, as raw JSON-RPC.
INITIALIZE: dict[str, object] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
INITIALIZED: dict[str, object] = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def call_request(request_id: int, name: str, arguments: dict[str, object]) -> dict[str, object]:
    """A JSON-RPC tools/call request."""
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def serve_command(*where: str) -> list[str]:
    """The command running a Heron tool server over ``where`` (``--unix PATH``...)."""
    return [sys.executable, "-m", "heron.mcp", "serve", TOOLS_SPEC, *where]


class ServerProcess:
    """A ``python -m heron.mcp serve`` subprocess, stopped by the fixture."""

    def __init__(self, *where: str, env: dict[str, str] | None = None) -> None:
        self.where = where
        self.env = {**os.environ, **(env or {})}
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            serve_command(*self.where),
            stdin=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env,
        )
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()  # the server announces itself once listening
        assert line.startswith("heron.mcp: serving"), line + self.proc.stderr.read()

    def kill(self) -> None:
        """SIGKILL, as a crash: no cleanup, the socket file stays behind."""
        self._end(signal.SIGKILL)

    def stop(self) -> None:
        self._end(signal.SIGTERM)

    def _end(self, sig: signal.Signals) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(sig)
            proc.wait(10)
        if proc.stderr is not None:
            proc.stderr.close()


@pytest.fixture
def server_process() -> Iterator[type[ServerProcess]]:
    """Start server processes with ``server_process(*where)``; all are stopped afterwards."""
    started: list[ServerProcess] = []

    class Tracked(ServerProcess):
        def start(self) -> None:
            started.append(self)
            super().start()

    yield Tracked
    for proc in started:
        proc.stop()


@pytest.fixture
def sock_path() -> Iterator[Path]:
    """A short Unix socket path (tmp_path can exceed the 108-byte limit)."""
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="heron-mcp-", dir="/tmp"))
    yield folder / "tools.sock"
    for child in folder.iterdir():
        child.unlink()
    folder.rmdir()


@pytest.fixture
def free_port() -> int:
    """A TCP port free on loopback right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="session")
def served() -> ModuleType:
    """The ``served_tools`` module, loaded by path."""
    spec = importlib.util.spec_from_file_location("served_tools", TOOLS_FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(name="serve_command")
def serve_command_fixture() -> Callable[..., list[str]]:
    """``serve_command("--unix", path)``: argv of a Heron tool server process."""
    return serve_command
