"""Cold start of whole processes: the ``heron`` command, and importing the SDK, client and daemon.

Each row starts a fresh interpreter ``--runs`` times (after one untimed run that warms the
file cache and writes Heron's bytecode, as a first run after install does: the bench ignores
``PYTHONDONTWRITEBYTECODE``, which would otherwise have every run compile Heron's modules
from source) and reports the wall time from spawn to exit (min, median, max), the CPU time
(min and median) and peak RSS of the process (from ``wait4``), and the ratio of the median
to the floor:
``python -c pass`` on the same interpreter and machine. ``heron nodes list`` runs against a
real daemon started on a temporary ``HERON_HOME`` (and stopped at the end). The goals are
those of the issue that asked for these paths to be fast, on a 2-core machine; a machine
busy with other work inflates the wall times (compare the CPU columns, or the ratios).

Run it from the repository root (after ``pip install -e .``)::

    python bench/cold_start.py            # 15 runs per row
    python bench/cold_start.py --runs 5   # a quicker look
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from daemon_load import Daemon


@dataclass(frozen=True)
class Row:
    """One command to time, and the issue's goal for it (seconds of wall time, if any)."""

    name: str
    argv: list[str]
    goal: float | None


@dataclass(frozen=True)
class Sample:
    """One run: wall seconds, CPU seconds (user + system), peak RSS in MiB."""

    wall: float
    cpu: float
    rss: float


def heron_command() -> list[str]:
    """The ``heron`` console script beside this interpreter (``python -m heron`` without one)."""
    script = Path(sys.executable).with_name("heron")
    return [str(script)] if script.exists() else [sys.executable, "-m", "heron"]


def rows() -> list[Row]:
    """What the table shows, floor first."""
    python, heron = sys.executable, heron_command()
    return [
        Row("python -c pass (floor)", [python, "-c", "pass"], None),
        Row("heron --version", [*heron, "--version"], 0.15),
        Row("heron nodes list (daemon up)", [*heron, "nodes", "list"], 0.35),
        Row("python -c 'import heron'", [python, "-c", "import heron"], 0.2),
        Row("python -c 'import heron.client'", [python, "-c", "import heron.client"], 0.3),
        # The package's names are lazy: this is what a program using the client loads.
        Row(
            "from heron.client import Heron",
            [python, "-c", "from heron.client import Heron"],
            0.3,
        ),
        Row(
            "import heron.runtime (daemon)",
            # What the daemon imports before it can listen, not only the package's names.
            [python, "-c", "import heron.runtime; heron.runtime.run_daemon"],
            1.0,
        ),
    ]


# Peak RSS through /usr/bin/time: a child forked from this (much larger) process would count
# this process's pages as its own peak, since Linux keeps the peak across exec.
TIME = shutil.which("time", path="/usr/bin:/bin")


def run_once(argv: list[str], env: dict[str, str]) -> Sample:
    """Spawn ``argv``, wait for it, and measure it; a failing command stops the bench."""
    wrapped = [TIME, "-f", "%M", *argv] if TIME else argv
    started = time.perf_counter()
    process = subprocess.Popen(
        wrapped,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert process.stderr is not None
    errors = process.stderr.read()  # until exit: the pipe closes with the process
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    process.stderr.close()
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {process.returncode}: {errors.decode()}")
    rss = float(errors.split()[-1]) / 1024 if TIME else float("nan")
    return Sample(wall, usage.ru_utime + usage.ru_stime, rss)


def measure(row: Row, runs: int, env: dict[str, str]) -> list[Sample]:
    """``runs`` timed runs of ``row`` after one untimed warm-up run."""
    run_once(row.argv, env)
    return [run_once(row.argv, env) for _ in range(runs)]


def report(results: list[tuple[Row, list[Sample]]], runs: int) -> None:
    """Print the table."""
    floor = statistics.median(s.wall for s in results[0][1])
    print(f"\n{runs} runs per row; wall seconds from spawn to exit, CPU = user + system\n")
    header = (
        f"{'process':<34} {'min':>6} {'median':>7} {'max':>6} {'x floor':>8} "
        f"{'CPU min':>8} {'CPU':>6} {'RSS MiB':>8} {'goal':>6}"
    )
    print(header)
    print("-" * len(header))
    for row, samples in results:
        walls = [s.wall for s in samples]
        median = statistics.median(walls)
        goal = f"{row.goal:.2f}" if row.goal is not None else ""
        print(
            f"{row.name:<34} {min(walls):>6.3f} {median:>7.3f} {max(walls):>6.3f} "
            f"{median / floor:>8.1f} {min(s.cpu for s in samples):>8.3f} "
            f"{statistics.median(s.cpu for s in samples):>6.3f} "
            f"{statistics.median(s.rss for s in samples):>8.1f} {goal:>6}"
        )
    print()


def main() -> None:
    """Start a daemon, time every row, stop the daemon, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="timed runs per row")
    runs = parser.parse_args().runs
    home = Path(tempfile.mkdtemp(prefix="heron-cold-"))  # short: a socket path must fit
    script = home / "script.json"
    script.write_text(json.dumps(["ok"]))
    env = {**os.environ, "HERON_HOME": str(home)}
    for name in (
        "HERON_SOCKET",
        "HERON_BASE_URL",
        "HERON_DATABASE_URL",
        "HERON_TOKEN",
        "PYTHONDONTWRITEBYTECODE",
    ):
        env.pop(name, None)
    daemon = Daemon(home, f"scripted:{script}")
    try:
        asyncio.run(daemon.wait_ready())
        results = [(row, measure(row, runs, env)) for row in rows()]
    finally:
        daemon.stop()
        shutil.rmtree(home, ignore_errors=True)
    report(results, runs)


if __name__ == "__main__":
    main()
