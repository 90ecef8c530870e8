"""Profiles: ensure and read them, their defaults, and the store they give their nodes."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import httpx
from tests.support.daemon import Daemon, wait_settled


def _tool_results(daemon: Daemon, node_id: str) -> list[str]:
    """The tool results in the node's saved conversation (read from its row)."""
    with sqlite3.connect(daemon.home / "heron.db") as db:
        (state,) = db.execute(
            "SELECT state FROM heron_nodes WHERE node_id = ?", (node_id,)
        ).fetchone()
    messages: list[dict[str, Any]] = json.loads(state)["messages_full"]
    return [str(m.get("content")) for m in messages if m.get("role") == "tool"]


def test_ensure_creates_then_returns_the_same_profile(client: httpx.Client) -> None:
    first = client.post("/v1/profiles/ensure", json={"name": "acme", "description": "Acme"})
    assert first.status_code == 200
    profile = first.json()
    assert profile["created"] is True and profile["description"] == "Acme"
    assert profile["store_path"].endswith("profiles/acme/store")
    again = client.post("/v1/profiles/ensure", json={"name": "acme", "description": "Acme"}).json()
    assert again["created"] is False
    assert again["updated_at"] == profile["updated_at"]  # nothing changed
    assert client.get("/v1/profiles/acme").json() == again


def test_ensure_sets_given_fields_and_keeps_the_rest(client: httpx.Client) -> None:
    client.post(
        "/v1/profiles/ensure",
        json={"name": "shifting", "description": "one", "default_kind": "reviewer"},
    )
    changed = client.post("/v1/profiles/ensure", json={"name": "shifting", "description": "two"})
    body = changed.json()
    assert (body["description"], body["default_kind"]) == ("two", "reviewer")
    cleared = client.post("/v1/profiles/ensure", json={"name": "shifting", "default_kind": None})
    assert cleared.json()["default_kind"] is None and cleared.json()["description"] == "two"


def test_profile_reads_and_bad_names(client: httpx.Client) -> None:
    missing = client.get("/v1/profiles/nobody")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "profile_not_found"
    assert "/v1/profiles/ensure" in missing.json()["error"]["message"]
    for bad in ("-leading-dash", "x" * 129):
        answer = client.get(f"/v1/profiles/{bad}")
        assert answer.status_code == 400
        assert answer.json()["error"]["code"] == "invalid_profile_name"
    answer = client.post("/v1/profiles/ensure", json={"name": "has space"})
    assert answer.status_code == 400 and answer.json()["error"]["code"] == "invalid_profile_name"
    answer = client.post("/v1/profiles/ensure", json={"name": "p1", "default_kind": "wizard"})
    assert answer.status_code == 422 and answer.json()["error"]["code"] == "unknown_kind"
    answer = client.post("/v1/profiles/ensure", json={"name": "p1", "default_model": "nope:x"})
    assert answer.status_code == 422 and answer.json()["error"]["code"] == "invalid_model"
    assert client.get("/v1/profiles/p1").status_code == 404  # a refused ensure made nothing
    assert client.post("/v1/profiles/ensure", json={}).status_code == 422


def test_the_default_profile_needs_no_ensure(client: httpx.Client) -> None:
    node = client.post("/v1/nodes", json={"prompt": "hi"}).json()
    assert (node["profile"], node["kind"]) == ("default", "general")
    assert client.get("/v1/profiles/default").json()["name"] == "default"


def test_a_create_must_name_an_ensured_profile(client: httpx.Client) -> None:
    answer = client.post("/v1/nodes", json={"prompt": "hi", "profile": "ghost"})
    assert answer.status_code == 422
    error = answer.json()["error"]
    assert error["code"] == "unknown_profile" and "ensure" in error["message"]
    answer = client.post("/v1/nodes", json={"prompt": "hi", "profile": "bad name"})
    assert answer.status_code == 400


def test_a_profiles_defaults_apply_to_its_nodes(client: httpx.Client, scripts: Any) -> None:
    model = scripts("profile-model", ["From the profile's model."])
    client.post(
        "/v1/profiles/ensure",
        json={"name": "reviews", "default_kind": "reviewer", "default_model": model},
    )
    node = client.post("/v1/nodes", json={"prompt": "look", "profile": "reviews"}).json()
    assert (node["kind"], node["model"]) == ("reviewer", model)
    poll = wait_settled(client, node["node_id"])
    assert poll["outcome"]["output_text"] == "From the profile's model."
    # The create's own choices beat the profile's.
    other = client.post(
        "/v1/nodes", json={"prompt": "x", "profile": "reviews", "kind": "planner"}
    ).json()
    assert other["kind"] == "planner"


def test_a_profile_scopes_the_nodes_store(
    daemon: Daemon, client: httpx.Client, scripts: Any
) -> None:
    add = scripts(
        "todo-add",
        [{"tool_calls": [{"name": "todo-add", "arguments": {"title": "Ship it"}}]}, "Planned."],
    )
    look = scripts("todo-list", [{"tool_calls": [{"name": "todo-list"}]}, "Looked."])
    for name in ("team-a", "team-b"):
        client.post("/v1/profiles/ensure", json={"name": name})
    body = {"prompt": "plan", "kind": "planner", "profile": "team-a", "model": add}
    node = client.post("/v1/nodes", json=body).json()
    assert wait_settled(client, node["node_id"])["node_status"] == "completed"
    store = daemon.home / "profiles" / "team-a" / "store"
    assert any(store.iterdir())
    assert not (daemon.home / "profiles" / "team-b" / "store").exists()

    seen = {}
    for profile in ("team-a", "team-b"):
        body = {"prompt": "look", "kind": "planner", "profile": profile, "model": look}
        reader = client.post("/v1/nodes", json=body).json()
        wait_settled(client, reader["node_id"])
        seen[profile] = " ".join(_tool_results(daemon, reader["node_id"]))
    assert "Ship it" in seen["team-a"]  # the same profile's store
    assert "Ship it" not in seen["team-b"]
