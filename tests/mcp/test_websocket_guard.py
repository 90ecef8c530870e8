"""What a WebSocket server refuses: browser pages, and listening beyond loopback without a token."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from types import ModuleType

import pytest
from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import InvalidStatus
from websockets.http11 import Request
from websockets.typing import Origin, Subprotocol

from heron.mcp import MCPServer, MemoryStorage, WebSocketConnection

from .conftest import INITIALIZE

ALLOWED = "https://app.example"


@pytest.fixture
async def listening(served: ModuleType) -> AsyncIterator[WebSocketConnection]:
    """A token-less loopback server (the default) allowing one browser origin."""
    connection = WebSocketConnection(mode="server", port=0, allowed_origins=[ALLOWED])
    async with MCPServer(connection, MemoryStorage()) as server:
        server.register_tool(served.read_file)
        yield connection


async def initialize(url: str, origin: str | None) -> dict[str, object]:
    """Open a socket the way a browser page would, and send an MCP initialize."""
    async with connect(
        url,
        origin=Origin(origin) if origin is not None else None,
        subprotocols=[Subprotocol("mcp")],
        proxy=None,
    ) as websocket:
        await websocket.send(json.dumps(INITIALIZE))
        reply: dict[str, object] = json.loads(await websocket.recv())
        return reply


@pytest.mark.parametrize("origin", ["https://evil.example", "null", "http://127.0.0.1:1"])
async def test_a_request_from_a_foreign_browser_origin_is_refused(
    listening: WebSocketConnection, origin: str
) -> None:
    with pytest.raises(InvalidStatus) as refused:
        await initialize(listening.url, origin)
    assert refused.value.response.status_code == 403
    assert b"not allowed" in refused.value.response.body


async def test_an_allowed_origin_and_no_origin_are_served(listening: WebSocketConnection) -> None:
    assert "result" in await initialize(listening.url, ALLOWED)
    assert "result" in await initialize(listening.url, None)  # MCP clients send no Origin


def test_a_server_beyond_loopback_needs_a_token() -> None:
    with pytest.raises(ValueError, match=r"on 0\.0\.0\.0 \(beyond loopback\) needs a token"):
        WebSocketConnection(mode="server", host="0.0.0.0", port=0)
    with pytest.raises(ValueError, match="list of origins"):
        WebSocketConnection(mode="server", port=0, allowed_origins="https://a")
    for loopback in ("127.0.0.1", "::1", "[::1]", "localhost", "127.0.0.2"):
        WebSocketConnection(mode="server", host=loopback, port=0)
    WebSocketConnection(mode="server", host="0.0.0.0", port=0, token="t")


async def test_an_ipv6_loopback_server_is_reachable_by_its_url() -> None:
    connection = WebSocketConnection(mode="server", host="[::1]", port=0)
    server = MCPServer(connection, MemoryStorage())
    try:
        await server.start()
    except OSError as exc:  # a machine without IPv6 on loopback
        pytest.skip(f"no IPv6 loopback: {exc}")
    try:
        assert connection.url.startswith("ws://[::1]:")
        assert "result" in await initialize(connection.url, None)
    finally:
        await server.close()


async def test_a_client_not_offering_the_mcp_subprotocol_is_told_so(
    listening: WebSocketConnection,
) -> None:
    with pytest.raises(InvalidStatus) as refused:
        async with connect(listening.url, proxy=None):
            pass
    assert refused.value.response.status_code == 400
    assert b"must offer the WebSocket subprotocol 'mcp'" in refused.value.response.body


async def test_messages_travel_without_compression(listening: WebSocketConnection) -> None:
    # Deflating each small JSON-RPC message costs both sides more CPU than it saves: the
    # server declines permessage-deflate (which websockets' client offers by default)...
    async with connect(listening.url, subprotocols=[Subprotocol("mcp")], proxy=None) as ws:
        assert "deflate" in (ws.request.headers.get("Sec-WebSocket-Extensions") or "")
        assert ws.response is not None
        assert ws.response.headers.get("Sec-WebSocket-Extensions") is None
    # ...and Heron's client does not offer it.
    offered: list[str | None] = []

    def record(connection: ServerConnection, request: Request) -> None:
        offered.append(request.headers.get("Sec-WebSocket-Extensions"))

    async def hold(websocket: ServerConnection) -> None:
        await websocket.wait_closed()

    async with serve(
        hold, "127.0.0.1", 0, process_request=record, subprotocols=[Subprotocol("mcp")]
    ) as raw:
        port = raw.sockets[0].getsockname()[1]
        async with WebSocketConnection(mode="client", url=f"ws://127.0.0.1:{port}").open():
            pass
    assert offered == [None]
