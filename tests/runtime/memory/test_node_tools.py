"""A node's memory tools on a real daemon: scopes bring them, they work on the node's
profile with the node as author, and a write run again after a crash is made once."""

from __future__ import annotations

import secrets
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
from tests.support.memory import MEMORY, call, transcript
from tests.support.polling import eventually


@pytest.fixture
def profile(client: httpx.Client) -> str:
    name = f"team-{secrets.token_hex(4)}"
    assert client.post("/v1/profiles/ensure", json={"name": name}).status_code == 200
    return name


def test_a_node_writes_then_searches_and_reads_its_profiles_memory(
    client: httpx.Client, scripts: Any, daemon: Daemon, profile: str
) -> None:
    body = "The sky looks blue because of Rayleigh scattering."
    model = scripts(
        "memory-node",
        [
            call("memory-write", path="facts/sky", body=body, title="Sky", tags=["Science"]),
            call("memory-write", path="facts/sky", tags=["science", "optics"]),
            call("memory-write", path="facts/sky", title="Sky"),
            call("memory-search", query="rayleigh"),
            call("memory-read", path="facts/sky"),
            call("memory-write", action="move", path="facts/sky", new_path="facts/colour/sky"),
            call("memory-write", action="delete", path="facts/nothing"),
            "Noted.",
        ],
    )
    node = create(client, prompt="remember", model=model, profile=profile, scopes=MEMORY)
    assert wait_settled(client, node["node_id"])["outcome"]["output_text"] == "Noted."
    said = transcript(daemon, node["node_id"])
    assert "Created memory facts/sky (version 1)." in said
    assert "Updated memory facts/sky (version 2)." in said
    assert "Memory facts/sky is unchanged (version 2)." in said
    assert "facts/sky — Sky (score" in said and "**Rayleigh**" in said
    assert "tags: science, optics" in said
    assert "Moved memory facts/colour/sky (version 3)." in said
    assert "no memory entry at 'facts/nothing'" in said

    entry = client.get(
        "/v1/memory/resolve", params={"profile": profile, "path": "facts/colour/sky"}
    ).json()
    assert entry["body"] == body and entry["title"] == "Sky"
    assert entry["tags"] == ["science", "optics"]
    history = client.get(
        f"/v1/memory/{entry['entry_id']}/history", params={"profile": profile}
    ).json()
    assert [v["op"] for v in history] == ["move", "update", "create"]
    assert {v["author"] for v in history} == {node["node_id"]}
    # Only the node's profile was written.
    assert client.get("/v1/memory", params={"prefix": "facts"}).json()["items"] == []


@pytest.mark.parametrize(
    ("scopes", "offered"),
    [
        ([], "get-current-time"),
        (["memory:read"], "get-current-time, memory-read, memory-search"),
        (["ask"], "ask-questions, get-current-time"),
    ],
)
def test_a_node_without_the_scope_has_no_memory_tool(
    client: httpx.Client, scripts: Any, daemon: Daemon, scopes: list[str], offered: str
) -> None:
    model = scripts("no-memory", [call("memory-write", path="x", body="y"), "could not"])
    node = create(client, prompt="x", model=model, scopes=scopes)
    assert wait_settled(client, node["node_id"])["outcome"]["output_text"] == "could not"
    assert f"unknown tool 'memory-write'; available tools: {offered}" in transcript(
        daemon, node["node_id"]
    )
    assert client.get("/v1/memory/resolve", params={"path": "x"}).status_code == 404


def test_a_tool_error_is_the_models_to_fix(
    client: httpx.Client, scripts: Any, daemon: Daemon, profile: str
) -> None:
    model = scripts(
        "memory-bad",
        [
            call("memory-write", path="a/../b", body="x"),
            call("memory-write", path="new/entry", title="no body"),
            call("memory-read", path="missing"),
            call("memory-write", action="move", path="missing", new_path="b"),
            "ok",
        ],
    )
    node = create(client, prompt="x", model=model, profile=profile, scopes=MEMORY)
    wait_settled(client, node["node_id"])
    said = transcript(daemon, node["node_id"])
    assert "'..' are not segments" in said
    assert "no entry at 'new/entry' yet: give a `body` to create it" in said
    assert "no memory entry at 'missing'" in said
    assert client.get("/v1/memory", params={"profile": profile}).json()["items"] == []


@pytest.mark.slow
def test_a_move_run_again_after_a_crash_is_made_once(tmp_path: Path) -> None:
    default = write_script(tmp_path, "default", ["default"])
    daemon = Daemon(tmp_path / "home", {"HERON_PROVIDER": default}).start()
    try:
        move = call("memory-write", action="move", path="draft", new_path="final")
        steps = [move, {"text": "hold", "delay": 60}]
        model = write_script(tmp_path, "mover", steps)
        with daemon.client() as client:
            made = client.post("/v1/memory", json={"path": "draft", "body": "text"}).json()
            node_id = create(client, prompt="go", model=model, scopes=MEMORY)["node_id"]
            eventually(
                lambda: (
                    client.get("/v1/memory/resolve", params={"path": "final"}).status_code == 200
                )
            )

            wait_tool_call_recorded(daemon, node_id)
        daemon.kill()
        # The crash came before the move's step was recorded: it runs again.
        forget_tool_call_step(daemon, node_id)
        write_script(tmp_path, "mover", [move, "Moved."])
        daemon.start()
        with daemon.client() as client:
            assert wait_settled(client, node_id)["outcome"]["output_text"] == "Moved."
            history = client.get(f"/v1/memory/{made['entry_id']}/history").json()
            assert [v["op"] for v in history] == ["move", "create"]
        assert "Moved memory final (version 2)." in transcript(daemon, node_id)
    finally:
        daemon.stop()
