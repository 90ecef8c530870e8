"""``heron crons ...`` against a real daemon, found through ``HERON_HOME``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tests.client.conftest import Daemon, client, daemon, scripts
from typer.testing import CliRunner

from heron.cli import app
from heron.client import Heron

__all__ = ["client", "daemon", "scripts"]  # the shared daemon fixtures, used here too


@pytest.fixture(autouse=True)
def on_daemon(daemon: Daemon, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The CLI reaches the shared daemon through ``HERON_HOME``, from a fresh directory."""
    for variable in ("HERON_BASE_URL", "HERON_SOCKET", "HERON_TOKEN", "FORCE_COLOR"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HERON_HOME", str(daemon.home))
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.chdir(tmp_path)


def heron(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), prog_name="heron")
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def test_create_list_get_pause_resume_run_poke_delete(client: Heron, tmp_path: Path) -> None:
    code, out, err = heron(
        "crons", "create", "0 9 * * mon-fri", "Triage issues.", "--tz", "Europe/Berlin",
        "--name", "triage", "--paused",
    )  # fmt: skip
    assert code == 0, err
    match = re.match(r"created cron (cron_[0-9a-f]{16}) \(paused\)", out)
    assert match, out
    cron_id = match[1]
    cron = client.crons.retrieve(cron_id)
    assert cron.template == {"prompt": "Triage issues.", "cwd": str(tmp_path)}
    code, out, _ = heron("crons", "list", "--paused")
    assert code == 0 and cron_id in out and "triage" in out and "Europe/Berlin" in out
    code, out, _ = heron("crons", "list", "--active", "--json")
    assert code == 0 and cron_id not in [c["cron_id"] for c in json.loads(out)]
    code, out, _ = heron("crons", "resume", cron_id)
    assert code == 0 and out.startswith(f"resumed cron {cron_id} (next ")
    code, out, _ = heron("crons", "pause", cron_id, "--json")
    assert code == 0 and json.loads(out)["paused"] is True
    code, out, _ = heron("crons", "run", cron_id)
    assert code == 0
    node_id = re.search(r"created node (\S+)", out)
    assert node_id and client.nodes.retrieve(node_id[1]).cron_id == cron_id
    code, out, _ = heron("crons", "get", cron_id)
    assert code == 0 and "run by hand" in out and node_id[1] in out and "1 times" in out
    code, out, _ = heron("crons", "poke", "--json")
    assert code == 0 and json.loads(out)["fired"] >= 0
    code, out, _ = heron("crons", "delete", cron_id)
    assert (code, out.strip()) == (0, f"deleted cron {cron_id}")


def test_errors(client: Heron) -> None:
    code, _, err = heron("crons", "create", "every day", "x")
    assert code == 1 and "invalid_schedule" in err
    code, _, err = heron("crons", "create", "@daily", "x", "--tz", "Nowhere/Land")
    assert code == 1 and "invalid_timezone" in err
    code, _, err = heron("crons", "get", "bad id")
    assert code == 1 and "invalid cron id" in err
    code, _, err = heron("crons", "pause", "cron_0000000000000000")
    assert code == 1 and "cron_not_found" in err
    cron = client.crons.create("@daily", {"prompt": "x"}, paused=True)
    code, _, err = heron("crons", "pause", cron.cron_id)
    assert code == 1 and "cron_paused" in err
    client.crons.delete(cron.cron_id)
