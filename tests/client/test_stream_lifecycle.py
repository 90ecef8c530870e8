"""Node streams' lifecycle: when the node is created, releasing connections, abort over TCP,
and the two stream classes kept in step."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from heron import api
from heron.client import (
    APIUserAbortError,
    AsyncHeron,
    AsyncNodeStream,
    Heron,
    NodeStream,
    Reconnect,
)

POOL = 100
"""httpx's default connection limit: a stream that keeps its connection after ending
holds one of these until the client closes."""


def test_closed_streams_give_their_connections_back(client: Heron, scripts: Any) -> None:
    node = client.nodes.create(prompt="W.", model=scripts("pool", ["x"]), no_kickoff=True)
    kept: list[NodeStream] = []  # still referenced: only close() can release them
    for _ in range(POOL + 1):
        stream = client.nodes.events(node.node_id, reconnect=Reconnect(attempts=0))
        assert isinstance(next(stream), api.NodeStatusChanged)
        stream.close()
        kept.append(stream)
    assert client.nodes.retrieve(node.node_id).status == "dormant"
    with pytest.raises(APIUserAbortError):
        next(kept[0])


async def test_aborted_async_streams_give_their_connections_back(
    aclient: AsyncHeron, scripts: Any
) -> None:
    created = await aclient.nodes.create(
        prompt="W.", model=scripts("apool", ["x"]), no_kickoff=True
    )
    kept: list[AsyncNodeStream] = []
    for _ in range(POOL + 1):
        stream = aclient.nodes.events(created.node_id, reconnect=Reconnect(attempts=0))
        assert isinstance(await anext(stream), api.NodeStatusChanged)
        stream.abort()  # not aclose(): abort() alone must let the connection go
        kept.append(stream)
    node = await asyncio.wait_for(aclient.nodes.retrieve(created.node_id), 20)
    assert node.status == "dormant"
    with pytest.raises(APIUserAbortError):
        await anext(kept[0])
