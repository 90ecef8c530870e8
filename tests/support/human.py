"""Human-request tests' helpers: a node that asks, its ticket, and waiting for its request."""

from __future__ import annotations

from typing import Any

import httpx

from .daemon import create, wait_status
from .polling import eventually

ASK = "ask-questions"
"""The tool a node asks with."""

QUESTIONS = [
    {"question": "Which branch?", "choices": ["main", "dev"]},
    {"question": "Anything else to know?"},
]
"""The questions :func:`ask` files unless told otherwise."""

ANSWERS = {
    "answers": [{"choices": ["MAIN"]}, {"text": "Squash the commits."}],
    "responded_by": "ada",
}
"""An answer to :data:`QUESTIONS`."""


def ask(questions: list[dict[str, Any]] = QUESTIONS, title: str | None = None) -> dict[str, Any]:
    """A scripted turn calling ``ask-questions``."""
    arguments: dict[str, Any] = {"questions": questions}
    if title is not None:
        arguments["title"] = title
    return {"tool_calls": [{"name": ASK, "arguments": arguments}]}


def asking_node(client: httpx.Client, scripts: Any, name: str, *after: Any) -> str:
    """A node that asks :data:`QUESTIONS` and then plays ``after``; returned once dormant."""
    model = scripts(name, [ask(title="Before I merge"), *after])
    node_id: str = create(client, prompt="merge it\nsecond line", scopes=["ask"], model=model)[
        "node_id"
    ]
    wait_status(client, node_id, "dormant")
    return node_id


def open_tickets(client: httpx.Client, node_id: str) -> list[dict[str, Any]]:
    """The node's open tickets in the inbox."""
    response = client.get("/v1/human/inbox", params={"node_id": node_id})
    assert response.status_code == 200, response.text
    tickets: list[dict[str, Any]] = response.json()
    return tickets


def the_ticket(client: httpx.Client, node_id: str) -> dict[str, Any]:
    """The node's one open ticket (asserting there is exactly one)."""
    tickets = open_tickets(client, node_id)
    assert len(tickets) == 1, tickets
    return tickets[0]


def wait_request(
    client: httpx.Client, request_id: str, status: str, timeout: float = 30
) -> dict[str, Any]:
    """Poll the request until it has ``status``; returns it."""
    body: dict[str, Any] = eventually(
        lambda: client.get(f"/v1/human/requests/{request_id}").json(),
        lambda body: body["status"] == status,
        timeout=timeout,
        interval=0.02,
        what=f"request {request_id} being {status}",
    )
    return body
