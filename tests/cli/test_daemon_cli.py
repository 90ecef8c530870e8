"""``heron daemon start`` and ``heron daemon status`` against real daemons.

``status`` runs in process (Typer's ``CliRunner``) on the shared test daemon, found
through ``HERON_HOME`` as a user's shell would; ``start``/``stop`` run as real
``heron`` subprocesses on a home of their own.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.daemon import Daemon
from typer.testing import CliRunner

from heron import __version__
from heron.cli import app
from heron.cli._daemon import duration, node_counts
from heron.client import Heron


@pytest.fixture(autouse=True)
def plain_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No address, token or colours inherited from whoever runs the tests."""
    for variable in ("HERON_BASE_URL", "HERON_SOCKET", "HERON_TOKEN", "FORCE_COLOR"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("COLUMNS", "120")


@pytest.fixture
def on_daemon(daemon: Daemon, monkeypatch: pytest.MonkeyPatch) -> Daemon:
    """The shared daemon, reached by the CLI through ``HERON_HOME``."""
    monkeypatch.setenv("HERON_HOME", str(daemon.home))
    return daemon


def heron(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), prog_name="heron")
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def test_status_of_a_running_daemon(on_daemon: Daemon, client: Heron) -> None:
    node = client.request("POST", "/v1/nodes", {"prompt": "hi", "cwd": str(on_daemon.home)})
    client.request("GET", f"/v1/nodes/{node['node_id']}/outcome", query={"wait": 25})

    code, out, err = heron("daemon", "status")

    assert (code, err) == (0, "")
    assert on_daemon.process is not None
    pid = on_daemon.process.pid
    lines = out.splitlines()
    assert lines[0] == f"heron daemon is running (pid {pid})"
    assert f"  version    {__version__}" in lines
    assert re.search(r"^  uptime     \d+(s|m \d\ds) \(since \d{4}-\d\d-\d\d ", out, re.M)
    assert f"  listening  unix {on_daemon.socket} (filesystem)" in lines
    counts = client.system.status().nodes
    assert f"  nodes      {node_counts(counts)}" in lines
    assert re.search(r"^  nodes      .*\d+ completed.* \(\d+ in all\)$", out, re.M)
    assert "  database   sqlite" in out
    sandbox = "bubblewrap (node commands); /v1/bash commands in a PID namespace"
    assert f"  sandbox    {sandbox}" in lines


def test_status_lists_the_daemons_on_the_database(on_daemon: Daemon) -> None:
    code, out, _ = heron("daemon", "status")
    assert code == 0
    lines = out.splitlines()
    at = lines.index("  daemons    1 on the database (1 alive)")
    assert on_daemon.process is not None
    executor = (on_daemon.home / "executor-id").read_text().strip()
    assert re.fullmatch(
        rf"             {executor} \(this one\) on \S+, pid {on_daemon.process.pid}: "
        r"\d+ running, beat \d+s ago",
        lines[at + 1],
    )


def test_status_json_is_the_wire_status(on_daemon: Daemon) -> None:
    code, out, _ = heron("daemon", "status", "--json")
    assert code == 0
    data = json.loads(out)
    assert on_daemon.process is not None
    assert data["pid"] == on_daemon.process.pid
    assert data["listeners"] == [
        {"kind": "unix", "address": str(on_daemon.socket), "auth": "filesystem"}
    ]


def test_status_with_a_malformed_base_url_is_one_error_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HERON_BASE_URL", "localhost:7717")
    code, _, err = heron("daemon", "status")
    assert code == 1
    assert err.startswith("heron: error: base_url must be an http(s) URL")


def test_options_before_a_subcommand_are_refused(tmp_path: Path) -> None:
    code, _, err = heron("daemon", "--listen", "127.0.0.1:0", "status")
    assert code == 1
    assert "give the options after the command: heron daemon status" in err


def test_workers_on_sqlite_are_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERON_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HERON_DATABASE_URL", raising=False)
    code, _, err = heron("daemon", "--workers", "2")
    assert code == 1
    assert err.startswith("heron: error: --workers needs PostgreSQL (HERON_DATABASE_URL)")
    monkeypatch.setenv("HERON_WORKERS", "2")  # the setting, as the option
    code, _, err = heron("daemon", "start")
    assert code == 1 and "--workers needs PostgreSQL" in err
    assert not (tmp_path / "home" / "heron.sock").exists()


def test_help_says_what_stays_in_front_of_the_workers() -> None:
    code, out, _ = heron("daemon", "--help")
    assert code == 0
    text = " ".join(out.split())
    assert "--workers" in text and "PostgreSQL only" in text
    assert "--worker " not in out  # the workers' own option is hidden


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0, "0s"),
        (59.9, "59s"),
        (61, "1m 01s"),
        (3600 * 3 + 720, "3h 12m"),
        (86400 * 2 + 3600 * 3, "2d 03h"),
    ],
)
def test_durations_read_as_people_say_them(seconds: float, shown: str) -> None:
    assert duration(seconds) == shown


def test_node_counts_list_known_statuses_first_and_skip_zeros() -> None:
    counts = {"completed": 5, "running": 2, "failed": 0, "zombie": 1}
    assert node_counts(counts) == "2 running · 5 completed · 1 zombie (8 in all)"
    assert node_counts({}) == "none"


class _Cli:
    """``heron`` as a subprocess on one ``HERON_HOME``."""

    def __init__(self, home: Path, provider: str) -> None:
        self.home = home
        self.env = {**os.environ, "HERON_HOME": str(home), "HERON_PROVIDER": provider}
        for name in ("HERON_SOCKET", "HERON_TOKEN", "HERON_BASE_URL"):
            self.env.pop(name, None)

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "heron", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=90,
            stdin=subprocess.DEVNULL,
        )


@pytest.fixture
def cli(tmp_path: Path) -> Iterator[_Cli]:
    script = tmp_path / "default.json"
    script.write_text(json.dumps(["Hi."]))
    runner = _Cli(tmp_path / "home", f"scripted:{script}")
    try:
        yield runner
    finally:
        if (runner.home / "heron.pid").exists():
            runner("daemon", "stop")


def test_status_without_a_daemon_exits_1_and_starts_none(cli: _Cli) -> None:
    status = cli("daemon", "status")
    assert status.returncode == 1
    assert status.stdout == f"no Heron daemon is running at unix:{cli.home / 'heron.sock'}\n"
    assert not cli.home.exists()  # nothing was started (a started daemon creates its home)


@pytest.mark.slow
def test_start_status_stop(cli: _Cli) -> None:
    started = cli("daemon", "start")
    assert started.returncode == 0, started.stderr
    pid = int((cli.home / "heron.pid").read_text())
    assert f"heron daemon running (pid {pid})" in started.stdout
    again = cli("daemon", "start")  # idempotent: says so, exits 0
    assert again.returncode == 0, again.stderr
    assert f"heron daemon already running (pid {pid})" in again.stdout
    elsewhere = cli("daemon", "start", "--listen", "127.0.0.1:1")
    assert elsewhere.returncode == 1
    assert "has no TCP listener, not 127.0.0.1:1" in elsewhere.stderr

    status = cli("daemon", "status")
    assert status.returncode == 0, status.stderr
    assert status.stdout.startswith(f"heron daemon is running (pid {pid})\n")
    assert "  nodes      none\n" in status.stdout

    assert cli("daemon", "stop").returncode == 0
    stopped = cli("daemon", "status")
    assert stopped.returncode == 1
    assert stopped.stdout.startswith("no Heron daemon is running at unix:")
    assert not (cli.home / "heron.sock").exists()  # status did not start one


def test_node_commands_that_only_look_never_start_a_daemon(cli: _Cli) -> None:
    for args in (["list"], ["get", "n-1"], ["watch", "n-1"], ["outcome", "n-1"], ["cancel", "n-1"]):
        done = cli("nodes", *args)
        assert done.returncode == 1, done
        assert done.stderr == (
            f"heron: error: no Heron daemon is running at unix:{cli.home / 'heron.sock'} "
            "(start one: heron daemon start)\n"
        )
    assert not cli.home.exists()  # nothing was started (a started daemon creates its home)


@pytest.mark.slow
def test_create_starts_a_daemon_and_says_so_on_stderr(cli: _Cli) -> None:
    done = cli("nodes", "create", "Hi", "--json")
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith(
        f"heron: no daemon was running at unix:{cli.home / 'heron.sock'}: starting one\n"
    )
    assert json.loads(done.stdout)["prompt"] == "Hi"  # stdout stays the JSON alone
    assert (cli.home / "heron.pid").exists()
    again = cli("nodes", "list")
    assert again.returncode == 0 and again.stderr == ""  # running now: nothing to say
