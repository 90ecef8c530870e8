"""Background-job tests' helpers: start a job, see its process alive or gone."""

from __future__ import annotations

import os
from typing import Any

import httpx

from .polling import eventually


def start(command: str) -> dict[str, Any]:
    """A scripted turn calling ``bash-start``."""
    return {"tool_calls": [{"name": "bash-start", "arguments": {"command": command}}]}


def wait_jobs(
    client: httpx.Client, node_id: str, statuses: list[str], timeout: float = 20
) -> list[dict[str, Any]]:
    """Poll the node's jobs until their statuses are ``statuses``."""
    return eventually(
        lambda: jobs(client, node_id),
        lambda listed: [j["status"] for j in listed] == statuses,
        timeout=timeout,
        interval=0.02,
        what=f"jobs of {node_id} being {statuses}",
    )


def alive(pid: int) -> bool:
    """Whether the process group ``pid`` (a job's shell and what it started) has members."""
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    return True


def gone(pid: int, timeout: float = 10) -> bool:
    """Whether the process group ``pid`` is gone (waiting up to ``timeout`` for it to go)."""
    try:
        eventually(lambda: not alive(pid), timeout=timeout, interval=0.02)
    except AssertionError:
        return False
    return True


def jobs(client: httpx.Client, node_id: str) -> list[dict[str, Any]]:
    """The node's jobs (``GET /v1/nodes/{id}/jobs``)."""
    response = client.get(f"/v1/nodes/{node_id}/jobs")
    assert response.status_code == 200, response.text
    listed: list[dict[str, Any]] = response.json()
    return listed
