"""Warm-pool tests' helpers: nodes pre-started on the pool, and waiting for them."""

from __future__ import annotations

import sqlite3
from typing import Any

import httpx

from .daemon import Daemon
from .polling import eventually


def warm_ids(daemon: Daemon) -> list[str]:
    """The ids of the warm (pre-started, unclaimed) nodes, sorted."""
    with sqlite3.connect(daemon.home / "heron.db") as db:
        rows = db.execute("SELECT node_id FROM heron_nodes WHERE warm IS NOT NULL").fetchall()
    return sorted(r[0] for r in rows)


def wait_warm(daemon: Daemon, count: int, timeout: float = 30) -> list[str]:
    """Wait until exactly ``count`` nodes are warm; returns their ids."""
    return eventually(
        lambda: warm_ids(daemon),
        lambda ids: len(ids) == count,
        timeout=timeout,
        interval=0.02,
        what=f"{count} warm nodes",
    )


def create_preferring_warm(client: httpx.Client, **body: Any) -> dict[str, Any]:
    """``POST /v1/nodes`` with ``prefer_warm``; the created node (asserting ``201``)."""
    answer = client.post("/v1/nodes", json={"prompt": "Do it.", "prefer_warm": True, **body})
    assert answer.status_code == 201, answer.text
    node: dict[str, Any] = answer.json()
    return node
