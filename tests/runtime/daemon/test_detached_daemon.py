"""``heron daemon --detach``, ``heron daemon stop`` and ``heron sys connect``, as a user runs them.

Each test has its own ``HERON_HOME``; every daemon a test detaches is stopped
at teardown, by ``heron daemon stop`` or, failing that, by SIGKILL.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.support.daemon import Daemon, write_script
from tests.support.polling import eventually

from heron.runtime._local import get_json

pytestmark = pytest.mark.slow


class Heron:
    """Runs ``python -m heron ...`` on one ``HERON_HOME``."""

    def __init__(self, home: Path, provider: str) -> None:
        self.home = home
        self.env = {**os.environ, "HERON_HOME": str(home), "HERON_PROVIDER": provider}
        for name in ("HERON_SOCKET", "HERON_TOKEN"):
            self.env.pop(name, None)

    def __call__(self, *args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "heron", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    @property
    def pid_file(self) -> Path:
        return self.home / "heron.pid"

    def pid(self) -> int:
        return int(self.pid_file.read_text().strip())


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.fixture
def heron(tmp_path: Path) -> Iterator[Heron]:
    """The CLI on a fresh HERON_HOME (not created yet: the daemon creates it)."""
    script = write_script(tmp_path, "default", ["Hi from the CLI test."])
    runner = Heron(tmp_path / "home", script)
    try:
        yield runner
    finally:
        pid = None
        with contextlib.suppress(OSError, ValueError):
            pid = runner.pid()
        if pid is not None:
            runner("daemon", "stop")
        if pid is not None and alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_detach_then_stop(heron: Heron) -> None:
    started = heron("daemon", "--detach")
    assert started.returncode == 0, started.stderr
    pid = heron.pid()
    assert f"heron daemon running (pid {pid})" in started.stdout
    assert alive(pid)
    # It returned once healthy: the socket answers at once.
    assert get_json(heron.home / "heron.sock", "/healthz")["ok"] is True
    assert stat.S_IMODE(heron.home.stat().st_mode) == 0o700
    assert stat.S_IMODE((heron.home / "heron.sock").stat().st_mode) == 0o600

    again = heron("daemon", "--detach")  # idempotent: says so, starts nothing
    assert again.returncode == 0, again.stderr
    assert f"(pid {pid})" in again.stdout and "nothing to do" in again.stdout
    assert heron.pid() == pid and alive(pid)

    stopped = heron("daemon", "stop")
    assert stopped.returncode == 0, stopped.stderr
    assert f"heron daemon (pid {pid}) stopped" in stopped.stdout
    eventually(lambda: not alive(pid), timeout=20, what=f"pid {pid} exiting")
    assert not heron.pid_file.exists()
    assert not (heron.home / "heron.sock").exists()

    none = heron("daemon", "stop")
    assert none.returncode == 0
    assert "no Heron daemon is running" in none.stdout


def test_sys_connect_turns_tcp_on_in_a_running_daemon(heron: Heron) -> None:
    assert heron("daemon", "--detach").returncode == 0
    first = heron.pid()
    port = free_port()

    connected = heron("sys", "connect", "--listen", f"127.0.0.1:{port}")
    assert connected.returncode == 0, connected.stderr
    address = re.search(r"^address: (\S+)", connected.stdout, re.M)
    token = re.search(r"^token:\s+(\S+)", connected.stdout, re.M)
    assert address is not None and token is not None, connected.stdout
    assert address[1] == f"http://127.0.0.1:{port}"

    stored = heron.home / "connect.json"
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    assert json.loads(stored.read_text()) == {"listen": f"127.0.0.1:{port}", "token": token[1]}

    # The daemon was handed over to a successor listening on TCP.
    eventually(lambda: not alive(first), timeout=20, what=f"pid {first} exiting")
    second = heron.pid()
    assert second != first and alive(second)
    with httpx.Client(base_url=address[1], timeout=30) as client:
        response = client.get("/v1/status", headers={"Authorization": f"Bearer {token[1]}"})
        assert response.status_code == 200, response.text
        assert response.json()["pid"] == second
        assert client.get("/v1/status").status_code == 401

    # The typed client, so the CLI, reaches it with HERON_BASE_URL and the stored token.
    heron.env["HERON_BASE_URL"] = address[1]
    status = heron("daemon", "status")
    assert status.returncode == 0, status.stderr
    assert status.stdout.startswith(f"heron daemon is running (pid {second})\n")
    assert f"tcp 127.0.0.1:{port} (bearer token)" in status.stdout
    listed = heron("nodes", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == []
    del heron.env["HERON_BASE_URL"]

    # Running it again keeps the token; --rotate issues a new one.
    same = heron("sys", "connect", "--listen", f"127.0.0.1:{port}")
    assert f"token:   {token[1]}" in same.stdout
    rotated = heron("sys", "connect", "--listen", f"127.0.0.1:{port}", "--rotate")
    assert rotated.returncode == 0, rotated.stderr
    new_token = re.search(r"^token:\s+(\S+)", rotated.stdout, re.M)
    assert new_token is not None and new_token[1] != token[1]
    with httpx.Client(base_url=address[1], timeout=30) as client:
        old = client.get("/healthz", headers={"Authorization": f"Bearer {token[1]}"})
        new = client.get("/healthz", headers={"Authorization": f"Bearer {new_token[1]}"})
    assert (old.status_code, new.status_code) == (401, 200)


def test_sys_connect_to_a_taken_port_keeps_the_daemon_running(heron: Heron) -> None:
    assert heron("daemon", "--detach").returncode == 0
    pid = heron.pid()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = heron("sys", "connect", "--listen", f"127.0.0.1:{port}")
    assert result.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "the daemon keeps running" in result.stderr
    assert heron.pid() == pid and alive(pid)
    assert not (heron.home / "connect.json").exists()


def test_sys_connect_without_a_daemon_only_stores(heron: Heron) -> None:
    connected = heron("sys", "connect", "--listen", "127.0.0.1:7799")
    assert connected.returncode == 0, connected.stderr
    assert "address: http://127.0.0.1:7799" in connected.stdout
    assert not heron.pid_file.exists()
    stored = json.loads((heron.home / "connect.json").read_text())
    assert stored["listen"] == "127.0.0.1:7799" and len(stored["token"]) >= 32
    assert stat.S_IMODE(heron.home.stat().st_mode) == 0o700


@pytest.mark.parametrize(
    "args",
    [["sys", "connect", "--listen", "7717"], ["daemon", "--listen", "host:99999"]],
    ids=["connect-no-host", "daemon-bad-port"],
)
def test_bad_listen_addresses_are_refused(heron: Heron, args: list[str]) -> None:
    result = heron(*args)
    assert result.returncode == 1
    assert "heron: error: --listen" in result.stderr
    assert not (heron.home / "connect.json").exists()
    assert not heron.pid_file.exists()


def test_a_stale_socket_and_pid_file_do_not_block_a_new_daemon(tmp_path: Path) -> None:
    script = write_script(tmp_path, "default", ["Hi."])
    daemon = Daemon(tmp_path / "home", {"HERON_PROVIDER": script})
    daemon.start()
    try:
        daemon.kill()
        # SIGKILL: nothing cleaned up.
        assert daemon.socket.exists()
        assert (daemon.home / "heron.pid").exists()
        heron = Heron(daemon.home, script)
        assert "no Heron daemon is running" in heron("daemon", "stop").stdout
        daemon.start()
        with daemon.client() as client:
            status = client.get("/v1/status").json()
        assert daemon.process is not None and status["pid"] == daemon.process.pid
    finally:
        daemon.stop()


def test_a_second_foreground_daemon_is_refused(tmp_path: Path) -> None:
    script = write_script(tmp_path, "default", ["Hi."])
    daemon = Daemon(tmp_path / "home", {"HERON_PROVIDER": script})
    daemon.start()
    try:
        second = Heron(daemon.home, script)("daemon", timeout=60)
        assert second.returncode == 1
        assert "a Heron daemon already runs" in second.stderr
        # The first one is untouched and still answers on its socket.
        with daemon.client() as client:
            assert client.get("/healthz").status_code == 200
    finally:
        daemon.stop()


def test_an_unreachable_database_is_one_error_line_without_the_password(heron: Heron) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    heron.env["HERON_DATABASE_URL"] = f"postgresql+psycopg://heron:s3cret@127.0.0.1:{port}/x"
    done = heron("daemon")
    assert done.returncode == 1
    assert done.stderr.startswith("heron: error: cannot connect to postgresql+psycopg://heron:***@")
    assert "s3cret" not in done.stderr + done.stdout
    assert "Traceback" not in done.stderr
    assert not (heron.home / "heron.sock").exists()


@pytest.mark.parametrize("where", ["missing/heron.sock", "x" * 120 + ".sock"])
def test_a_socket_path_that_cannot_be_bound_is_one_error_line(heron: Heron, where: str) -> None:
    # A directory that does not exist, or a path past AF_UNIX's ~107 bytes.
    socket_path = heron.home.parent / where
    heron.env["HERON_SOCKET"] = str(socket_path)
    done = heron("daemon")
    assert done.returncode == 1
    assert done.stderr.startswith(f"heron: error: cannot listen on {socket_path}: ")
    assert "Traceback" not in done.stderr
    assert not heron.pid_file.exists()
