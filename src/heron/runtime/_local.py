"""Talking to a daemon on this machine: its Unix socket, pid file and process."""

from __future__ import annotations

import contextlib
import fcntl
import http.client
import json
import os
import signal
import socket
import time
from pathlib import Path
from typing import Any

__all__ = ["UnixHTTPConnection", "daemon_pid", "get_json", "stop_daemon", "wait_healthy"]


class UnixHTTPConnection(http.client.HTTPConnection):
    """``http.client`` over a Unix socket."""

    def __init__(self, path: str | os.PathLike[str], timeout: float = 5.0) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = os.fspath(path)

    def connect(self) -> None:
        """Open the Unix socket."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self._path)
        except BaseException:
            sock.close()
            raise
        self.sock = sock


def get_json(path: str | os.PathLike[str], route: str, timeout: float = 5.0) -> Any:
    """``GET route`` on the daemon at socket ``path``; ``OSError`` if it does not answer."""
    conn = UnixHTTPConnection(path, timeout=timeout)
    try:
        conn.request("GET", route)
        response = conn.getresponse()
        body = response.read()
        if response.status != 200:
            raise OSError(f"{route} answered {response.status}")
        return json.loads(body)
    except (http.client.HTTPException, ValueError) as exc:
        raise OSError(str(exc)) from exc
    finally:
        conn.close()


def daemon_pid(pid_file: Path) -> int | None:
    """The running daemon's pid (from ``pid_file``), or ``None`` if none runs.

    A daemon holds ``heron.lock`` beside its pid file for as long as it lives.
    An unlocked lock means the pid file is stale, even if the process it names
    is alive: a daemon killed with SIGKILL leaves it, and the pid may be reused.
    """
    if not _locked(pid_file.with_name("heron.lock")):
        return None
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return pid  # alive, someone else's
    return pid


def _locked(lock_file: Path) -> bool:
    """Whether a process holds ``lock_file`` (probed with a shared lock, released at once)."""
    try:
        fd = os.open(lock_file, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # also releases the probe's own lock
    return False


def wait_healthy(socket_path: Path, *, timeout: float, alive: Any = None) -> bool:
    """Poll ``/healthz`` until it answers, ``alive()`` turns false, or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            get_json(socket_path, "/healthz", timeout=2.0)
            return True
        if alive is not None and not alive():
            return False
        time.sleep(0.05)
    return False


def stop_daemon(pid_file: Path, *, timeout: float = 20.0) -> int | None:
    """SIGTERM the daemon and wait for it to exit; its pid, or ``None`` if none ran.

    ``TimeoutError`` if it is still alive after ``timeout`` seconds.
    """
    pid = daemon_pid(pid_file)
    if pid is None:
        return None
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # reap it if it is our own child
        time.sleep(0.05)
    raise TimeoutError(f"the daemon (pid {pid}) did not stop within {timeout:.0f} s")
