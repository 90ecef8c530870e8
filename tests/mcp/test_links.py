"""Links that break: server restarts, dead servers, calls in flight, tokens and TLS."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from tests.support.polling import eventually_async

from heron.mcp import (
    MCPClient,
    MCPConnectionError,
    MCPServer,
    MemoryStorage,
    StdioConnection,
    TLSFiles,
    UnixSocketConnection,
    WebSocketConnection,
)

pytestmark = pytest.mark.slow


async def pid_of(client: MCPClient) -> int:
    result = await client.call_tool("pid", {})
    assert isinstance(result.structured, int), result.text
    return result.structured


async def survives_a_restart(client: MCPClient, server: Any, link: str) -> None:
    """Kill ``server`` (a crash: no cleanup), see calls fail clearly, restart it, call again."""
    first = await pid_of(client)
    server.kill()
    # Either the drop was already noticed, or this call is the one that notices it.
    with pytest.raises(MCPConnectionError, match=rf"(cannot reach|lost the link to) {link}"):
        async with asyncio.timeout(10):
            await client.call_tool("echo", {"text": "anyone?"})
    server.start()
    assert await pid_of(client) != first


async def test_unix_client_reconnects_after_the_server_restarts(
    server_process: type, sock_path: Path
) -> None:
    server = server_process("--unix", str(sock_path))  # its socket file outlives a kill
    server.start()
    connection = UnixSocketConnection(mode="client", path=sock_path, reconnect_delay=0.05)
    async with MCPClient("me", connection, MemoryStorage()) as client:
        await survives_a_restart(client, server, "unix socket")


async def test_websocket_client_reconnects_after_the_server_restarts(
    server_process: type, free_port: int
) -> None:
    server = server_process("--websocket", f"127.0.0.1:{free_port}", env={"HERON_MCP_TOKEN": "tok"})
    server.start()
    connection = WebSocketConnection(mode="client", url=f"ws://127.0.0.1:{free_port}", token="tok")
    async with MCPClient("me", connection, MemoryStorage()) as client:
        await survives_a_restart(client, server, "websocket")


async def test_the_link_comes_back_by_itself_without_any_call(
    server_process: type, sock_path: Path
) -> None:
    server = server_process("--unix", str(sock_path))
    server.start()
    connection = UnixSocketConnection(mode="client", path=sock_path, reconnect_delay=0.05)
    async with MCPClient("me", connection, MemoryStorage()) as client:
        assert client.connected
        server.kill()
        await eventually_async(lambda: not client.connected, timeout=10, interval=0.01)
        server.start()
        await eventually_async(
            lambda: client.connected, timeout=10, interval=0.01
        )  # no call made: the background task reconnected
        assert (await client.call_tool("echo", {"text": "back"})).text == "back"
    assert not client.connected


async def test_a_call_in_flight_fails_fast_when_the_server_dies(
    server_process: type, sock_path: Path
) -> None:
    server = server_process("--unix", str(sock_path))
    server.start()
    async with MCPClient(
        "me", UnixSocketConnection(mode="client", path=sock_path), MemoryStorage()
    ) as client:
        hanging = asyncio.create_task(client.call_tool("hang", {}))
        await pid_of(client)  # answered after the hang request went out on the same link
        assert not hanging.done()
        server.kill()
        with pytest.raises(MCPConnectionError, match=r"lost the link .* calling tool 'hang'"):
            async with asyncio.timeout(10):  # a hang here would be the bug
                await hanging


async def test_starting_against_no_server_fails_with_a_clear_error(sock_path: Path) -> None:
    client = MCPClient("me", UnixSocketConnection(mode="client", path=sock_path), MemoryStorage())
    with pytest.raises(MCPConnectionError, match=f"cannot reach unix socket {sock_path}"):
        await client.start()
    await client.close()


@pytest.fixture
async def token_server(served: ModuleType) -> WebSocketConnection:
    connection = WebSocketConnection(mode="server", port=0, token="right-token")
    server = MCPServer(connection, MemoryStorage())
    server.register_tool(served.echo)
    await server.start()
    yield connection  # type: ignore[misc]
    await server.close()


@pytest.mark.parametrize("token", ["wrong-token", "right-toke", None])
async def test_a_wrong_or_missing_websocket_token_is_refused(
    token_server: WebSocketConnection, token: str | None
) -> None:
    client = MCPClient(
        "me", WebSocketConnection(mode="client", url=token_server.url, token=token), MemoryStorage()
    )
    with pytest.raises(MCPConnectionError, match="refused the connection: missing or wrong token"):
        await client.start()
    await client.close()


async def test_the_right_websocket_token_is_accepted(token_server: WebSocketConnection) -> None:
    connection = WebSocketConnection(mode="client", url=token_server.url, token="right-token")
    async with MCPClient("me", connection, MemoryStorage()) as client:
        assert (await client.call_tool("echo", {"text": "in"})).text == "in"


@pytest.fixture
def certificate(tmp_path: Path) -> TLSFiles:
    """A self-signed certificate for 127.0.0.1."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1"),
            *("-addext", "subjectAltName=IP:127.0.0.1"),
        ],
        check=True,
        capture_output=True,
    )
    return TLSFiles(cert=cert, key=key)


async def test_wss_with_a_trusted_certificate(served: ModuleType, certificate: TLSFiles) -> None:
    listening = WebSocketConnection(mode="server", port=0, token="t", tls=certificate)
    async with MCPServer(listening, MemoryStorage()) as server:
        server.register_tool(served.echo)
        assert listening.url.startswith("wss://")
        trusting = WebSocketConnection(
            mode="client", url=listening.url, token="t", tls=TLSFiles(ca=certificate.cert)
        )
        async with MCPClient("me", trusting, MemoryStorage()) as client:
            assert (await client.call_tool("echo", {"text": "secure"})).text == "secure"
        # Without the CA, the self-signed certificate is not trusted.
        doubting = WebSocketConnection(mode="client", url=listening.url, token="t", tls=TLSFiles())
        client = MCPClient("me", doubting, MemoryStorage())
        with pytest.raises(MCPConnectionError, match="CERTIFICATE_VERIFY_FAILED"):
            await client.start()
        await client.close()


def test_connection_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="mode must be"):
        UnixSocketConnection(mode="both", path="/tmp/x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="takes url="):
        WebSocketConnection(mode="client")
    with pytest.raises(ValueError, match="host= and port="):
        WebSocketConnection(mode="server", url="ws://x:1")
    with pytest.raises(ValueError, match="needs a wss:// url"):
        WebSocketConnection(mode="client", url="ws://x:1", tls=TLSFiles())
    with pytest.raises(ValueError, match="non-empty"):
        WebSocketConnection(mode="client", url="ws://x:1", token="")


async def test_a_client_side_connection_cannot_serve(sock_path: Path) -> None:
    with pytest.raises(TypeError, match="client-side connection"):
        await MCPServer(UnixSocketConnection(mode="client", path=sock_path)).start()


async def test_a_live_socket_is_not_taken_over(sock_path: Path, served: ModuleType) -> None:
    async with MCPServer(UnixSocketConnection(mode="server", path=sock_path), MemoryStorage()):
        second = MCPServer(UnixSocketConnection(mode="server", path=sock_path), MemoryStorage())
        with pytest.raises(OSError, match="already listening"):
            await second.start()
    assert sock_path.name not in os.listdir(sock_path.parent)  # removed on close


async def test_a_dead_stdio_server_is_started_again_by_the_next_call(
    serve_command: Callable[..., list[str]],
) -> None:
    argv = serve_command("--stdio")
    async with MCPClient("me", StdioConnection(argv[0], argv[1:]), MemoryStorage()) as client:
        first = await pid_of(client)
        os.kill(first, signal.SIGKILL)
        await eventually_async(lambda: not client.connected, timeout=10, interval=0.01)
        second = await pid_of(client)
    assert second != first
