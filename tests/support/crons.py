"""Cron tests' helpers: make a cron, the nodes it fired, and waiting for a firing."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import httpx

from .polling import eventually


def make(client: httpx.Client, **body: Any) -> dict[str, Any]:
    """``POST /v1/crons`` (asserting ``201``); the cron."""
    response = client.post("/v1/crons", json=body)
    assert response.status_code == 201, response.text
    cron: dict[str, Any] = response.json()
    return cron


def stamp(value: str) -> float:
    """An ISO 8601 time as a Unix timestamp."""
    return datetime.fromisoformat(value).timestamp()


def wait_fired(
    client: httpx.Client, cron_id: str, count: int, timeout: float = 20
) -> dict[str, Any]:
    """Poll the cron until it has fired ``count`` times with every node made; the cron."""
    cron: dict[str, Any] = eventually(
        lambda: client.get(f"/v1/crons/{cron_id}").json(),
        lambda cron: (
            cron["fire_count"] >= count
            and all(f["status"] != "claimed" for f in cron["recent_firings"])
        ),
        timeout=timeout,
        what=f"cron {cron_id} firing {count} times with every node made",
    )
    return cron


def cron_nodes(client: httpx.Client, cron_id: str) -> list[dict[str, Any]]:
    """The nodes the cron made."""
    return [n for n in client.get("/v1/nodes").json() if n["cron_id"] == cron_id]
