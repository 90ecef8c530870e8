"""``client.crons`` through both clients against a real daemon."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import BaseModel
from tests.support.daemon import Daemon

from heron import api
from heron.client import (
    BadRequestError,
    ConflictError,
    Heron,
    NotFoundError,
    UnprocessableEntityError,
)

from ._both import MODES, On, on_client


class Answer(BaseModel):
    answer: int


@pytest.fixture(params=MODES)
async def on(request: pytest.FixtureRequest, daemon: Daemon) -> AsyncIterator[On]:
    async with on_client(request.param, daemon) as client:
        yield client


async def test_a_cron_round_trip(on: On, scripts: Any) -> None:
    model = scripts(f"cron-{on.mode}", ["Ran."])
    template = {"prompt": "Report.", "model": model, "output_schema": Answer}
    cron = await on(
        lambda c: c.crons.create(
            "30 6 * * *", template, timezone="Europe/Berlin", name=f"c-{on.mode}", paused=True
        )
    )
    assert isinstance(cron, api.Cron)
    assert cron.paused and cron.next_fire_at is None and cron.timezone == "Europe/Berlin"
    # A class as output_schema is sent as its JSON schema, as on a node create.
    assert cron.template["output_schema"]["properties"]["answer"]["type"] == "integer"
    cron_id = cron.cron_id
    assert (await on(lambda c: c.crons.retrieve(cron_id))) == cron
    paused = await on(lambda c: c.crons.list(paused=True, profile="default"))
    assert cron_id in [c.cron_id for c in paused]
    assert cron_id not in [c.cron_id for c in await on(lambda c: c.crons.list(paused=False))]
    updated = await on(
        lambda c: c.crons.update(
            cron_id, schedule="0 7 * * *", template={**template, "prompt": "Later."}
        )
    )
    assert updated.cron_id == cron_id and updated.schedule == "0 7 * * *"
    assert updated.template == {**cron.template, "prompt": "Later."} and updated.paused
    assert updated.name == f"c-{on.mode}" and updated.timezone == "Europe/Berlin"
    with pytest.raises(UnprocessableEntityError) as bad:
        await on(lambda c: c.crons.update(cron_id, timezone="Moon/Base"))
    assert bad.value.code == "invalid_timezone"
    resumed = await on(lambda c: c.crons.resume(cron_id))
    assert not resumed.paused and resumed.next_fire_at is not None
    with pytest.raises(ConflictError) as conflict:
        await on(lambda c: c.crons.resume(cron_id))
    assert conflict.value.code == "cron_not_paused"
    assert (await on(lambda c: c.crons.pause(cron_id))).paused
    firing = await on(lambda c: c.crons.run(cron_id))
    assert isinstance(firing, api.CronFiring) and firing.manual and firing.status == "created"
    node = await on(lambda c: c.nodes.retrieve(firing.node_id))
    assert node.cron_id == cron_id and node.prompt == "Later." and node.has_output_schema
    page = await on(lambda c: c.crons.firings(cron_id, limit=1))
    assert isinstance(page, api.CronFiringPage) and page.items == [firing]
    assert page.next_cursor is None
    poked = await on(lambda c: c.crons.poke())
    assert isinstance(poked, api.CronPokeResult) and poked.fired == len(poked.firings)
    deleted = await on(lambda c: c.crons.delete(cron_id))
    assert deleted.cron_id == cron_id
    with pytest.raises(NotFoundError) as missing:
        await on(lambda c: c.crons.retrieve(cron_id))
    assert missing.value.code == "cron_not_found"


async def test_refusals(on: On) -> None:
    with pytest.raises(UnprocessableEntityError) as bad:
        await on(lambda c: c.crons.create("every day", {"prompt": "x"}))
    assert bad.value.code == "invalid_schedule"
    with pytest.raises(UnprocessableEntityError) as bad:
        await on(lambda c: c.crons.create("@daily", {"prompt": "x"}, timezone="Moon/Base"))
    assert bad.value.code == "invalid_timezone"
    with pytest.raises(UnprocessableEntityError) as bad:
        await on(lambda c: c.crons.create("@daily", {"prompt": "x", "model": "nope:1"}))
    assert bad.value.code == "invalid_template"


@pytest.mark.parametrize(
    "method", ["retrieve", "update", "firings", "pause", "resume", "run", "delete"]
)
def test_ids_are_checked_before_anything_is_sent(method: str) -> None:
    # No daemon at all: a request would fail with a connection error, not TypeError.
    with Heron(base_url="http://127.0.0.1:9", auto_start=False, max_retries=0) as client:
        with pytest.raises(TypeError, match="invalid cron id"):
            getattr(client.crons, method)("no such/id")
        with pytest.raises(TypeError, match="invalid profile name"):
            client.crons.list(profile="a b")


def test_a_daemon_side_bad_id_is_a_bad_request(daemon: Daemon) -> None:
    with Heron(socket_path=daemon.socket, home=daemon.home, auto_start=False) as client:
        with pytest.raises(BadRequestError) as bad:
            client.request("GET", "/v1/crons/bad%20id")
        assert bad.value.code == "invalid_cron_id"
