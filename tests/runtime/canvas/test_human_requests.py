"""The canvas and the human inbox together: an open request is what ``asking`` shows, and a
pruned node takes its requests with it."""

from __future__ import annotations

from typing import Any

import httpx
from tests.support.daemon import wait_settled
from tests.support.human import ANSWERS, asking_node, the_ticket, wait_request


def asking(client: httpx.Client, node_id: str) -> list[dict[str, Any]]:
    response = client.get("/v1/canvas/attention", params={"node_id": node_id})
    assert response.status_code == 200, response.text
    return [item for item in response.json() if item["reason"] == "asking"]


def test_an_open_request_needs_attention_until_it_is_answered(
    client: httpx.Client, scripts: Any
) -> None:
    node_id = asking_node(client, scripts, "canvas-asking", "Merged.")
    request_id = the_ticket(client, node_id)["request_id"]

    [item] = asking(client, node_id)
    assert item["node_id"] == node_id and item["request_id"] == request_id
    assert item["summary"] == "Before I merge"
    counts = client.post("/v1/canvas/attention-counts", json={"node_ids": [node_id]}).json()
    assert counts["by_node"][node_id]["asking"] == 1

    answered = client.post(f"/v1/human/requests/{request_id}/respond", json=ANSWERS)
    assert answered.status_code == 200, answered.text
    assert asking(client, node_id) == []


def test_pruning_a_node_deletes_its_requests(client: httpx.Client, scripts: Any) -> None:
    node_id = asking_node(client, scripts, "canvas-prune", "Merged.")
    request_id = the_ticket(client, node_id)["request_id"]
    client.post(f"/v1/nodes/{node_id}/close", json={}).raise_for_status()
    wait_settled(client, node_id)
    wait_request(client, request_id, "cancelled")

    pruned = client.post("/v1/canvas/prune", json={"node_ids": [node_id]})
    assert pruned.status_code == 200, pruned.text
    assert pruned.json()["pruned"] == [node_id]
    gone = client.get(f"/v1/human/requests/{request_id}")
    assert gone.status_code == 404 and gone.json()["error"]["code"] == "request_not_found"
    history = client.get("/v1/human/inbox/history", params={"node_id": node_id}).json()
    assert history == []
