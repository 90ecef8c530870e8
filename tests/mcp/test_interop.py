"""Interop with code nobody here wrote: the reference time server, and the official MCP client."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

import heron
from heron.mcp import MCPClient, MemoryStorage, StdioConnection, UnixSocketConnection

from .conftest import INITIALIZE, INITIALIZED, call_request

pytestmark = pytest.mark.slow


async def test_heron_client_lists_and_calls_the_reference_time_server() -> None:
    connection = StdioConnection(sys.executable, ["-m", "mcp_server_time"])
    async with MCPClient("me", connection, MemoryStorage()) as client:
        tools = {t.name: t for t in await client.list_tools()}
        assert {"get_current_time", "convert_time"} <= set(tools)
        assert "timezone" in tools["get_current_time"].input_schema["properties"]
        result = await client.call_tool("get_current_time", {"timezone": "Asia/Tokyo"})
        assert not result.is_error, result.text
        reply = json.loads(result.text)
        assert reply["timezone"] == "Asia/Tokyo"
        assert datetime.fromisoformat(reply["datetime"]).utcoffset() is not None
        bad = await client.call_tool("get_current_time", {"timezone": "Not/AZone"})
        assert bad.is_error


async def test_official_client_calls_heron_tools_over_stdio(
    serve_command: Callable[..., list[str]],
) -> None:
    argv = serve_command("--stdio")
    params = StdioServerParameters(command=argv[0], args=argv[1:])
    async with Client(params) as client:
        listed = (await client.list_tools()).tools
        names = {t.name for t in listed}
        assert {"echo", "add", "pixel", "read-file"} <= names
        echo = next(t for t in listed if t.name == "echo")
        assert echo.description == "Repeat the text."
        assert echo.input_schema["required"] == ["text"]

        added = await client.call_tool("add", {"a": 20, "b": 22})
        assert not added.is_error
        assert added.structured_content == {"sum": 42}
        assert isinstance(added.content[0], types.TextContent)
        assert json.loads(added.content[0].text) == {"sum": 42}

        image = await client.call_tool("pixel", {})
        assert isinstance(image.content[1], types.ImageContent)
        assert image.content[1].mime_type == "image/png"

        # A call without Heron's env id lands in the default environment.
        remembered = await client.call_tool("remember", {"fact": "x"})
        assert isinstance(remembered.content[0], types.TextContent)
        assert remembered.content[0].text == "default ref-1: x"

        failed = await client.call_tool("add", {"a": "not a number", "b": 1})
        assert failed.is_error


async def test_official_client_calls_heron_tools_over_the_unix_socket(
    server_process: type, sock_path: Path
) -> None:
    server_process("--unix", str(sock_path)).start()
    # The SDK's own client session, carried by Heron's socket adapter.
    transport = UnixSocketConnection(mode="client", path=sock_path).open()
    async with Client(transport) as client:
        assert "echo" in {t.name for t in (await client.list_tools()).tools}
        result = await client.call_tool("echo", {"text": "over the socket"})
        assert isinstance(result.content[0], types.TextContent)
        assert result.content[0].text == "over the socket"


def test_prints_in_a_tool_never_reach_the_stdio_protocol_stream(
    serve_command: Callable[..., list[str]], tmp_path: Path
) -> None:
    # Bytes on the wire, as any MCP client reads them: every stdout line must be JSON-RPC.
    errors = tmp_path / "stderr.txt"
    with errors.open("w") as stderr:
        proc = subprocess.Popen(
            serve_command("--stdio"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for message in (INITIALIZE, INITIALIZED, call_request(2, "noisy", {"text": "quiet"})):
            proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()
        initialized = json.loads(proc.stdout.readline())
        called = json.loads(proc.stdout.readline())
        proc.stdin.close()
        assert proc.stdout.read() == ""  # nothing else, once the client hangs up
    finally:
        proc.wait(10)
        proc.stdout.close()
    assert initialized["id"] == 1
    assert called["id"] == 2
    assert called["result"]["content"] == [{"type": "text", "text": "quiet"}]
    for stray in ("print from a tool", "echo from a child", "write to fd 1"):
        assert stray in errors.read_text()


async def test_the_unix_socket_speaks_newline_delimited_json_rpc(
    server_process: type, sock_path: Path
) -> None:
    server_process("--unix", str(sock_path)).start()
    reader, writer = await asyncio.open_unix_connection(str(sock_path))
    try:

        async def exchange(message: dict[str, object]) -> dict[str, object]:
            writer.write(json.dumps(message).encode() + b"\n")
            await writer.drain()
            async with asyncio.timeout(10):
                reply: dict[str, object] = json.loads(await reader.readline())
            return reply

        initialized = await exchange(INITIALIZE)
        assert initialized["id"] == 1
        server_info = initialized["result"]["serverInfo"]  # type: ignore[index]
        assert server_info == {"name": "heron", "version": heron.__version__}
        assert "tools" in initialized["result"]["capabilities"]  # type: ignore[index]
        writer.write(json.dumps(INITIALIZED).encode() + b"\n")
        echoed = await exchange(call_request(2, "echo", {"text": "raw"}))
        assert echoed == {
            "jsonrpc": "2.0",
            "id": 2,
            "result": {"content": [{"type": "text", "text": "raw"}], "isError": False},
        }
    finally:
        writer.close()
        await writer.wait_closed()
