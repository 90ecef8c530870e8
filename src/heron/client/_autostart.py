"""Starting the daemon behind a cold Unix socket, once, however many clients find it cold."""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from ._errors import APIConnectionError
from ._httpx import httpx
from ._settings import SOCKET_HOST, Settings
from ._transport import SocketBackend, sync_transport

__all__ = ["START_TIMEOUT", "daemon_running", "start_daemon"]

START_TIMEOUT = 60.0
"""Seconds a daemon has to answer ``/healthz`` once started."""

_POLL = 0.05


def start_daemon(settings: Settings) -> None:
    """Start the daemon for ``settings`` and wait until it answers ``/healthz``.

    Runs ``python -m heron daemon --detach`` with the client's ``HERON_HOME`` and
    socket and the environment it was constructed in. Clients (threads or processes)
    finding the socket cold at once start one daemon: an exclusive ``flock`` on
    ``home/client-start.lock`` (per open file, so it serialises threads too) lets one
    start it, and the others find it healthy. When a daemon of this home is already
    running but not answering yet (someone ran ``heron daemon`` a moment ago), it is
    waited for while it lives. :class:`APIConnectionError` (``daemon_unavailable``)
    if none comes up, with the end of its output.
    """
    socket_path = settings.socket_path
    assert socket_path is not None
    if _healthy(socket_path):
        return
    home = settings.home
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    with _file_lock(home / "client-start.lock"):
        if _healthy(socket_path):
            return
        output = ""
        if not daemon_running(home):
            env = dict(settings.environ)
            env["HERON_HOME"] = os.fspath(home)
            env["HERON_SOCKET"] = os.fspath(socket_path)
            try:
                done = subprocess.run(
                    [sys.executable, "-m", "heron", "daemon", "--detach"],
                    env=env,
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    timeout=START_TIMEOUT + 30,
                    check=False,
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise _unavailable(socket_path, f"could not run the daemon: {exc}") from None
            if done.returncode == 0 and _healthy(socket_path):
                return
            output = (done.stderr + done.stdout).decode("utf-8", "replace").strip()
            output = output or f"`heron daemon --detach` exited with status {done.returncode}"
        # A daemon of this home runs (it won a race with `--detach`, or was starting
        # already): it counts if it answers before it dies or the start timeout passes.
        deadline = time.monotonic() + START_TIMEOUT
        while daemon_running(home) and time.monotonic() < deadline:
            if _healthy(socket_path):
                return
            time.sleep(_POLL)
        raise _unavailable(socket_path, output or _log_tail(home))


def _unavailable(socket_path: Path, why: str) -> APIConnectionError:
    return APIConnectionError(
        f"the Heron daemon did not come up on {socket_path}: {why[-3000:]}",
        code="daemon_unavailable",
    )


def _log_tail(home: Path, lines: int = 20) -> str:
    try:
        text = (home / "daemon.log").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "a daemon of this home runs but does not answer on this socket"
    return "its log ends:\n" + "\n".join(text.splitlines()[-lines:])


def daemon_running(home: Path) -> bool:
    """Whether a daemon holds ``home``'s lock (the kernel drops it when the daemon dies)."""
    try:
        fd = os.open(home / "heron.lock", os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # also drops the probe's own shared lock at once
    return False


def _healthy(socket_path: Path) -> bool:
    if not socket_path.exists():
        return False
    transport = sync_transport(SocketBackend(), uds=os.fspath(socket_path))
    with (
        contextlib.suppress(httpx.HTTPError),
        httpx.Client(transport=transport, timeout=2.0) as http,
    ):
        return http.get(f"{SOCKET_HOST}/healthz").status_code == 200
    return False


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
