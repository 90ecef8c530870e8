"""``heron canvas ...`` against a real daemon, found through ``HERON_HOME``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.support.daemon import Daemon
from typer.testing import CliRunner

from heron.cli import app
from heron.client import Heron

FAIL = {"error": "the model is down", "status": 503}


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


def settled(client: Heron, node_id: str) -> None:
    while client.nodes.outcome(node_id, wait=5).state != "settled":
        pass


def test_attention_roster_history_and_prune(client: Heron, scripts: Any) -> None:
    failed = client.nodes.create(prompt="Count the cormorants", model=scripts("f", [FAIL]))
    resident = client.nodes.create(
        prompt="Stay around",
        model=scripts("r", ["The cormorant count is 12."]),
        root_lifecycle="resident",
        name="keeper",
    )
    settled(client, failed.node_id)
    settled(client, resident.node_id)

    code, out, _ = heron("canvas", "attention", "-n", failed.node_id, "-n", resident.node_id)
    assert code == 0
    lines = [
        line for line in out.splitlines() if failed.node_id in line or resident.node_id in line
    ]
    assert "failed" in lines[0] and failed.node_id in lines[0] and "provider_error" in lines[0]
    assert "waiting" in lines[1] and "The cormorant count is 12." in lines[1]
    code, out, _ = heron("canvas", "attention", "-n", failed.node_id, "--json")
    assert [item["reason"] for item in json.loads(out)] == ["failed"]

    code, out, _ = heron("canvas", "roster")
    assert code == 0 and resident.node_id in out and "keeper" in out
    assert failed.node_id not in out

    code, out, _ = heron("canvas", "history", "search", "cormorant", "-n", resident.node_id)
    assert code == 0 and "The cormorant count is 12." in out
    code, out, _ = heron("canvas", "history", "grep", "-i", "CORMORANTS?", "-n", failed.node_id)
    assert code == 0 and out.strip() == f"{failed.node_id}#0:1: Count the cormorants"
    code, out, _ = heron("canvas", "history", "grep", "count is", "-C", "1", "-n", resident.node_id)
    assert code == 0 and f"{resident.node_id}#1:1: The cormorant count is 12." in out
    code, out, _ = heron("canvas", "history", "read", resident.node_id)
    assert code == 0
    assert out.splitlines() == [
        "#0 user",
        "Stay around",
        "#1 assistant",
        "The cormorant count is 12.",
    ]
    code, out, _ = heron("canvas", "history", "read", resident.node_id, "--limit", "1")
    assert "--offset 1" in out and "cormorant count" not in out
    code, out, _ = heron("canvas", "history", "stats", "-n", resident.node_id)
    assert code == 0 and "1 nodes, 2 messages (assistant 1, user 1)" in out
    code, out, _ = heron("canvas", "history", "stats", "-n", resident.node_id, "--json")
    assert json.loads(out)["messages"] == 2
    code, _, err = heron("canvas", "history", "read", "bad id")
    assert code == 1 and "invalid node id" in err
    code, _, err = heron("canvas", "history", "grep", "(", "-n", failed.node_id)
    assert code == 1 and "invalid_pattern" in err

    code, out, _ = heron(
        "canvas", "prune", "-n", failed.node_id, "-n", resident.node_id, "--dry-run"
    )
    assert code == 0 and "would prune 1 node" in out
    assert f"kept {resident.node_id}: live" in out
    code, out, _ = heron("canvas", "prune", "-n", failed.node_id, "--json")
    assert json.loads(out)["pruned"] == [failed.node_id]
    code, _, err = heron("canvas", "history", "grep", "x", "-n", "bad id")
    assert code == 1 and "invalid node id" in err
