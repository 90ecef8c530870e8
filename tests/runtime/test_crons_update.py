"""``PATCH /v1/crons/{id}``: change a cron's schedule, timezone, template or name, keeping
its id, firings and count."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import httpx

from .test_crons import make, refused, stamp


def test_an_update_keeps_the_id_and_history_and_counts_the_new_schedule_from_now(
    client: httpx.Client, scripts: Any
) -> None:
    model = scripts("upd", ["ok"])
    cron = make(client, schedule="@yearly", name="old", template={"prompt": "A.", "model": model})
    cron_id = cron["cron_id"]
    fired = client.post(f"/v1/crons/{cron_id}/run").json()
    before = time.time()
    response = client.patch(
        f"/v1/crons/{cron_id}", json={"schedule": "15 6 * * *", "timezone": "Europe/Berlin"}
    )
    assert response.status_code == 200, response.text
    updated = response.json()
    assert updated["cron_id"] == cron_id and updated["name"] == "old"
    assert (updated["schedule"], updated["timezone"]) == ("15 6 * * *", "Europe/Berlin")
    assert updated["template"] == cron["template"]
    assert updated["fire_count"] == 1 and updated["recent_firings"] == [fired]
    nxt = stamp(updated["next_fire_at"])
    assert before < nxt <= before + 86400
    local = datetime.fromtimestamp(nxt, ZoneInfo("Europe/Berlin"))
    assert (local.hour, local.minute) == (6, 15)
    # A new template replaces the old one whole; a name alone leaves the schedule be.
    client.post("/v1/profiles/ensure", json={"name": "upd"}).raise_for_status()
    renamed = client.patch(
        f"/v1/crons/{cron_id}",
        json={"name": "new", "template": {"prompt": "B.", "model": model, "profile": "upd"}},
    ).json()
    assert renamed["name"] == "new" and renamed["profile"] == "upd"
    assert renamed["template"] == {"prompt": "B.", "model": model, "profile": "upd"}
    assert renamed["next_fire_at"] == updated["next_fire_at"]
    node_id = client.post(f"/v1/crons/{cron_id}/run").json()["node_id"]
    node = client.get(f"/v1/nodes/{node_id}").json()
    assert (node["prompt"], node["profile"], node["name"]) == ("B.", "upd", "new")
    client.delete(f"/v1/crons/{cron_id}")


def test_a_paused_cron_stays_paused_through_a_new_schedule(client: httpx.Client) -> None:
    cron = make(client, schedule="@daily", template={"prompt": "x"}, paused=True)
    updated = client.patch(f"/v1/crons/{cron['cron_id']}", json={"schedule": "* * * * * *"})
    assert updated.status_code == 200, updated.text
    assert updated.json()["paused"] is True and updated.json()["next_fire_at"] is None
    resumed = client.post(f"/v1/crons/{cron['cron_id']}/resume").json()
    assert stamp(resumed["next_fire_at"]) <= time.time() + 1.5  # the new schedule
    client.delete(f"/v1/crons/{cron['cron_id']}")


def test_bad_updates_are_refused_and_change_nothing(client: httpx.Client) -> None:
    cron = make(client, schedule="@daily", template={"prompt": "x"}, paused=True)
    path = f"/v1/crons/{cron['cron_id']}"
    refused(client.patch(path, json={"schedule": "every day"}), 422, "invalid_schedule")
    refused(client.patch(path, json={"timezone": "Mars/Olympus"}), 422, "invalid_timezone")
    refused(client.patch(path, json={"template": {"prompt": " "}}), 422, "invalid_template")
    refused(client.patch(path, json={"paused": False}), 422, "invalid_request")
    assert client.get(path).json() == cron
    refused(client.patch("/v1/crons/bad%20id", json={}), 400, "invalid_cron_id")
    refused(client.patch("/v1/crons/cron_0000", json={"name": "x"}), 404, "cron_not_found")
    client.delete(path)
    refused(client.patch(path, json={"name": "x"}), 404, "cron_not_found")


def test_every_firing_is_kept_and_paged_newest_first(client: httpx.Client, scripts: Any) -> None:
    cron = make(client, schedule="@yearly", template={"prompt": "x", "model": scripts("p", ["ok"])})
    cron_id = cron["cron_id"]
    made = [client.post(f"/v1/crons/{cron_id}/run").json()["node_id"] for _ in range(12)]
    shown = client.get(f"/v1/crons/{cron_id}").json()
    assert shown["fire_count"] == 12 and len(shown["recent_firings"]) == 10
    seen: list[str] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 5} | ({"cursor": cursor} if cursor else {})
        page = client.get(f"/v1/crons/{cron_id}/firings", params=params).json()
        assert len(page["items"]) <= 5
        seen += [f["node_id"] for f in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == made[::-1]  # all twelve, newest first, each once
    first = client.get(f"/v1/crons/{cron_id}/firings").json()
    assert [f["node_id"] for f in first["items"]] == made[::-1] and first["next_cursor"] is None
    path = f"/v1/crons/{cron_id}/firings"
    refused(client.get(path, params={"cursor": "later"}), 400, "invalid_cursor")
    refused(client.get(path, params={"limit": 0}), 422, "invalid_request")
    refused(client.get("/v1/crons/bad%20id/firings"), 400, "invalid_cron_id")
    client.delete(f"/v1/crons/{cron_id}")
    refused(client.get(path), 404, "cron_not_found")
