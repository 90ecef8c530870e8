"""What Heron's hosted providers add on top of the vendor SDKs when streaming.

A loopback server (uvicorn, in a thread) replays one long streamed answer in each
vendor's wire format: ``--deltas`` text deltas followed by ``--calls`` tool calls (OpenAI:
argument fragments over several chunks; Anthropic: ``tool_use`` blocks with
``input_json_delta``s), then usage and the end of the stream. For each vendor the script
times, side by side:

- **sdk**: the bare SDK (``openai`` / ``anthropic``) reading the stream to its end with
  the least a consumer must do: read each event's text and argument fragments (the SDKs
  build their parsed objects lazily, so a loop that reads nothing would cost next to
  nothing and measure only the transport);
- **heron**: ``OpenAIProvider.chat`` / ``AnthropicProvider.chat`` with an ``on_chunk`` that
  does nothing: the same stream assembled into chunks, tool calls and a ``ChatResponse``.

It reports the median of ``--runs`` runs (after a warm-up) in milliseconds and Heron's
extra cost per streamed event in microseconds. Only loopback is used.

Run it from the repository root::

    python bench/provider_stream.py              # 30 runs, 2,000 deltas, 20 calls
    python bench/provider_stream.py --runs 10
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anthropic
import openai
import uvicorn

from heron import Message, StreamChunk, ToolSchema
from heron.providers import AnthropicProvider, OpenAIProvider, RetryPolicy

TOOL = ToolSchema(
    name="lookup",
    description="Look something up.",
    input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
)


def openai_stream(deltas: int, calls: int) -> bytes:
    head = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-5"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return f"data: {json.dumps({**head, 'choices': [choice], 'usage': None})}\n\n"

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"content": f"word{i} "}) for i in range(deltas)]
    for n in range(calls):
        first = {"index": n, "id": f"call_{n}", "type": "function"}
        out.append(
            chunk({"tool_calls": [{**first, "function": {"name": "lookup", "arguments": ""}}]})
        )
        for part in ('{"q": ', f'"item {n}"', "}"):
            out.append(chunk({"tool_calls": [{"index": n, "function": {"arguments": part}}]}))
    out.append(chunk({}, "tool_calls"))
    usage = {"prompt_tokens": 10, "completion_tokens": deltas, "total_tokens": deltas + 10}
    out.append(f"data: {json.dumps({**head, 'choices': [], 'usage': usage})}\n\n")
    out.append("data: [DONE]\n\n")
    return "".join(out).encode()


def anthropic_stream(deltas: int, calls: int) -> bytes:
    def event(data: dict[str, Any]) -> str:
        return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n"

    message: dict[str, Any] = {
        "id": "m",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-5",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    out = [event({"type": "message_start", "message": message})]
    out.append(
        event(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            }
        )
    )
    for i in range(deltas):
        delta = {"type": "text_delta", "text": f"word{i} "}
        out.append(event({"type": "content_block_delta", "index": 0, "delta": delta}))
    out.append(event({"type": "content_block_stop", "index": 0}))
    for n in range(1, calls + 1):
        block = {"type": "tool_use", "id": f"toolu_{n}", "name": "lookup", "input": {}}
        out.append(event({"type": "content_block_start", "index": n, "content_block": block}))
        for part in ('{"q": ', f'"item {n}"', "}"):
            delta = {"type": "input_json_delta", "partial_json": part}
            out.append(event({"type": "content_block_delta", "index": n, "delta": delta}))
        out.append(event({"type": "content_block_stop", "index": n}))
    out.append(
        event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": deltas},
            }
        )
    )
    out.append(event({"type": "message_stop"}))
    return "".join(out).encode()


class Replay:
    """An ASGI app answering every POST with the stream for its path."""

    def __init__(self, bodies: dict[str, bytes]) -> None:
        self.bodies = bodies

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        body = self.bodies[scope["path"]]
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        # Written in 8 KiB pieces, as a real server flushes them.
        for i in range(0, len(body), 8192):
            await send(
                {"type": "http.response.body", "body": body[i : i + 8192], "more_body": True}
            )
        await send({"type": "http.response.body", "body": b""})


def serve(app: Replay) -> tuple[uvicorn.Server, str]:
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off")
    )
    threading.Thread(target=server.run, daemon=True).start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("replay server did not start")
        time.sleep(0.01)
    return server, f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"


async def median_ms(run: Callable[[], Awaitable[object]], runs: int) -> float:
    for _ in range(3):
        await run()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        await run()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


async def main(runs: int, deltas: int, calls: int) -> None:
    server, base = serve(
        Replay(
            {
                "/v1/chat/completions": openai_stream(deltas, calls),
                "/v1/messages": anthropic_stream(deltas, calls),
            }
        )
    )
    messages = [Message.user("Go.")]
    wire_messages: list[Any] = [{"role": "user", "content": "Go."}]

    def ignore(chunk: StreamChunk) -> None:
        return None

    raw_openai = openai.AsyncOpenAI(api_key="k", base_url=f"{base}/v1", max_retries=0)
    heron_openai = OpenAIProvider("k", base_url=f"{base}/v1", retry=RetryPolicy(max_retries=0))
    raw_anthropic = anthropic.AsyncAnthropic(api_key="k", base_url=base, max_retries=0)
    heron_anthropic = AnthropicProvider("k", base_url=base, retry=RetryPolicy(max_retries=0))

    async def sdk_openai() -> None:
        stream = await raw_openai.chat.completions.create(
            model="gpt-5", messages=wire_messages, stream=True
        )
        parts: list[str] = []
        async for chunk in stream:
            for choice in chunk.choices:
                parts.append(choice.delta.content or "")
                for call in choice.delta.tool_calls or ():
                    parts.append(call.function.arguments or "" if call.function else "")

    async def sdk_anthropic() -> None:
        stream = await raw_anthropic.messages.create(
            model="claude-sonnet-5", max_tokens=4096, messages=wire_messages, stream=True
        )
        parts: list[str] = []
        async for event in stream:
            if event.type == "content_block_delta":
                delta = event.delta
                parts.append(getattr(delta, "text", "") or getattr(delta, "partial_json", ""))

    rows = [
        (
            "openai",
            sdk_openai,
            lambda: heron_openai.chat(messages, tools=[TOOL], on_chunk=ignore),
            deltas + 4 * calls,
        ),
        (
            "anthropic",
            sdk_anthropic,
            lambda: heron_anthropic.chat(messages, tools=[TOOL], on_chunk=ignore),
            deltas + 5 * calls + 5,
        ),
    ]
    print(f"{runs} runs; {deltas} text deltas and {calls} tool calls per stream (median)")
    print(f"{'vendor':<10} {'sdk ms':>9} {'heron ms':>9} {'extra µs/event':>15}")
    for name, sdk, heron, events in rows:
        sdk_ms = await median_ms(sdk, runs)
        heron_ms = await median_ms(heron, runs)
        extra = (heron_ms - sdk_ms) * 1000 / events
        print(f"{name:<10} {sdk_ms:>9.2f} {heron_ms:>9.2f} {extra:>15.2f}")

    await raw_openai.close()
    await raw_anthropic.close()
    await heron_openai.aclose()
    await heron_anthropic.aclose()
    server.should_exit = True


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--deltas", type=int, default=2000)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.deltas, args.calls))
