"""``heron crons ...`` against a real daemon, found through ``HERON_HOME``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tests.support.cli import heron as invoke

from heron.client import Heron

# The shared daemon fixtures, and `heron nodes`' tests' way of reaching it (HERON_HOME).
pytestmark = pytest.mark.usefixtures("on_daemon")


def heron(*args: str) -> tuple[int, str, str]:
    """Run ``heron ARGS`` in process: exit code, stdout, stderr."""
    done = invoke(*args)
    return done.code, done.out, done.err


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
    code, out, err = heron(
        "crons", "update", cron_id, "--schedule", "30 8 * * *", "--prompt", "Triage PRs.",
        "--name", "prs",
    )  # fmt: skip
    assert code == 0 and out.startswith(f"updated cron {cron_id} (paused)"), err
    cron = client.crons.retrieve(cron_id)
    assert (cron.schedule, cron.name, cron.timezone) == ("30 8 * * *", "prs", "Europe/Berlin")
    assert cron.template == {"prompt": "Triage PRs.", "cwd": str(tmp_path)}
    code, _, err = heron("crons", "update", cron_id)
    assert code == 1 and "nothing to change" in err
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
    code, out, _ = heron("crons", "firings", cron_id)
    assert code == 0 and "run by hand" in out and node_id[1] in out
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
