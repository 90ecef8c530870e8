"""The groundwork: both clients reach a real daemon through the same endpoint."""

from __future__ import annotations

import asyncio

from heron.client import AsyncHeron, Heron, NotFoundError


def test_sync_client_reads_status_and_maps_a_404(client: Heron) -> None:
    assert client.system.health().ok is True
    try:
        client.request("GET", "/v1/nodes/no-such-node")
    except NotFoundError as exc:
        assert exc.code == "node_not_found" and exc.status == 404
    else:
        raise AssertionError("expected NotFoundError")


async def test_async_client_reads_the_same_status(aclient: AsyncHeron, client: Heron) -> None:
    status = await aclient.system.status()
    assert status.pid == (await asyncio.to_thread(client.system.status)).pid
