"""A real daemon process on a temporary ``HERON_HOME``, driven over its Unix socket, and the
small calls most daemon tests make (create a node, wait for it, read its database)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from heron.runtime._local import get_json

from .polling import eventually

STARTUP_TIMEOUT = 60.0


class Daemon:
    """One ``heron daemon`` process; :meth:`start` again after :meth:`kill` to restart it."""

    def __init__(self, home: Path, env: dict[str, str] | None = None) -> None:
        self.home = home
        self.socket = home / "heron.sock"
        self.env = {**os.environ, "HERON_HOME": str(home), **(env or {})}
        self.env.pop("HERON_SOCKET", None)
        self.process: subprocess.Popen[bytes] | None = None
        self.args: list[str] = []
        self.log = home / "test-daemon.log"

    def start(self, *args: str) -> Daemon:
        """Start the daemon and wait until ``/healthz`` answers on the socket."""
        self.args = list(args) or self.args
        self.home.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "heron", "daemon", *self.args],
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        process = self.process

        def healthy() -> bool:
            if process.poll() is not None:
                raise RuntimeError(f"the daemon exited at startup:\n{self.log.read_text()}")
            # http.client, not httpx: httpcore leaks the socket of a refused Unix connect,
            # which the warnings-are-errors config turns into a failure.
            try:
                get_json(self.socket, "/healthz", timeout=2)
            except OSError:
                return False
            return True

        try:
            eventually(healthy, timeout=STARTUP_TIMEOUT, what="the daemon's /healthz")
        except AssertionError:
            raise RuntimeError(f"the daemon did not come up:\n{self.log.read_text()}") from None
        return self

    def client(self, timeout: float = 30) -> httpx.Client:
        """An HTTP client on the daemon's Unix socket."""
        transport = httpx.HTTPTransport(uds=str(self.socket))
        return httpx.Client(transport=transport, base_url="http://heron", timeout=timeout)

    def kill(self) -> None:
        """SIGKILL the daemon (nothing gets to clean up)."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        """SIGTERM the daemon and wait for it to exit."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@contextlib.contextmanager
def scripted_daemon(tmp_path: Path, **env: str) -> Iterator[Daemon]:
    """A started daemon on ``tmp_path/home`` whose default model answers ``default``
    (nodes name their own scripts), with ``env`` set; stopped at the end."""
    default = write_script(tmp_path, "default", ["default"])
    daemon = Daemon(tmp_path / "home", {"HERON_PROVIDER": default, **env})
    try:
        yield daemon.start()
    finally:
        daemon.stop()


def node_row(node_id: str, **extra: Any) -> dict[str, Any]:
    """The smallest valid ``heron_nodes`` row (for tests of the store itself)."""
    now = time.time()
    return {
        "node_id": node_id,
        "status": "running",
        "root": True,
        "root_lifecycle": "terminal",
        "mode": "base",
        "pin_cwd": False,
        "extra": {},
        "created_at": now,
        "updated_at": now,
        "runs": 1,
        "turns": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        **extra,
    }


def _tool_call_steps(daemon: Daemon, node_id: str) -> int:
    with sqlite3.connect(daemon.home / "heron.db") as db:
        (count,) = db.execute(
            "SELECT count(*) FROM operation_outputs WHERE workflow_uuid = ? AND function_name = ?",
            (f"heron:{node_id}:1", "tool-call"),
        ).fetchone()
    return int(count)


def wait_tool_call_recorded(daemon: Daemon, node_id: str, timeout: float = 30) -> None:
    """Wait until DBOS has recorded the tool-call step of the node's first run (its
    events come out before the step's record is written)."""
    eventually(
        lambda: _tool_call_steps(daemon, node_id),
        timeout=timeout,
        what=f"a recorded tool-call step of {node_id}",
    )


def forget_tool_call_step(daemon: Daemon, node_id: str) -> None:
    """Delete the recorded tool-call step of the node's first run (the daemon is down), as
    if the crash came before DBOS recorded it: the restarted run calls the tool again."""
    with sqlite3.connect(daemon.home / "heron.db") as db:
        removed = db.execute(
            "DELETE FROM operation_outputs WHERE workflow_uuid = ? AND function_name = ?",
            (f"heron:{node_id}:1", "tool-call"),
        ).rowcount
    assert removed == 1


def write_script(directory: Path, name: str, steps: list[Any]) -> str:
    """Write a scripted-provider script; returns the ``scripted:...`` model spec."""
    path = directory / f"{name}.json"
    path.write_text(json.dumps(steps))
    return f"scripted:{path}"


def rewrite(model: str, steps: Any) -> None:
    """Change a script file in place (as if the provider recovered), with a new mtime (a
    revive reads it again)."""
    path = Path(model.removeprefix("scripted:"))
    before = path.stat().st_mtime_ns
    path.write_text(json.dumps(steps))
    os.utime(path, ns=(before + 10**9, before + 10**9))


def create(client: httpx.Client, **body: Any) -> dict[str, Any]:
    """``POST /v1/nodes`` with ``body``; returns the created node (asserting ``201``)."""
    response = client.post("/v1/nodes", json=body)
    assert response.status_code == 201, response.text
    node: dict[str, Any] = response.json()
    return node


def wait_settled(client: httpx.Client, node_id: str, timeout: float = 30) -> dict[str, Any]:
    """Long-poll the node's outcome until it settles; returns the poll body."""
    body: dict[str, Any] = eventually(
        lambda: client.get(f"/v1/nodes/{node_id}/outcome?wait=5").json(),
        lambda body: body["state"] == "settled",
        timeout=timeout,
        interval=0,
        what=f"node {node_id} settling",
    )
    return body


def wait_status(
    client: httpx.Client, node_id: str, status: str, timeout: float = 30
) -> dict[str, Any]:
    """Poll the node until it has ``status``; returns the node."""
    node: dict[str, Any] = eventually(
        lambda: client.get(f"/v1/nodes/{node_id}").json(),
        lambda node: node["status"] == status,
        timeout=timeout,
        interval=0.02,
        what=f"node {node_id} being {status}",
    )
    return node


SLOW = {"text": "still thinking", "delay": 30}
"""A scripted step that keeps a node's turn running for 30 s."""


def query(daemon: Daemon, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    """Rows of ``sql`` on the daemon's SQLite database."""
    with sqlite3.connect(daemon.home / "heron.db", timeout=30) as db:
        return db.execute(sql, args).fetchall()


def logged(daemon: Daemon, node_id: str, type: str) -> int:
    """How many events of ``type`` the node's event log holds."""
    sql = "SELECT count(*) FROM heron_events WHERE node_id = ? AND type = ?"
    ((count,),) = query(daemon, sql, node_id, type)
    return int(count)


def wait_logged(
    daemon: Daemon, node_id: str, type: str, times: int = 1, timeout: float = 30
) -> None:
    """Wait until the node's event log holds at least ``times`` events of ``type``."""
    eventually(
        lambda: logged(daemon, node_id, type),
        lambda count: count >= times,
        timeout=timeout,
        interval=0.02,
        what=f"{node_id} logging {type} {times} time(s)",
    )
