"""Crons on a real daemon: create, read, fire on schedule, pause, resume, run, delete, poke."""

from __future__ import annotations

import concurrent.futures
import itertools
import sqlite3
import time
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest
from tests.support.crons import cron_nodes, make, stamp, wait_fired
from tests.support.daemon import Daemon, create, wait_settled


def refused(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """Assert the daemon refused with ``status`` and ``code``; the error body."""
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    assert error["code"] == code, error
    return error


class TestCrud:
    def test_create_read_and_list(self, client: httpx.Client, scripts: Any) -> None:
        model = scripts("crud", ["ok"])
        before = time.time()
        cron = make(
            client,
            schedule="0 9 * * mon-fri",
            timezone="Europe/Berlin",
            name="standup",
            template={"prompt": "Summarise yesterday.", "model": model},
        )
        assert cron["cron_id"].startswith("cron_") and len(cron["cron_id"]) == 21
        assert cron["profile"] == "default" and cron["paused"] is False
        assert cron["template"] == {"prompt": "Summarise yesterday.", "model": model}
        assert cron["fire_count"] == 0 and cron["recent_firings"] == []
        assert cron["last_fired_at"] is None and cron["created_by"] is None
        nxt = datetime.fromisoformat(cron["next_fire_at"])
        assert nxt.timestamp() > before
        local = nxt.astimezone(ZoneInfo("Europe/Berlin"))
        assert (local.hour, local.minute, local.weekday() < 5) == (9, 0, True)
        assert client.get(f"/v1/crons/{cron['cron_id']}").json() == cron
        listed = client.get("/v1/crons").json()
        assert cron["cron_id"] in [c["cron_id"] for c in listed]
        assert cron["cron_id"] not in [
            c["cron_id"] for c in client.get("/v1/crons", params={"paused": "true"}).json()
        ]
        assert cron["cron_id"] in [
            c["cron_id"] for c in client.get("/v1/crons", params={"profile": "default"}).json()
        ]
        assert client.get("/v1/crons", params={"profile": "nobody"}).json() == []
        client.delete(f"/v1/crons/{cron['cron_id']}")

    def test_a_profiles_cron(self, client: httpx.Client, scripts: Any) -> None:
        client.post("/v1/profiles/ensure", json={"name": "nightly"}).raise_for_status()
        cron = make(
            client, schedule="@daily", template={"prompt": "x", "profile": "nightly"}, paused=True
        )
        assert cron["profile"] == "nightly" and cron["next_fire_at"] is None
        listed = client.get("/v1/crons", params={"profile": "nightly", "paused": "true"}).json()
        assert [c["cron_id"] for c in listed] == [cron["cron_id"]]
        client.delete(f"/v1/crons/{cron['cron_id']}")

    def test_a_forking_template_takes_the_originals_profile(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        client.post("/v1/profiles/ensure", json={"name": "forky"}).raise_for_status()
        original = create(client, prompt="x", model=scripts("orig", ["ok"]), profile="forky")
        wait_settled(client, original["node_id"])
        cron = make(
            client,
            schedule="@yearly",
            template={"prompt": "Go on.", "fork_from": original["node_id"]},
            paused=True,
        )
        # Its nodes run under the original's profile: the cron is that profile's.
        assert cron["profile"] == "forky"
        listed = client.get("/v1/crons", params={"profile": "forky"}).json()
        assert [c["cron_id"] for c in listed] == [cron["cron_id"]]
        node_id = client.post(f"/v1/crons/{cron['cron_id']}/run").json()["node_id"]
        assert client.get(f"/v1/nodes/{node_id}").json()["profile"] == "forky"
        client.delete(f"/v1/crons/{cron['cron_id']}")
        error = refused(
            client.post(
                "/v1/crons",
                json={"schedule": "@daily", "template": {"prompt": "x", "fork_from": "n-gone"}},
            ),
            422,
            "invalid_template",
        )
        assert error["details"]["code"] == "node_not_found"


class TestFiring:
    def test_fires_on_schedule_each_tick_making_one_root_node(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        model = scripts("tick", ["Ticked."])
        cron = make(
            client,
            schedule="*/2 * * * * *",
            name="every-two",
            template={"prompt": "Tick.", "model": model},
        )
        cron_id = cron["cron_id"]
        fired = wait_fired(client, cron_id, 2)
        client.post(f"/v1/crons/{cron_id}/pause").raise_for_status()
        fired = client.get(f"/v1/crons/{cron_id}").json()
        firings = fired["recent_firings"]
        assert len(firings) == fired["fire_count"] >= 2
        ticks = [stamp(f["tick"]) for f in reversed(firings)]
        assert all(t % 2 == 0 for t in ticks)  # whole, even seconds
        assert all(b - a == 2 for a, b in itertools.pairwise(ticks))
        assert all(f["status"] == "created" and not f["manual"] for f in firings)
        assert fired["last_node_id"] == firings[0]["node_id"]
        nodes = cron_nodes(client, cron_id)
        assert sorted(n["node_id"] for n in nodes) == sorted(f["node_id"] for f in firings)
        for node in nodes:
            assert node["root"] is True and node["name"] == "every-two"
            assert node["prompt"] == "Tick." and node["model"] == model
            outcome = wait_settled(client, node["node_id"])["outcome"]
            assert outcome["output_text"] == "Ticked."
        client.delete(f"/v1/crons/{cron_id}")

    def test_paused_crons_do_not_fire_and_resume_counts_from_now(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        model = scripts("paused", ["ok"])
        cron = make(
            client,
            schedule="* * * * * *",
            template={"prompt": "Every second.", "model": model},
            paused=True,
        )
        cron_id = cron["cron_id"]
        time.sleep(1.2)  # a tick passes while it is paused (time, not a condition)
        assert client.post("/v1/crons/poke").json()["fired"] == 0
        assert client.get(f"/v1/crons/{cron_id}").json()["fire_count"] == 0
        resumed_at = time.time()
        resumed = client.post(f"/v1/crons/{cron_id}/resume").json()
        assert resumed["paused"] is False
        first = stamp(resumed["next_fire_at"])
        assert resumed_at < first <= resumed_at + 1.5  # from now: no burst of missed ticks
        fired = wait_fired(client, cron_id, 1)
        client.post(f"/v1/crons/{cron_id}/pause").raise_for_status()
        oldest = client.get(f"/v1/crons/{cron_id}").json()["recent_firings"][-1]
        assert stamp(oldest["tick"]) >= first  # no missed tick of the pause fired
        assert fired["fire_count"] >= 1
        client.delete(f"/v1/crons/{cron_id}")

    def test_run_fires_now_even_while_paused_without_touching_the_schedule(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        model = scripts("run", ["Ran by hand."])
        cron = make(
            client, schedule="@yearly", template={"prompt": "Now.", "model": model}, paused=True
        )
        cron_id = cron["cron_id"]
        response = client.post(f"/v1/crons/{cron_id}/run")
        assert response.status_code == 200, response.text
        firing = response.json()
        assert firing["manual"] is True and firing["tick"] is None
        assert firing["status"] == "created" and firing["node_id"].startswith(f"{cron_id}.run-")
        node = client.get(f"/v1/nodes/{firing['node_id']}").json()
        assert node["cron_id"] == cron_id and node["prompt"] == "Now."
        assert wait_settled(client, node["node_id"])["outcome"]["output_text"] == "Ran by hand."
        after = client.get(f"/v1/crons/{cron_id}").json()
        assert after["paused"] is True and after["next_fire_at"] is None
        assert after["fire_count"] == 1 and after["last_node_id"] == firing["node_id"]
        assert after["recent_firings"] == [firing]
        second = client.post(f"/v1/crons/{cron_id}/run").json()
        assert second["node_id"] != firing["node_id"]
        client.delete(f"/v1/crons/{cron_id}")

    def test_a_run_whose_template_no_longer_works_says_so(
        self, client: httpx.Client, tmp_path: Path
    ) -> None:
        workdir = tmp_path / "work"
        workdir.mkdir()
        cron = make(
            client,
            schedule="@yearly",
            template={"prompt": "x", "cwd": str(workdir)},
            paused=True,
        )
        workdir.rmdir()
        error = refused(client.post(f"/v1/crons/{cron['cron_id']}/run"), 422, "invalid_template")
        assert error["details"]["code"] == "invalid_cwd"
        firing = client.get(f"/v1/crons/{cron['cron_id']}").json()["recent_firings"][0]
        assert firing["status"] == "failed" and "invalid_cwd" in firing["error"]
        client.delete(f"/v1/crons/{cron['cron_id']}")

    def test_delete_stops_it_and_keeps_its_nodes(self, client: httpx.Client, scripts: Any) -> None:
        cron = make(
            client, schedule="@yearly", template={"prompt": "x", "model": scripts("d", ["ok"])}
        )
        cron_id = cron["cron_id"]
        node_id = client.post(f"/v1/crons/{cron_id}/run").json()["node_id"]
        deleted = client.delete(f"/v1/crons/{cron_id}")
        assert deleted.status_code == 200 and deleted.json()["cron_id"] == cron_id
        refused(client.get(f"/v1/crons/{cron_id}"), 404, "cron_not_found")
        refused(client.delete(f"/v1/crons/{cron_id}"), 404, "cron_not_found")
        refused(client.post(f"/v1/crons/{cron_id}/run"), 404, "cron_not_found")
        assert cron_id not in [c["cron_id"] for c in client.get("/v1/crons").json()]
        assert client.get(f"/v1/nodes/{node_id}").status_code == 200


class TestUpdateAndHistory:
    """PATCH keeps the id, firings and count; every firing is kept and paged."""

    def test_an_update_keeps_the_id_and_history_and_counts_the_new_schedule_from_now(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        model = scripts("upd", ["ok"])
        cron = make(
            client, schedule="@yearly", name="old", template={"prompt": "A.", "model": model}
        )
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

    def test_a_paused_cron_stays_paused_through_a_new_schedule(self, client: httpx.Client) -> None:
        cron = make(client, schedule="@daily", template={"prompt": "x"}, paused=True)
        updated = client.patch(f"/v1/crons/{cron['cron_id']}", json={"schedule": "* * * * * *"})
        assert updated.status_code == 200, updated.text
        assert updated.json()["paused"] is True and updated.json()["next_fire_at"] is None
        resumed = client.post(f"/v1/crons/{cron['cron_id']}/resume").json()
        assert stamp(resumed["next_fire_at"]) <= time.time() + 1.5  # the new schedule
        client.delete(f"/v1/crons/{cron['cron_id']}")

    def test_bad_updates_are_refused_and_change_nothing(self, client: httpx.Client) -> None:
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

    def test_every_firing_is_kept_and_paged_newest_first(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        cron = make(
            client, schedule="@yearly", template={"prompt": "x", "model": scripts("p", ["ok"])}
        )
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


class TestPoke:
    def test_pokes_racing_the_scheduler_claim_each_tick_once(
        self, client: httpx.Client, daemon: Daemon, scripts: Any
    ) -> None:
        model = scripts("race", ["ok"])
        ids = [
            make(client, schedule="* * * * * *", template={"prompt": "x", "model": model})[
                "cron_id"
            ]
            for _ in range(5)
        ]

        def poke_for(seconds: float) -> list[int]:
            statuses = []
            with daemon.client() as own:
                end = time.monotonic() + seconds
                while time.monotonic() < end:
                    statuses.append(own.post("/v1/crons/poke").status_code)
            return statuses

        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            answers = [s for run in pool.map(poke_for, [3.0] * 6) for s in run]
        for cron_id in ids:
            client.post(f"/v1/crons/{cron_id}/pause").raise_for_status()
        assert set(answers) == {200}, answers  # never a 500 from the unique tick
        for cron_id in ids:
            cron = wait_fired(client, cron_id, 1)
            page = client.get(f"/v1/crons/{cron_id}/firings", params={"limit": 200}).json()
            ticks = [f["tick"] for f in page["items"]]
            assert len(ticks) == len(set(ticks)) == cron["fire_count"]
            assert len(cron_nodes(client, cron_id)) == cron["fire_count"]
            client.delete(f"/v1/crons/{cron_id}")

    def test_poke_after_the_clock_went_back_waits_from_now(
        self, client: httpx.Client, daemon: Daemon
    ) -> None:
        cron = make(client, schedule="* * * * *", template={"prompt": "x"}, paused=False)
        cron_id = cron["cron_id"]
        # As if computed by a clock running a year ahead.
        with sqlite3.connect(daemon.home / "heron.db") as db:
            db.execute(
                "UPDATE heron_crons SET next_fire_at = ? WHERE cron_id = ?",
                (time.time() + 365 * 86400, cron_id),
            )
        poked = client.post("/v1/crons/poke")
        assert poked.status_code == 200 and poked.json()["fired"] >= 0
        nxt = stamp(client.get(f"/v1/crons/{cron_id}").json()["next_fire_at"])
        assert time.time() - 1 < nxt <= time.time() + 60
        client.delete(f"/v1/crons/{cron_id}")


class TestBadInput:
    @pytest.mark.parametrize(
        ("body", "code", "says"),
        [
            ({"schedule": "every day", "template": {"prompt": "x"}}, "invalid_schedule", "fields"),
            ({"schedule": "61 * * * *", "template": {"prompt": "x"}}, "invalid_schedule", "61"),
            ({"schedule": "0 0 31 2 *", "template": {"prompt": "x"}}, "invalid_schedule", "never"),
            ({"schedule": "@reboot", "template": {"prompt": "x"}}, "invalid_schedule", "reboot"),
            (
                {"schedule": "@daily", "timezone": "Mars/Olympus", "template": {"prompt": "x"}},
                "invalid_timezone",
                "Mars/Olympus",
            ),
            ({"schedule": "@daily", "template": {"prompt": "  "}}, "invalid_template", "prompt"),
            ({"schedule": "@daily", "template": {}}, "invalid_template", "prompt"),
            (
                {"schedule": "@daily", "template": {"prompt": "x", "node_id": "n1"}},
                "invalid_template",
                "node_id",
            ),
            (
                {"schedule": "@daily", "template": {"prompt": "x", "model": "nope:x"}},
                "invalid_template",
                "nope",
            ),
            (
                {"schedule": "@daily", "template": {"prompt": "x", "profile": "unheard-of"}},
                "invalid_template",
                "unheard-of",
            ),
            (
                {"schedule": "@daily", "template": {"prompt": "x", "cwd": "relative/dir"}},
                "invalid_template",
                "absolute",
            ),
            (
                {"schedule": "@daily", "template": {"prompt": "x", "deadline": "1h", "kind": "z"}},
                "invalid_template",
                "z",
            ),
            (
                {"schedule": "@daily", "template": {"prompt": "x", "output_schema": "{nope"}},
                "invalid_template",
                "output_schema",
            ),
        ],
    )
    def test_bad_crons_are_refused_with_a_stable_code(
        self, client: httpx.Client, body: dict[str, Any], code: str, says: str
    ) -> None:
        count = len(client.get("/v1/crons").json())
        error = refused(client.post("/v1/crons", json=body), 422, code)
        assert says in error["message"]
        assert len(client.get("/v1/crons").json()) == count  # nothing kept

    @pytest.mark.parametrize(
        "body",
        [
            {"template": {"prompt": "x"}},
            {"schedule": "@daily"},
            {"schedule": "@daily", "template": {"prompt": "x", "bogus": 1}},
            {"schedule": "@daily", "template": {"prompt": "x"}, "paused": "yes"},
        ],
    )
    def test_bodies_off_the_schema(self, client: httpx.Client, body: dict[str, Any]) -> None:
        refused(client.post("/v1/crons", json=body), 422, "invalid_request")

    @pytest.mark.parametrize(
        ("method", "suffix"),
        [
            ("GET", ""),
            ("DELETE", ""),
            ("POST", "/pause"),
            ("POST", "/resume"),
            ("POST", "/run"),
        ],
    )
    def test_ids(self, client: httpx.Client, method: str, suffix: str) -> None:
        refused(client.request(method, f"/v1/crons/bad%20id{suffix}"), 400, "invalid_cron_id")
        refused(client.request(method, f"/v1/crons/cron_0000{suffix}"), 404, "cron_not_found")

    def test_pause_twice_and_resume_an_active_cron_conflict(self, client: httpx.Client) -> None:
        cron = make(client, schedule="@daily", template={"prompt": "x"})
        cron_id = cron["cron_id"]
        refused(client.post(f"/v1/crons/{cron_id}/resume"), 409, "cron_not_paused")
        paused = client.post(f"/v1/crons/{cron_id}/pause").json()
        assert paused["paused"] is True and paused["next_fire_at"] is None
        refused(client.post(f"/v1/crons/{cron_id}/pause"), 409, "cron_paused")
        client.delete(f"/v1/crons/{cron_id}")

    def test_a_bad_profile_filter(self, client: httpx.Client) -> None:
        refused(client.get("/v1/crons", params={"profile": "no way"}), 400, "invalid_profile_name")
