"""Files tests' helpers."""

from __future__ import annotations

from typing import Any

import httpx


def error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """The answer's error body, asserting its status and code."""
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()["error"]
    assert body["code"] == code, body
    return body
