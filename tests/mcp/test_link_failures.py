"""Links that fail in awkward ways: no server yet, a silent server, closes mid-call, dead peers."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType

import pytest

from heron import UserError, tool
from heron.mcp import (
    FILTERED_OUTPUT,
    InProcessConnection,
    MCPClient,
    MCPConnectionError,
    MCPServer,
    MemoryStorage,
    OutputFilter,
    StdioConnection,
    UnixSocketConnection,
    WebSocketConnection,
)
from heron.mcp._link import Link


async def test_a_client_whose_first_start_failed_connects_once_the_server_is_up(
    sock_path: Path, served: ModuleType
) -> None:
    connection = UnixSocketConnection(mode="client", path=sock_path, reconnect_delay=0.05)
    client = MCPClient("me", connection, MemoryStorage(), connect_timeout=2)
    try:
        with pytest.raises(MCPConnectionError, match="cannot reach"):
            await client.list_tools()
        async with MCPServer(UnixSocketConnection(mode="server", path=sock_path)) as server:
            server.register_tool(served.echo)
            assert [t.name for t in await client.list_tools()] == ["echo"]
            assert (await client.call_tool("echo", {"text": "late"})).text == "late"
    finally:
        await client.close()


@pytest.fixture
async def silent_socket(sock_path: Path) -> AsyncIterator[Path]:
    """A Unix socket whose server accepts every link and never writes a byte."""

    async def mute(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # until the client goes away
        writer.close()

    server = await asyncio.start_unix_server(mute, str(sock_path))
    yield sock_path
    server.close()
    await server.wait_closed()


async def test_a_server_that_never_answers_times_out_and_close_returns(
    silent_socket: Path,
) -> None:
    connection = UnixSocketConnection(mode="client", path=silent_socket)
    client = MCPClient("me", connection, MemoryStorage(), connect_timeout=0.3)
    with pytest.raises(MCPConnectionError, match=r"within 0\.3 s"):
        async with asyncio.timeout(5):
            await client.start()
    async with asyncio.timeout(5):  # a hang here is the bug: close waited on the handshake
        await client.close()


async def test_a_call_that_outlasts_call_timeout_fails_and_the_link_stays_usable(
    served: ModuleType,
) -> None:
    connection = InProcessConnection()
    async with MCPServer(connection, MemoryStorage()) as server:
        server.register_tool(served.hang)
        server.register_tool(served.echo)
        async with MCPClient("me", connection, MemoryStorage(), call_timeout=0.2) as client:
            with pytest.raises(MCPConnectionError, match=r"did not answer within 0\.2 s"):
                async with asyncio.timeout(5):
                    await client.call_tool("hang", {})
            assert (await client.call_tool("echo", {"text": "still here"})).text == "still here"


def test_call_timeout_is_checked() -> None:
    with pytest.raises(UserError, match="call_timeout must be positive"):
        MCPClient("me", InProcessConnection(), MemoryStorage(), call_timeout=0)


@pytest.mark.parametrize("closing", ["server", "client"])
async def test_an_in_process_call_in_flight_fails_when_either_side_closes(
    served: ModuleType, closing: str
) -> None:
    connection = InProcessConnection()
    server = MCPServer(connection, MemoryStorage())
    server.register_tool(served.hang)
    server.register_tool(served.echo)
    await server.start()
    client = MCPClient("me", connection, MemoryStorage())
    try:
        await client.start()
        hanging = asyncio.create_task(client.call_tool("hang", {}))
        assert (await client.call_tool("echo", {"text": "x"})).text == "x"
        assert not hanging.done()
        await (server.close() if closing == "server" else client.close())
        with pytest.raises(MCPConnectionError, match=r"lost the link .* calling tool 'hang'"):
            async with asyncio.timeout(5):  # a hang here is the bug
                await hanging
    finally:
        await client.close()
        await server.close()


def test_connection_descriptions_leave_out_arguments_and_credentials() -> None:
    stdio = StdioConnection("/usr/bin/python3", ["-m", "srv", "--api-key", "sk-SECRET"])
    assert stdio.describe() == "stdio server python3"
    websocket = WebSocketConnection(mode="client", url="wss://me:pw@host:9/mcp?token=sk-SECRET")
    assert websocket.describe() == "websocket wss://host:9/mcp"


async def test_connection_errors_pass_through_the_output_filter(free_port: int) -> None:
    # The path of a URL stays in error messages: the filter must catch it there.
    url = f"ws://127.0.0.1:{free_port}/sk-SECRET"
    client = MCPClient(
        "me",
        WebSocketConnection(mode="client", url=url),
        MemoryStorage(),
        output_filter=OutputFilter(["sk-SECRET"]),
    )
    try:
        with pytest.raises(MCPConnectionError) as raised:
            await client.call_tool("echo", {"text": "x"})
        assert "sk-SECRET" not in str(raised.value)
        assert f"websocket ws://127.0.0.1:{free_port}/{FILTERED_OUTPUT}" in str(raised.value)
        with pytest.raises(MCPConnectionError) as raised:
            await client.list_tools()
        assert "sk-SECRET" not in str(raised.value)
    finally:
        await client.close()


@tool
def solo() -> str:
    """Only on the second server."""
    return "solo"


async def test_a_dead_server_does_not_hide_the_tools_of_a_healthy_one(
    served: ModuleType, caplog: pytest.LogCaptureFixture
) -> None:
    healthy, doomed = InProcessConnection(), InProcessConnection()
    async with MCPServer(healthy, MemoryStorage()) as first:
        first.register_tool(served.echo)
        second = MCPServer(doomed, MemoryStorage())
        second.register_tool(solo)
        await second.start()
        async with MCPClient("me", [healthy, doomed], MemoryStorage()) as client:
            assert [t.name for t in await client.list_tools()] == ["echo", "solo"]
            await second.close()
            with caplog.at_level(logging.WARNING, logger="heron.mcp"):
                # The dead server's last known tools stay listed; calls to them fail alone.
                assert [t.name for t in await client.list_tools()] == ["echo", "solo"]
            assert "listing without in-process connection" in caplog.text
            assert (await client.call_tool("echo", {"text": "up"})).text == "up"
            with pytest.raises(MCPConnectionError, match="no MCPServer is listening"):
                await client.call_tool("solo", {})


@tool
def huge() -> str:
    """A result over the 64 MB message limit."""
    return "x" * (65 * 1024 * 1024)


@pytest.mark.slow
async def test_a_result_over_the_size_limit_is_named_as_the_cause(
    sock_path: Path, served: ModuleType
) -> None:
    async with MCPServer(UnixSocketConnection(mode="server", path=sock_path)) as server:
        server.register_tool(huge)
        server.register_tool(served.echo)
        connection = UnixSocketConnection(mode="client", path=sock_path, reconnect_delay=0.05)
        async with MCPClient("me", connection, MemoryStorage()) as client:
            with pytest.raises(MCPConnectionError, match="a message exceeded the 64 MB limit"):
                await client.call_tool("huge", {})
            # The next session starts clean: no stale reason, and calls work again.
            assert (await client.call_tool("echo", {"text": "small"})).text == "small"
            assert connection.end_reason is None


async def test_a_server_down_from_the_start_does_not_fail_a_lazily_started_client(
    served: ModuleType, sock_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    healthy = InProcessConnection()
    absent = UnixSocketConnection(mode="client", path=sock_path)
    async with MCPServer(healthy, MemoryStorage()) as server:
        server.register_tool(served.echo)
        strict = MCPClient("me", [healthy, absent], MemoryStorage(), connect_timeout=2)
        with pytest.raises(MCPConnectionError, match="cannot reach unix socket"):
            await strict.start()  # asked to start: every server must be there
        await strict.close()
        lazy = MCPClient("me", [healthy, absent], MemoryStorage(), connect_timeout=2)
        try:
            with caplog.at_level(logging.WARNING, logger="heron.mcp"):
                assert [t.name for t in await lazy.list_tools()] == ["echo"]
            assert f"listing without unix socket {sock_path}" in caplog.text
            assert (await lazy.call_tool("echo", {"text": "ok"})).text == "ok"
        finally:
            await lazy.close()


@pytest.mark.slow
async def test_call_timeout_bounds_calls_to_a_frozen_server_process(
    server_process: type, sock_path: Path
) -> None:
    server = server_process("--unix", str(sock_path))
    server.start()
    connection = UnixSocketConnection(mode="client", path=sock_path)
    async with MCPClient("me", connection, MemoryStorage(), call_timeout=0.5) as client:
        assert (await client.call_tool("echo", {"text": "warm"})).text == "warm"
        os.kill(server.proc.pid, signal.SIGSTOP)  # alive, connected, and silent
        try:
            with pytest.raises(MCPConnectionError, match=r"did not answer within 0\.5 s"):
                async with asyncio.timeout(10):
                    await client.call_tool("echo", {"text": "anyone?"})
        finally:
            os.kill(server.proc.pid, signal.SIGCONT)
        # Its late answer to the abandoned call is ignored; the link carries on.
        assert (await client.call_tool("echo", {"text": "thawed"})).text == "thawed"


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ({"ids": OutputFilter(["x"])}, "ids must be a heron IdGenerator"),
        ({"storage": {}}, "storage must be a heron Storage"),
        ({"output_filter": ["secret"]}, "output_filter must be an OutputFilter"),
    ],
)
def test_client_options_of_the_wrong_kind_are_refused(
    option: dict[str, object], message: str
) -> None:
    with pytest.raises(UserError, match=message):
        MCPClient("env", InProcessConnection(), **option)  # type: ignore[arg-type]


async def test_a_timeout_raised_by_the_transport_is_a_connection_error_even_without_a_limit() -> (
    None
):
    # No call_timeout: a TimeoutError from below (a transport's own limit) still comes out
    # as a connection error naming what was being done, not a TypeError about the limit.
    link = Link(InProcessConnection(), connect_timeout=1, call_timeout=None)

    async def transport_gives_up() -> None:
        raise TimeoutError("read timed out")

    with pytest.raises(MCPConnectionError, match="timed out while listing tools: read timed out"):
        await link._guard(transport_gives_up(), "listing tools")
