"""The server's own tools/call answers are the SDK's, byte for byte.

Each test plays one script of JSON-RPC frames to a server session twice: once
through ``MCPServer._serve_session`` (which answers tools/call itself) and once
through the SDK's ``Server.run`` on the same server, and compares every frame
that comes back.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import mcp_types as types
import pytest
from mcp.shared._context_streams import create_context_streams
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage

from heron import Tool, ToolContext, ToolResult, tool
from heron.mcp import InProcessConnection, MCPServer, MemoryStorage
from heron.mcp._connections._base import decode, message_streams
from heron.mcp._server_calls import ToolCallRouter

from .conftest import INITIALIZE, INITIALIZED

ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
DISCOVER = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": ENVELOPE}}
Serve = Callable[
    [ReadStream[SessionMessage | Exception], WriteStream[SessionMessage]], Awaitable[None]
]


@tool
async def echo(text: str) -> str:
    """Repeat the text."""
    return text


@tool
async def fail(text: str) -> str:
    """Raise, always."""
    raise ValueError(f"cannot {text}")


@tool
async def data(n: int) -> dict[str, int]:
    """Structured content."""
    return {"n": n}


started = asyncio.Event()
sender = contextvars.ContextVar("sender", default="nobody")


@tool
async def whose() -> str:
    """Which sender's context the call runs in."""
    return sender.get()


@tool
async def slow() -> str:
    """Wait until cancelled."""
    started.set()
    await asyncio.Event().wait()
    return "unreachable"


class Broken(Tool):
    """A tool whose run itself fails: a fault of the server's handler, not an error result."""

    name = "broken"
    description = "Fail outside the tool's own error handling."
    input_schema: dict[str, Any] = {"type": "object", "properties": {}}  # noqa: RUF012

    async def execute(self, arguments: dict[str, Any], context: ToolContext) -> str:
        return "unreachable"

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        raise RuntimeError("handler fault")


def call(request_id: int | str, name: str, arguments: object, **params: object) -> dict[str, Any]:
    """A tools/call request of a 2026-07-28 session."""
    body: dict[str, Any] = {"_meta": {"heron/env_id": "t", **ENVELOPE}, "name": name}
    body["arguments"] = arguments
    body.update(params)
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": body}


@dataclass
class Step:
    """A frame the client sends, and whether an answer comes back before the next one."""

    frame: str
    answered: bool = True


def steps(*frames: dict[str, Any] | str | Step) -> list[Step]:
    """The script: dicts are encoded as JSON requests (answered if they carry an id)."""
    script = []
    for frame in frames:
        if isinstance(frame, Step):
            script.append(frame)
        elif isinstance(frame, str):
            script.append(Step(frame, answered=False))
        else:
            script.append(Step(json.dumps(frame), answered="id" in frame))
    return script


@pytest.fixture
async def server() -> AsyncIterator[MCPServer]:
    async with MCPServer(InProcessConnection(), MemoryStorage()) as served:
        for t in (echo, fail, data, slow, whose, Broken()):
            served.register_tool(t)
        yield served


@pytest.fixture
def claimed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of the calls the server answered itself, in order."""
    seen: list[str] = []
    start = ToolCallRouter._start

    def spy(self: ToolCallRouter, request: types.JSONRPCRequest) -> None:
        seen.append(str(request.id))
        start(self, request)

    monkeypatch.setattr(ToolCallRouter, "_start", spy)
    return seen


async def play(serve: Serve, script: list[Step]) -> list[str]:
    """Every frame the session writes while ``script`` is played to it, then the link ends."""
    incoming: asyncio.Queue[str | None] = asyncio.Queue()
    outgoing: asyncio.Queue[str] = asyncio.Queue()

    async def send(text: str) -> None:
        outgoing.put_nowait(text)

    written: list[str] = []
    async with message_streams(incoming.get, send) as (read, write):
        session = asyncio.create_task(serve(read, write))
        for step in script:
            incoming.put_nowait(step.frame)
            if step.answered:
                written.append(await asyncio.wait_for(outgoing.get(), 5))
            else:
                await asyncio.sleep(0.05)  # time for an answer that must not come
        incoming.put_nowait(None)
        await asyncio.wait_for(session, 5)
    while not outgoing.empty():
        written.append(outgoing.get_nowait())
    return written


async def both(server: MCPServer, script: list[Step]) -> tuple[list[str], list[str]]:
    """The frames written by the server's own path and by the SDK's, for one script."""
    lowlevel = server._lowlevel

    async def sdk(
        read: ReadStream[SessionMessage | Exception], write: WriteStream[SessionMessage]
    ) -> None:
        await lowlevel.run(read, write, lowlevel.create_initialization_options())

    return await play(server._serve_session, script), await play(sdk, script)


def results(frames: list[str]) -> Iterator[Any]:
    for frame in frames:
        yield json.loads(frame)


async def test_a_call_is_answered_as_the_sdk_answers_it(
    server: MCPServer, claimed: list[str]
) -> None:
    script = steps(
        DISCOVER,
        call(2, "echo", {"text": "ping"}),
        call(3, "data", {"n": 7}),
        call("four", "echo", {"text": "é ✓"}),
    )
    fast, sdk = await both(server, script)
    assert fast == sdk
    assert claimed == ["2", "3", "four"]
    answers = list(results(fast))
    assert answers[1]["result"]["content"] == [{"type": "text", "text": "ping"}]
    assert answers[2]["result"]["structuredContent"] == {"n": 7}
    assert answers[1]["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "heron"


async def test_an_unknown_tool_is_the_same_error_result(
    server: MCPServer, claimed: list[str]
) -> None:
    fast, sdk = await both(server, steps(DISCOVER, call(2, "nope", {})))
    assert fast == sdk
    assert claimed == ["2"]
    result = json.loads(fast[1])["result"]
    assert result["isError"] is True
    assert "unknown tool 'nope'" in result["content"][0]["text"]


async def test_invalid_arguments_are_the_same_error_result_or_error(
    server: MCPServer, claimed: list[str]
) -> None:
    script = steps(
        DISCOVER,
        call(2, "echo", {"text": 5}),  # valid JSON-RPC, wrong for the tool: an error result
        call(3, "echo", {}),
        call(4, "echo", "not an object"),  # not CallToolRequestParams: INVALID_PARAMS
        call(5, 42, {}),
        {"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"_meta": ENVELOPE}},
    )
    fast, sdk = await both(server, script)
    assert fast == sdk
    assert claimed == ["2", "3", "4", "5", "6"]
    answers = list(results(fast))
    assert answers[1]["result"]["isError"] is True
    assert answers[2]["result"]["isError"] is True
    for answer in answers[3:]:
        assert answer["error"]["code"] == types.INVALID_PARAMS


async def test_a_tool_raising_is_the_same_answer(server: MCPServer, claimed: list[str]) -> None:
    script = steps(DISCOVER, call(2, "fail", {"text": "go"}), call(3, "broken", {}))
    fast, sdk = await both(server, script)
    assert fast == sdk
    assert claimed == ["2", "3"]
    answers = list(results(fast))
    assert answers[1]["result"]["isError"] is True  # the tool's failure: an error result
    assert answers[2]["error"] == {"code": types.INTERNAL_ERROR, "message": "Internal server error"}


async def test_malformed_frames_are_dropped_as_the_sdk_drops_them(
    server: MCPServer, claimed: list[str]
) -> None:
    script = steps(
        DISCOVER,
        '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {',  # cut short
        '{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": 7}',
        '{"jsonrpc": "1.0", "id": 4, "method": "tools/call", "params": {}}',
        '{"id": true, "method": "tools/call"}',
        "[]",
        call(5, "echo", {"text": "still here"}),
    )
    fast, sdk = await both(server, script)
    assert fast == sdk
    assert claimed == ["5"]
    assert len(fast) == 2


async def test_a_broken_envelope_is_the_same_error(server: MCPServer, claimed: list[str]) -> None:
    no_version = call(2, "echo", {"text": "x"})
    del no_version["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
    old_version = call(3, "echo", {"text": "x"})
    old_version["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "2025-06-18"
    bad_meta = call(4, "echo", {"text": "x"})
    bad_meta["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = "none"
    fast, sdk = await both(server, steps(DISCOVER, no_version, old_version, bad_meta))
    assert fast == sdk
    assert claimed == ["2", "3", "4"]
    codes = [answer["error"]["code"] for answer in list(results(fast))[1:]]
    assert codes[:2] == [types.INVALID_PARAMS, types.UNSUPPORTED_PROTOCOL_VERSION]


async def test_a_call_sent_as_a_notification_is_never_answered(
    server: MCPServer, claimed: list[str]
) -> None:
    notification = call(0, "echo", {"text": "x"})
    del notification["id"]
    fast, sdk = await both(server, steps(DISCOVER, notification, call(2, "echo", {"text": "y"})))
    assert fast == sdk
    assert claimed == ["2"]
    assert [answer["id"] for answer in results(fast)] == [1, 2]


async def test_a_cancelled_call_is_never_answered(server: MCPServer, claimed: list[str]) -> None:
    def cancel(request_id: object) -> dict[str, Any]:
        params = {"requestId": request_id, "reason": "changed my mind"}
        return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}

    script = steps(
        DISCOVER,
        Step(json.dumps(call(2, "slow", {})), answered=False),
        cancel(2),
        Step(json.dumps(call("3", "slow", {})), answered=False),
        cancel(3),  # the SDK matches "3" and 3 as one id
        cancel(99),  # nothing in flight by that id: ignored
        call(4, "echo", {"text": "after"}),
    )
    fast, sdk = await both(server, script)
    assert fast == sdk
    assert claimed == ["2", "3", "4"]
    assert [answer["id"] for answer in results(fast)] == [1, 4]


async def test_a_call_in_flight_when_the_link_ends_is_answered_connection_closed(
    server: MCPServer, claimed: list[str]
) -> None:
    script = steps(DISCOVER, Step(json.dumps(call(2, "slow", {})), answered=False))
    fast, sdk = await both(server, script)
    assert fast == sdk
    assert claimed == ["2"]
    assert json.loads(fast[1])["error"]["code"] == types.CONNECTION_CLOSED


async def test_calls_run_side_by_side(server: MCPServer, claimed: list[str]) -> None:
    started.clear()
    in_flight = Step(json.dumps(call(2, "slow", {})), answered=False)
    script = steps(DISCOVER, in_flight, call(3, "echo", {"text": "z"}))
    fast = await play(server._serve_session, script)
    assert started.is_set()
    assert [answer.get("id") for answer in results(fast)] == [1, 3, 2]  # 2: closed at the end


async def test_a_handshake_session_is_left_to_the_sdk(
    server: MCPServer, claimed: list[str]
) -> None:
    legacy_call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "old"}},
    }
    script = steps(INITIALIZE, INITIALIZED, legacy_call, call(3, "echo", {"text": "new"}))
    fast, sdk = await both(server, script)
    assert fast == sdk
    assert claimed == []
    answers = list(results(fast))
    assert answers[1]["result"]["content"][0]["text"] == "old"
    assert answers[2]["error"]["code"] == types.INVALID_REQUEST  # an envelope on a legacy link


async def test_a_call_opening_the_session_is_left_to_the_sdk(
    server: MCPServer, claimed: list[str]
) -> None:
    fast, sdk = await both(server, steps(call(1, "echo", {"text": "a"}), call(2, "echo", {})))
    assert fast == sdk
    assert claimed == ["2"]  # the first request decides the era, in the SDK


async def test_a_call_runs_in_its_senders_context_as_the_sdk_runs_it(
    server: MCPServer, claimed: list[str]
) -> None:
    """A link that records each frame's sender context (the SDK's stdio server does)."""

    async def play_from_sender(serve: Serve) -> list[str]:
        inbound, read = create_context_streams[SessionMessage | Exception](10)
        outgoing: asyncio.Queue[str] = asyncio.Queue()

        async def send(text: str) -> None:
            outgoing.put_nowait(text)

        async def sender_task() -> list[str]:
            sender.set("the stdin reader")
            written = []
            for frame in (DISCOVER, call(2, "whose", {})):
                await inbound.send(decode(json.dumps(frame)))
                written.append(await outgoing.get())
            await inbound.aclose()
            return written

        async with message_streams(asyncio.Event().wait, send) as (_, write):
            _, written = await asyncio.wait_for(
                asyncio.gather(serve(read, write), sender_task()), 5
            )
        return written

    lowlevel = server._lowlevel

    async def sdk(
        read: ReadStream[SessionMessage | Exception], write: WriteStream[SessionMessage]
    ) -> None:
        await lowlevel.run(read, write, lowlevel.create_initialization_options())

    fast = await play_from_sender(server._serve_session)
    assert fast == await play_from_sender(sdk)
    assert claimed == ["2"]
    assert json.loads(fast[1])["result"]["content"][0]["text"] == "the stdin reader"
