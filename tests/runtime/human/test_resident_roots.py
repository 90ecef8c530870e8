"""A resident root answers, and lives on: a request filed for it outlives its answer."""

from __future__ import annotations

from typing import Any

import httpx
from tests.support.daemon import create, wait_status
from tests.support.polling import eventually, holds


def test_a_resident_roots_answer_keeps_the_request_filed_for_it(
    client: httpx.Client, scripts: Any
) -> None:
    # Asked on its behalf while it works; it answers (an outcome: settle hooks run) and
    # lives on, dormant, for the next message: the request still waits for a person.
    model = scripts("resident-asks", [{"text": "First answer.", "delay": 1.5}, "Thanks."])
    node_id = create(client, prompt="stay", model=model, root_lifecycle="resident")["node_id"]
    question = {"question": "Which key?", "choices": ["a", "b"]}
    created = client.post(
        "/v1/human/requests", json={"title": "Key", "node_id": node_id, "questions": [question]}
    )
    assert created.status_code == 201, created.text
    request_id = created.json()["request_id"]
    eventually(
        lambda: str(client.get(f"/v1/nodes/{node_id}/outcome").json()),
        lambda outcome: "First answer." in outcome,
        interval=0.02,
        what=f"node {node_id} answering",
    )
    wait_status(client, node_id, "dormant")
    # The answer's settle hooks run in the background within moments: it stays open.
    holds(
        lambda: client.get(f"/v1/human/requests/{request_id}").json()["status"],
        lambda status: status == "open",
        seconds=1.0,
        what=f"request {request_id} staying open",
    )

    answered = client.post(f"/v1/human/requests/{request_id}/respond", json={"answers": ["a"]})
    assert answered.status_code == 200, answered.text
    assert answered.json()["status"] == "answered"
