"""A BaseAgent whose tools are served over each transport, and the client's routing rules."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from types import ModuleType

import mcp_types as types
import pytest
from mcp import Client

from heron import BaseAgent, IdGenerator, ImagePart, ToolResult, tool
from heron.mcp import (
    Connection,
    InProcessConnection,
    MCPClient,
    MCPConnectionError,
    MCPServer,
    MemoryStorage,
    StdioConnection,
    UnixSocketConnection,
    WebSocketConnection,
)
from heron.mcp._convert import from_mcp_result
from heron.testing import ScriptedProvider, call

TRANSPORTS = ["in-process", "unix", "websocket", "stdio"]


@pytest.fixture(params=TRANSPORTS)
async def connection(
    request: pytest.FixtureRequest,
    served: ModuleType,
    sock_path: Path,
    serve_command: Callable[..., list[str]],
) -> AsyncIterator[Connection]:
    """A client connection to a server of the served tools, over each transport."""
    kind = request.param
    if kind == "stdio":  # a real subprocess, started by the client
        argv = serve_command("--stdio")
        yield StdioConnection(argv[0], argv[1:])
        return
    server_side: Connection
    if kind == "in-process":
        server_side = client_side = InProcessConnection()
    elif kind == "unix":
        server_side = UnixSocketConnection(mode="server", path=sock_path)
        client_side = UnixSocketConnection(mode="client", path=sock_path)
    else:
        server_side = WebSocketConnection(mode="server", port=0, token="s3cret")
    async with MCPServer(server_side, MemoryStorage()) as server:
        for t in served.TOOLS:
            server.register_tool(t)
        if kind == "websocket":
            assert isinstance(server_side, WebSocketConnection)
            client_side = WebSocketConnection(mode="client", url=server_side.url, token="s3cret")
        yield client_side


async def test_agent_runs_tools_served_over_the_transport(connection: Connection) -> None:
    provider = ScriptedProvider(
        [
            [call("add", a=2, b=3), call("echo", text="héllo ✓")],
            call("remember", fact="tea"),
            "done",
        ]
    )
    async with MCPClient("user-1", connection, MemoryStorage()) as client:
        agent = BaseAgent(provider=provider, tool_client=client, instruction="Use tools.")
        result = await agent.run("go")
    assert result.reply == "done"
    assert [(r.name, r.result, r.is_error) for r in result.tool_calls] == [
        ("add", '{"sum": 5}', False),
        ("echo", "héllo ✓", False),
        ("remember", "user-1 ref-1: tea", False),
    ]
    # The model was offered the server's tools, schemas included.
    offered = {t.name: t for t in provider.requests[0].tools}
    assert set(offered) >= {"add", "echo", "pixel", "read-file"}
    assert offered["echo"].description == "Repeat the text."
    assert offered["echo"].input_schema["properties"]["text"]["description"] == "What to repeat."


async def test_results_keep_structure_images_and_errors(connection: Connection) -> None:
    async with MCPClient("user-1", connection, MemoryStorage()) as client:
        added = await client.call_tool("add", {"a": 1, "b": 2})
        assert added.structured == {"sum": 3}
        image = await client.call_tool("pixel", {})
        assert image.text == "a pixel"
        assert image.images[0].media_type == "image/png"
        assert image.images[0].data is not None and image.images[0].data.startswith(b"\x89PNG")
        bad = await client.call_tool("add", {"a": "x"})
        assert bad.is_error and "invalid arguments for tool 'add'" in bad.text
        missing = await client.call_tool("nope", {})
        assert missing.is_error and "unknown tool 'nope'" in missing.text and "echo" in missing.text


async def test_env_ids_keep_separate_state_on_one_server(connection: Connection) -> None:
    async with (
        MCPClient("alice", connection, MemoryStorage()) as alice,
        MCPClient("bob", connection, MemoryStorage()) as bob,
    ):
        assert (await alice.call_tool("remember", {"fact": "a1"})).text == "alice ref-1: a1"
        assert (await bob.call_tool("remember", {"fact": "b1"})).text == "bob ref-1: b1"
        assert (await alice.call_tool("remember", {"fact": "a2"})).text == "alice ref-2: a1,a2"


@tool
def echo(text: str) -> str:
    """A local echo that shouts."""
    return text.upper()


async def test_a_client_tool_shadows_the_server_tool() -> None:
    connection = InProcessConnection()
    server_calls: list[str] = []

    @tool(name="echo")
    def server_echo(text: str) -> str:
        """The server's echo."""
        server_calls.append(text)
        return text

    async with MCPServer(connection, MemoryStorage()) as server:
        server.register_tool(server_echo)
        async with MCPClient("me", connection, MemoryStorage()) as client:
            client.register_tool(echo)
            listed = await client.list_tools()
            assert [t.name for t in listed] == ["echo"]
            assert listed[0].description == "A local echo that shouts."
            assert (await client.call_tool("echo", {"text": "hi"})).text == "HI"
    assert server_calls == []


async def test_fan_out_routes_by_name_and_the_first_connection_wins() -> None:
    first, second = InProcessConnection(), InProcessConnection()

    def named(label: str, name: str) -> object:
        @tool(name=name)
        def run() -> str:
            """A tool."""
            return label

        return run

    async with MCPServer(first, MemoryStorage()) as a, MCPServer(second, MemoryStorage()) as b:
        a.register_tool(named("from first", "shared"))  # type: ignore[arg-type]
        b.register_tool(named("from second", "shared"))  # type: ignore[arg-type]
        b.register_tool(named("only on second", "solo"))  # type: ignore[arg-type]
        async with MCPClient("me", [second, first], MemoryStorage()) as client:
            assert [t.name for t in await client.list_tools()] == ["shared", "solo"]
            assert (await client.call_tool("shared", {})).text == "from second"
            assert (await client.call_tool("solo", {})).text == "only on second"
        async with MCPClient("me", [first, second], MemoryStorage()) as client:
            assert (await client.call_tool("shared", {})).text == "from first"


async def test_a_tool_registered_after_listing_is_found_on_the_next_call() -> None:
    connection = InProcessConnection()
    async with MCPServer(connection, MemoryStorage()) as server:
        async with MCPClient("me", connection, MemoryStorage()) as client:
            assert await client.list_tools() == []
            server.register_tool(echo)
            assert (await client.call_tool("echo", {"text": "late"})).text == "LATE"


async def test_stop_iteration_crosses_the_wire() -> None:
    @tool(name="ask-user", stop_iteration_after_use=True)
    def ask(question: str) -> str:
        """Ask the user."""
        return f"asked: {question}"

    connection = InProcessConnection()
    async with MCPServer(connection, MemoryStorage()) as server:
        server.register_tool(ask)
        async with MCPClient("me", connection, MemoryStorage()) as client:
            agent = BaseAgent(
                provider=ScriptedProvider([call("ask-user", question="Which?"), "never"]),
                tool_client=client,
            )
            result = await agent.run("go")
    assert [r.result for r in result.tool_calls] == ["asked: Which?"]
    assert result.reply != "never"


async def test_an_image_by_url_round_trips() -> None:
    @tool
    def chart() -> ToolResult:
        """A chart by URL."""
        return ToolResult(content=(ImagePart(url="https://example.test/c.png"),))

    connection = InProcessConnection()
    async with MCPServer(connection, MemoryStorage()) as server:
        server.register_tool(chart)
        async with MCPClient("me", connection, MemoryStorage()) as client:
            result = await client.call_tool("chart", {})
    assert result.images == (ImagePart(url="https://example.test/c.png"),)


async def test_closing_the_client_stops_the_stdio_server(
    serve_command: Callable[..., list[str]],
) -> None:
    argv = serve_command("--stdio")
    client = MCPClient("me", StdioConnection(argv[0], argv[1:]), MemoryStorage())
    async with client:
        server_pid = (await client.call_tool("pid", {})).structured
    assert isinstance(server_pid, int)
    with pytest.raises(ProcessLookupError):  # gone, and reaped
        os.kill(server_pid, 0)


async def test_in_process_also_offers_memory_streams_to_any_mcp_client(
    served: ModuleType,
) -> None:
    connection = InProcessConnection()
    async with MCPServer(connection, MemoryStorage()) as server:
        server.register_tool(served.echo)
        async with Client(connection.open()) as official:
            result = await official.call_tool("echo", {"text": "streamed"})
    assert isinstance(result.content[0], types.TextContent)
    assert result.content[0].text == "streamed"


async def test_an_in_process_client_fails_clearly_once_the_server_closed(
    served: ModuleType,
) -> None:
    connection = InProcessConnection()
    server = MCPServer(connection, MemoryStorage())
    server.register_tool(served.echo)
    await server.start()
    async with MCPClient("me", connection, MemoryStorage()) as client:
        assert (await client.call_tool("echo", {"text": "up"})).text == "up"
        await server.close()
        with pytest.raises(MCPConnectionError, match="no MCPServer is listening"):
            await client.call_tool("echo", {"text": "down"})


class _StreamsOnly(InProcessConnection):
    """An in-process connection whose clients take the memory streams, never the direct path."""

    def direct(self) -> None:
        return None


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("echo", {"text": "hi"}),
        ("add", {"a": 2, "b": 3}),
        ("pixel", {}),
        ("remember", {"fact": "sky is blue"}),
        ("read_file", {"path": "/nonexistent/file"}),
        ("add", {"a": "two"}),
        ("nope", {}),
    ],
)
async def test_a_direct_in_process_call_answers_as_the_sdk_dispatch_does(
    served: ModuleType, name: str, arguments: dict[str, object]
) -> None:
    # In-process tools/call skips the SDK's per-request dispatch: its MCP result must be
    # the one the SDK's own in-process client gets from the same server (each call on a
    # fresh server: some tools keep state).
    meta = {"heron/env_id": "me"}
    results: list[types.CallToolResult] = []
    for sdk in (True, False):
        connection = InProcessConnection()
        async with MCPServer(connection, MemoryStorage()) as server:
            for t in served.TOOLS:
                server.register_tool(t)
            direct = connection.direct()
            assert direct is not None
            async with Client(direct.server) as official:
                if sdk:
                    results.append(await official.call_tool(name, arguments, meta=meta))  # type: ignore[arg-type]
                else:
                    params = types.CallToolRequestParams(name=name, arguments=arguments, _meta=meta)  # type: ignore[arg-type]
                    results.append(await direct.call_tool(params, official.protocol_version))
    expected, answer = results
    assert from_mcp_result(answer) == from_mcp_result(expected)  # what the agent sees
    # The MCP result itself, but for the server-info stamp the SDK adds to every result of
    # the modern protocol (in _meta, which Heron's client reads only for stop_iteration).
    wire = expected.model_dump(by_alias=True)
    stamp = wire["_meta"] or {}
    stamp.pop("io.modelcontextprotocol/serverInfo", None)
    wire["_meta"] = stamp or None
    assert answer.model_dump(by_alias=True) == wire


async def test_a_server_fault_reads_the_same_with_or_without_the_direct_path() -> None:
    @tool
    async def echo(text: str) -> str:
        """Repeat the text."""
        return text

    def broken_ids(storage: object, env_id: str) -> IdGenerator:
        raise RuntimeError("no ids today")

    texts = []
    for connection in (InProcessConnection(), _StreamsOnly()):
        async with MCPServer(connection, MemoryStorage(), ids=broken_ids) as server:
            server.register_tool(echo)
            async with MCPClient("me", connection, MemoryStorage()) as client:
                result = await client.call_tool("echo", {"text": "x"})
        assert result.is_error
        texts.append(result.text)
    assert texts[0] == texts[1]
    assert "rejected the call to 'echo'" in texts[0]
    assert "no ids today" not in texts[0]  # handler internals stay on the server's side


async def test_closing_the_server_cuts_a_direct_call_short(served: ModuleType) -> None:
    connection = InProcessConnection()
    server = MCPServer(connection, MemoryStorage())
    server.register_tool(served.hang)
    await server.start()
    async with MCPClient("me", connection, MemoryStorage()) as client:
        call = asyncio.create_task(client.call_tool("hang", {}))
        await asyncio.sleep(0.05)  # the call is in the tool by now
        assert not call.done()
        await server.close()
        with pytest.raises(MCPConnectionError, match="lost the link"):
            await asyncio.wait_for(call, 5)


TRACING_PROBE = """
import asyncio
from opentelemetry import trace
from heron import tool
from heron.mcp import InProcessConnection, MCPServer, MemoryStorage, UnixSocketConnection
from mcp import Client
from mcp.server._otel import OpenTelemetryMiddleware

spans = []

class Recording(trace.NoOpTracer):
    def start_as_current_span(self, name, *args, **kwargs):
        spans.append(name)
        return super().start_as_current_span(name, *args, **kwargs)

class Provider(trace.NoOpTracerProvider):
    def get_tracer(self, *args, **kwargs):
        return Recording()

@tool
async def echo(text: str) -> str:
    '''Repeat the text.'''
    return text

async def main():
    untraced = MCPServer(InProcessConnection(), MemoryStorage())
    await untraced.start()
    assert not any(isinstance(m, OpenTelemetryMiddleware) for m in untraced._lowlevel.middleware)
    await untraced.close()
    trace.set_tracer_provider(Provider())
    connection = InProcessConnection()
    async with MCPServer(connection, MemoryStorage()) as server:
        server.register_tool(echo)
        async with Client(connection.open()) as client:
            await client.call_tool("echo", {"text": "hi"})
    print(sorted(set(spans)))

asyncio.run(main())
"""


def test_the_server_traces_requests_only_when_a_tracer_provider_is_set() -> None:
    # A process-wide provider cannot be unset: probe in a process of its own.
    done = subprocess.run(
        [sys.executable, "-c", TRACING_PROBE], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "tools/call echo" in done.stdout
