"""Lineage tests' helpers: requests on lineage routes and the rows and events they leave."""

from __future__ import annotations

import json
from typing import Any

import httpx

from .daemon import Daemon, query
from .polling import eventually


def row(daemon: Daemon, node_id: str, column: str) -> Any:
    """One JSON column of the node's row, decoded."""
    (value,) = query(daemon, f"SELECT {column} FROM heron_nodes WHERE node_id = ?", node_id)[0]
    return json.loads(value) if isinstance(value, str) else value


def events_once_settled(daemon: Daemon, node_id: str, times: int) -> list[tuple[str, Any]]:
    """The node's logged events as (type, data), once ``times`` ``node.settled`` are in."""
    sql = "SELECT type, data FROM heron_events WHERE node_id = ? ORDER BY sequence_number"
    return eventually(
        lambda: [(type, json.loads(data)) for type, data in query(daemon, sql, node_id)],
        lambda events: [t for t, _ in events].count("node.settled") >= times,
        timeout=20,
        interval=0.02,
        what=f"{node_id} logging node.settled {times} time(s)",
    )


def post(client: httpx.Client, path: str, body: Any = None) -> httpx.Response:
    """``POST path``, with ``body`` as JSON when given."""
    return client.post(path, json=body) if body is not None else client.post(path)


def refused(response: httpx.Response, status: int, code: str) -> None:
    """Assert the answer is a refusal with ``status`` and ``code``."""
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code
