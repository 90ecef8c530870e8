"""Memory tests' helpers: entries made over HTTP, searches, and a node's memory tools."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import httpx

from heron import api

from .daemon import (
    Daemon,
)


def make(client: httpx.Client, profile: str, path: str, body: str, **extra: Any) -> dict[str, Any]:
    """``POST /v1/memory``; the created entry (asserting ``201``)."""
    response = client.post(
        "/v1/memory", json={"profile": profile, "path": path, "body": body, **extra}
    )
    assert response.status_code == 201, response.text
    entry: dict[str, Any] = response.json()
    return entry


def code(response: httpx.Response) -> tuple[int, str]:
    """The status and error code of a refusal."""
    return response.status_code, response.json()["error"]["code"]


def search(client: httpx.Client, profile: str, query: str, **extra: Any) -> list[dict[str, Any]]:
    """``POST /v1/memory/search``; the hits (asserting ``200``)."""
    response = client.post("/v1/memory/search", json={"profile": profile, "query": query, **extra})
    assert response.status_code == 200, response.text
    hits: list[dict[str, Any]] = response.json()
    return hits


def check_summaries_without_bodies(client: httpx.Client, profile: str) -> None:
    """List and search answer entries without bodies, with each body's size in bytes."""
    body = "Herons nest in colonies. " + "é🐦" * 1000
    entry = make(client, profile, "birds/heron", body, title="Heron")
    assert entry["size"] == len(body.encode()) and entry["body"] == body
    page: dict[str, Any] = client.get("/v1/memory", params={"profile": profile}).json()
    assert [set(i) for i in page["items"]] == [set(api.MemoryEntrySummary.model_fields)]
    item = page["items"][0]
    assert "body" not in item and item["size"] == len(body.encode())
    assert item == {k: v for k, v in entry.items() if k != "body"}
    (hit,) = search(client, profile, "colonies")
    assert "body" not in hit["entry"] and hit["entry"]["size"] == entry["size"]
    assert "**colonies**" in hit["snippet"]


MEMORY = ["memory:read", "memory:write"]


def call(name: str, **arguments: Any) -> dict[str, Any]:
    """A scripted turn calling one tool."""
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def transcript(daemon: Daemon, node_id: str) -> str:
    """The node's saved conversation (tool results included), as stored."""
    with sqlite3.connect(daemon.home / "heron.db") as db:
        (state,) = db.execute(
            "SELECT state FROM heron_nodes WHERE node_id = ?", (node_id,)
        ).fetchone()
    return json.dumps(json.loads(state), ensure_ascii=False)
