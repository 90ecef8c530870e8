"""The client's lean tools/call sends what the SDK's client sends and returns what it returns.

Each test runs one exchange twice against a scripted server: with the SDK's
``Client`` (its JSON-RPC dispatcher) and with ``StreamClient`` (the lean
``tools/call`` path MCPClient's links use), and compares every frame the
client wrote and the outcome of each call.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from heron.mcp._client_calls import StreamClient, ToolCallDispatcher
from heron.mcp._connections._base import message_streams

SERVER_INFO = {"io.modelcontextprotocol/serverInfo": {"name": "far", "version": "1"}}
DISCOVERED = {
    "supportedVersions": ["2026-07-28"],
    "capabilities": {"tools": {"listChanged": False}},
    "resultType": "complete",
    "_meta": SERVER_INFO,
}
LISTED = {
    "tools": [{"name": "echo", "inputSchema": {"type": "object"}}],
    "cacheScope": "private",
    "ttlMs": 0,
    "resultType": "complete",
    "_meta": SERVER_INFO,
}
INITIALIZED = {
    "protocolVersion": "2025-06-18",
    "capabilities": {"tools": {"listChanged": False}},
    "serverInfo": {"name": "far", "version": "1"},
}
META = {"heron/env_id": "t"}

Reply = dict[str, Any] | str | None  # a frame (as data or as text), or None: the link ends
Answer = Callable[[dict[str, Any], int], Iterable[Reply]]  # a tools/call and its number


def result(request: dict[str, Any], text: str = "pong", **extra: Any) -> dict[str, Any]:
    """A successful tools/call answer to ``request``."""
    body = {"content": [{"type": "text", "text": text}], "isError": False, **extra}
    return {"jsonrpc": "2.0", "id": request["id"], "result": {"resultType": "complete", **body}}


def error(request: dict[str, Any], code: int, message: str, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC error answer to ``request``."""
    body: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        body["data"] = data
    return {"jsonrpc": "2.0", "id": request["id"], "error": body}


class Far:
    """The server end of a client's link: canned discovery and listing; ``answer`` answers calls."""

    def __init__(self, answer: Answer, *, legacy: bool = False) -> None:
        self.answer = answer
        self.legacy = legacy  # a handshake-era server: no server/discover, an initialize
        self.frames: list[dict[str, Any]] = []
        self.incoming: asyncio.Queue[str | None] = asyncio.Queue()
        self.calls = 0

    async def receive(self) -> str | None:
        return await self.incoming.get()

    async def send(self, text: str) -> None:
        frame = json.loads(text)
        self.frames.append(frame)
        if "id" not in frame:
            return
        if frame["method"] == "server/discover" and self.legacy:
            self._reply(error(frame, types.METHOD_NOT_FOUND, "Method not found"))
        elif frame["method"] == "server/discover":
            self._reply({"jsonrpc": "2.0", "id": frame["id"], "result": DISCOVERED})
        elif frame["method"] == "initialize":
            self._reply({"jsonrpc": "2.0", "id": frame["id"], "result": INITIALIZED})
        elif frame["method"] == "tools/list":
            self._reply({"jsonrpc": "2.0", "id": frame["id"], "result": LISTED})
        else:
            self.calls += 1
            for reply in self.answer(frame, self.calls):
                self._reply(reply)

    def _reply(self, reply: Reply) -> None:
        text = reply if reply is None or isinstance(reply, str) else json.dumps(reply)
        self.incoming.put_nowait(text)


Outcome = tuple[str, Any]


async def run(
    client_type: type[Client],
    answer: Answer,
    calls: Callable[[Client], Awaitable[Any]],
    *,
    legacy: bool = False,
) -> tuple[list[dict[str, Any]], Outcome]:
    """The frames a client of ``client_type`` writes and what ``calls`` comes to."""
    far = Far(answer, legacy=legacy)
    async with client_type(message_streams(far.receive, far.send), cache=None) as client:
        try:
            outcome: Outcome = ("result", _comparable(await calls(client)))
        except MCPError as exc:
            outcome = ("MCPError", (exc.code, exc.message, exc.data))
        except (ValidationError, TimeoutError, RuntimeError) as exc:
            outcome = (type(exc).__name__, str(exc))
    return far.frames, outcome


def _comparable(value: Any) -> Any:
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    if isinstance(value, types.CallToolResult):
        return value.model_dump(by_alias=True, exclude_unset=True)
    return value


@pytest.fixture
def lean(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The method of each request the lean path sent."""
    sent: list[str] = []
    call = ToolCallDispatcher._call

    async def spy(self: ToolCallDispatcher, params: Any, opts: Any) -> dict[str, Any]:
        sent.append("tools/call")
        return await call(self, params, opts)

    monkeypatch.setattr(ToolCallDispatcher, "_call", spy)
    return sent


async def both(
    answer: Answer, calls: Callable[[Client], Awaitable[Any]], *, legacy: bool = False
) -> tuple[list[dict[str, Any]], Outcome]:
    """Run one exchange with each client; assert they match; return the lean one's."""
    sdk = await asyncio.wait_for(run(Client, answer, calls, legacy=legacy), 10)
    fast = await asyncio.wait_for(run(StreamClient, answer, calls, legacy=legacy), 10)
    assert fast == sdk
    return fast


def call_echo(client: Client) -> Awaitable[types.CallToolResult]:
    return client.call_tool("echo", {"text": "ping"}, meta=META)  # type: ignore[arg-type]


async def test_a_call_sends_the_same_request_and_returns_the_same_result(
    lean: list[str],
) -> None:
    async def twice(client: Client) -> list[types.CallToolResult]:
        return [await call_echo(client), await call_echo(client)]

    frames, outcome = await both(lambda request, n: [result(request, f"pong {n}")], twice)
    assert lean == ["tools/call", "tools/call"]
    calls = [f for f in frames if f.get("method") == "tools/call"]
    assert calls[0]["params"]["_meta"]["heron/env_id"] == "t"
    assert calls[0]["params"]["arguments"] == {"text": "ping"}
    assert outcome[0] == "result"
    assert [r["content"][0]["text"] for r in outcome[1]] == ["pong 1", "pong 2"]


async def test_a_handshake_era_call_is_the_same_too(lean: list[str]) -> None:
    def answer(request: dict[str, Any], n: int) -> list[Reply]:
        body = {"content": [{"type": "text", "text": "old pong"}], "isError": False}
        return [{"jsonrpc": "2.0", "id": request["id"], "result": body}]

    frames, outcome = await both(answer, call_echo, legacy=True)
    assert lean == ["tools/call"]
    assert "notifications/initialized" in [f.get("method") for f in frames]
    assert outcome[1]["content"][0]["text"] == "old pong"


async def test_an_error_result_is_the_same_result(lean: list[str]) -> None:
    def answer(request: dict[str, Any], n: int) -> list[Reply]:
        return [result(request, "no such tool", isError=True)]

    _, outcome = await both(answer, call_echo)
    assert lean == ["tools/call"]
    assert outcome[0] == "result"
    assert outcome[1]["isError"] is True


async def test_a_json_rpc_error_is_the_same_mcp_error(lean: list[str]) -> None:
    def answer(request: dict[str, Any], n: int) -> list[Reply]:
        return [error(request, types.INVALID_PARAMS, "Invalid request parameters", "")]

    _, outcome = await both(answer, call_echo)
    assert lean == ["tools/call"]
    assert outcome == ("MCPError", (types.INVALID_PARAMS, "Invalid request parameters", ""))


async def test_a_malformed_result_fails_validation_alike(lean: list[str]) -> None:
    def answer(request: dict[str, Any], n: int) -> list[Reply]:
        return [{"jsonrpc": "2.0", "id": request["id"], "result": {"content": "not a list"}}]

    _, outcome = await both(answer, call_echo)
    assert lean == ["tools/call"]
    assert outcome[0] == "ValidationError"


async def test_malformed_and_stray_frames_change_nothing(lean: list[str]) -> None:
    def answer(request: dict[str, Any], n: int) -> list[Reply]:
        stray = result(request)
        stray["id"] = 999  # answers nothing in flight: dropped
        echoed = result(request, "by a string id")
        echoed["id"] = str(request["id"])  # "7" answers 7, as the SDK correlates ids
        return ['{"jsonrpc": "2.0", "id": ', stray, echoed]

    _, outcome = await both(answer, call_echo)
    assert lean == ["tools/call"]
    assert outcome[1]["content"][0]["text"] == "by a string id"


async def test_the_link_ending_mid_call_is_the_same_connection_closed(lean: list[str]) -> None:
    _, outcome = await both(lambda request, n: [None], call_echo)
    assert lean == ["tools/call"]
    assert outcome == ("MCPError", (types.CONNECTION_CLOSED, "Connection closed", None))


async def test_a_caller_giving_up_sends_the_same_cancellation(lean: list[str]) -> None:
    async def impatient(client: Client) -> types.CallToolResult:
        async with asyncio.timeout(0.05):
            return await call_echo(client)

    frames, outcome = await both(lambda request, n: [], impatient)
    assert lean == ["tools/call"]
    assert outcome[0] == "TimeoutError"
    cancel = frames[-1]
    assert cancel["method"] == "notifications/cancelled"
    assert cancel["params"]["reason"] == "caller cancelled"


async def test_input_required_rounds_go_on_as_the_sdk_drives_them(lean: list[str]) -> None:
    def answer(request: dict[str, Any], n: int) -> list[Reply]:
        if n == 1:
            body = {"resultType": "input_required", "requestState": "opaque-state"}
            return [{"jsonrpc": "2.0", "id": request["id"], "result": body}]
        return [result(request, f"done with {request['params'].get('requestState')}")]

    _, outcome = await both(answer, call_echo)
    assert lean == ["tools/call", "tools/call"]
    assert outcome[1]["content"][0]["text"] == "done with opaque-state"


async def test_a_header_mismatch_is_retried_as_the_sdk_retries_it(lean: list[str]) -> None:
    def answer(request: dict[str, Any], n: int) -> list[Reply]:
        if n == 1:
            return [error(request, types.HEADER_MISMATCH, "stale listing")]
        return [result(request)]

    frames, outcome = await both(answer, call_echo)
    assert lean == ["tools/call", "tools/call"]
    assert [f.get("method") for f in frames].count("tools/list") >= 1
    assert outcome[0] == "result"
