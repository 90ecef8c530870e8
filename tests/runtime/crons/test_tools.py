"""The ``schedule`` scope's node tools: ``cron-create``, ``cron-list``, ``cron-delete``."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.daemon import (
    Daemon,
    create,
    forget_tool_call_step,
    wait_settled,
    wait_tool_call_recorded,
    write_script,
)
from tests.support.polling import eventually


def call(tool: str, /, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": tool, "arguments": arguments}]}


def tool_statuses(daemon: Daemon, node_id: str) -> list[tuple[str, str]]:
    """``(tool, ok|error)`` of each tool call the node made, in order."""
    with sqlite3.connect(daemon.home / "heron.db") as db:
        rows = db.execute(
            "SELECT data FROM heron_events WHERE node_id = ? AND type = ? ORDER BY sequence_number",
            (node_id, "node.tool_call.completed"),
        ).fetchall()
    return [(d["tool"], d["status"]) for d in (json.loads(data) for (data,) in rows)]


def made_by(client: httpx.Client, node_id: str) -> list[dict[str, Any]]:
    return [c for c in client.get("/v1/crons").json() if c["created_by"] == node_id]


class TestCronTools:
    def test_a_node_schedules_lists_and_deletes_its_profiles_crons(
        self, client: httpx.Client, scripts: Any, daemon: Daemon
    ) -> None:
        client.post("/v1/profiles/ensure", json={"name": "ops"}).raise_for_status()
        create_call = call(
            "cron-create",
            schedule="0 7 * * *",
            timezone="Europe/Berlin",
            prompt="Check the backups.",
            name="backups",
            scopes=["schedule"],
        )
        model = scripts("maker", [create_call, call("cron-list"), "Scheduled."])
        maker = create(
            client, prompt="plan", model=model, profile="ops", scopes=["schedule", "act"]
        )["node_id"]
        wait_settled(client, maker)
        assert tool_statuses(daemon, maker) == [("cron-create", "ok"), ("cron-list", "ok")]
        (cron,) = made_by(client, maker)
        assert cron["profile"] == "ops" and cron["name"] == "backups"
        assert (cron["schedule"], cron["timezone"]) == ("0 7 * * *", "Europe/Berlin")
        template = cron["template"]
        assert template["prompt"] == "Check the backups." and template["profile"] == "ops"
        assert template["scopes"] == ["schedule"] and template["model"] == model
        # Another profile's node neither sees nor deletes it; the profile's own does.
        cron_id = cron["cron_id"]
        outsider = create(
            client,
            prompt="x",
            model=scripts("outsider", [call("cron-delete", cron_id=cron_id), "no"]),
        )["node_id"]
        wait_settled(client, outsider)
        assert tool_statuses(daemon, outsider) == [("cron-delete", "error")]
        assert client.get(f"/v1/crons/{cron_id}").status_code == 200
        deleter = create(
            client,
            prompt="x",
            profile="ops",
            model=scripts("deleter", [call("cron-delete", cron_id=cron_id), "gone"]),
        )["node_id"]
        wait_settled(client, deleter)
        assert tool_statuses(daemon, deleter) == [("cron-delete", "ok")]
        assert client.get(f"/v1/crons/{cron_id}").status_code == 404

    @pytest.mark.parametrize(
        ("scopes", "arguments"),
        [
            (["act"], {"schedule": "@daily", "prompt": "x"}),  # no schedule scope: no tool
            (["schedule"], {"schedule": "@daily", "prompt": "x", "scopes": ["act"]}),  # wider
            (["schedule"], {"schedule": "whenever", "prompt": "x"}),
            (["schedule"], {"schedule": "*/5 * * * * *", "prompt": "x"}),  # under a minute
            (["schedule"], {"schedule": "@daily", "prompt": "x", "timezone": "Nowhere/City"}),
        ],
    )
    def test_refused_creates_make_nothing(
        self,
        client: httpx.Client,
        scripts: Any,
        daemon: Daemon,
        scopes: list[str],
        arguments: dict[str, Any],
    ) -> None:
        model = scripts("refused", [call("cron-create", **arguments), "could not"])
        node_id = create(client, prompt="x", model=model, scopes=scopes)["node_id"]
        wait_settled(client, node_id)
        assert tool_statuses(daemon, node_id) == [("cron-create", "error")]
        assert made_by(client, node_id) == []

    def test_a_kind_narrows_the_cron_tools(
        self, client: httpx.Client, scripts: Any, daemon: Daemon
    ) -> None:
        kinds = daemon.home / "kinds"
        kinds.mkdir(exist_ok=True)
        (kinds / "cron-reader.toml").write_text(
            'instruction = "Read only."\ntools = ["cron-list"]\n'
        )
        assert "cron-reader" in [k["name"] for k in client.get("/v1/kinds").json()["kinds"]]
        steps = [call("cron-list"), call("cron-create", schedule="@daily", prompt="x"), "ok"]
        node_id = create(client, prompt="x", kind="cron-reader", model=scripts("reader", steps))
        wait_settled(client, node_id["node_id"])
        statuses = tool_statuses(daemon, node_id["node_id"])
        assert statuses == [("cron-list", "ok"), ("cron-create", "error")]
        assert made_by(client, node_id["node_id"]) == []


@pytest.mark.slow
def test_a_create_run_again_after_a_crash_makes_one_cron(tmp_path: Path) -> None:
    default = write_script(tmp_path, "default", ["default"])
    daemon = Daemon(tmp_path / "home", {"HERON_PROVIDER": default}).start()
    try:
        steps = [call("cron-create", schedule="@daily", prompt="x"), {"text": "hold", "delay": 60}]
        model = write_script(tmp_path, "maker", steps)
        with daemon.client() as client:
            node_id = create(client, prompt="go", model=model)["node_id"]
            eventually(lambda: made_by(client, node_id))

            wait_tool_call_recorded(daemon, node_id)
        daemon.kill()
        # The crash came before the call's step was recorded: it runs again.
        forget_tool_call_step(daemon, node_id)
        write_script(tmp_path, "maker", [steps[0], "Made."])
        daemon.start()
        with daemon.client() as client:
            wait_settled(client, node_id)
            assert tool_statuses(daemon, node_id)[-1] == ("cron-create", "ok")
            assert len(made_by(client, node_id)) == 1
    finally:
        daemon.stop()
