"""The embedded model in the daemon runs in a worker process: a real daemon whose worker is
killed with SIGSEGV mid-turn keeps answering, its other nodes finish, and the next node on
the embedded model gets a fresh worker.

The timeouts are generous: a daemon node's prompt (its tools' schemas) takes the small
model a while to read on a busy machine."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.daemon import Daemon, create, wait_settled, write_script
from tests.support.polling import eventually
from tests.support.sse import records, stream

pytestmark = pytest.mark.slow


def _workers(daemon: Daemon) -> list[int]:
    """Pids of the daemon's model worker processes (its children running the worker)."""
    assert daemon.process is not None
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == daemon.process.pid and b"heron.providers._local_worker" in command:
            found.append(int(entry.name))
    return found


def _one_worker(daemon: Daemon, but: int | None = None, timeout: float = 60) -> int:
    pids = eventually(
        lambda: [p for p in _workers(daemon) if p != but],
        lambda pids: len(pids) == 1,
        timeout=timeout,
        what="one model worker of the daemon",
    )
    return pids[0]


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def _busy(pid: int, timeout: float = 300) -> None:
    """Wait until process ``pid`` has spent half a second of CPU (an idle worker spends none)."""
    start = _cpu_ticks(pid)
    eventually(
        lambda: _cpu_ticks(pid) - start,
        lambda ticks: ticks >= os.sysconf("SC_CLK_TCK") // 2,
        timeout=timeout,
        what=f"the model worker {pid} working",
    )


def _idle(pid: int, timeout: float = 300) -> None:
    """Wait until process ``pid`` spends no CPU for a second (the worker has its model)."""

    def ticks_in_a_second() -> int:
        before = _cpu_ticks(pid)
        time.sleep(1.0)
        return _cpu_ticks(pid) - before

    eventually(
        ticks_in_a_second,
        lambda ticks: ticks == 0,
        timeout=timeout,
        interval=0,
        what=f"the model worker {pid} idling",
    )


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    """A daemon whose default model is the embedded one."""
    process = Daemon(tmp_path / "home", {"HERON_PROVIDER": "local"}).start()
    try:
        yield process
    finally:
        process.stop()


def test_a_worker_killed_mid_turn_fails_only_its_turn(daemon: Daemon, tmp_path: Path) -> None:
    worker = _one_worker(daemon)  # started with the daemon: the model loads meanwhile
    _idle(worker)
    with daemon.client(timeout=900) as client:
        slow = write_script(tmp_path, "slow", [{"text": "Finished anyway.", "delay": 3.0}])
        other = create(client, prompt="Go.", model=slow)["node_id"]
        story = create(client, prompt="Write a very long story about a dragon.")["node_id"]
        with stream(client, story) as response:
            for record in records(response):
                if record.event == "node.turn.started":
                    break
        _busy(worker)  # the model is mid-turn (reading the prompt or writing)
        os.kill(worker, signal.SIGSEGV)

        crashed = wait_settled(client, story, timeout=900)["outcome"]
        assert crashed["reason"] == "provider_error", crashed
        message = crashed["detail"]["message"]
        assert "the embedded model crashed" in message and "SIGSEGV" in message

        # The daemon kept answering, and its other node finished as if nothing happened.
        assert client.get("/healthz").status_code == 200
        finished = wait_settled(client, other, timeout=300)["outcome"]
        assert (finished["kind"], finished["output_text"]) == ("result", "Finished anyway.")
        assert daemon.process is not None and daemon.process.poll() is None

        # The next node on the embedded model gets a fresh worker and an answer.
        after = create(client, prompt="What is 2 + 2?")["node_id"]
        answered = wait_settled(client, after, timeout=900)["outcome"]
        assert answered["kind"] == "result" and answered["output_text"].strip(), answered
        assert _one_worker(daemon, but=worker) != worker


def test_stopping_the_daemon_ends_its_worker(tmp_path: Path) -> None:
    daemon = Daemon(tmp_path / "home", {"HERON_PROVIDER": "local"}).start()
    try:
        worker = _one_worker(daemon)
    finally:
        daemon.stop()

    def gone() -> bool:
        try:
            os.kill(worker, 0)
        except ProcessLookupError:
            return True
        return False

    eventually(gone, timeout=20, what=f"the model worker {worker} exiting with its daemon")
