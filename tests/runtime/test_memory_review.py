"""Memory behaviour a demanding user relies on (SQLite; PostgreSQL in test_memory_pg)."""

from __future__ import annotations

import secrets
from typing import Any

import httpx
import pytest

from heron import api

from .test_memory import make, search


@pytest.fixture
def profile(client: httpx.Client) -> str:
    name = f"rev-{secrets.token_hex(4)}"
    assert client.post("/v1/profiles/ensure", json={"name": name}).status_code == 200
    return name


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


def test_list_and_search_answer_summaries(client: httpx.Client, profile: str) -> None:
    check_summaries_without_bodies(client, profile)
