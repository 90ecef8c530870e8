"""OllamaProvider against the replay server: NDJSON streaming, think levels, tool calls."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

from heron import (
    ImagePart,
    Message,
    ProviderError,
    SimpleAgent,
    StreamChunk,
    ToolCall,
    ToolSchema,
    UserError,
    tool,
)
from heron.providers import OllamaProvider, RetryPolicy

FAST = RetryPolicy(max_retries=1, base_delay=0.01, timeout=2.0)
WEATHER = ToolSchema(
    name="get_weather",
    description="Current weather for a city.",
    input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
)


@pytest.fixture
def provider(wire: Any, closing: Any) -> Callable[..., OllamaProvider]:
    def make(model: str = "qwen3:8b", **kwargs: Any) -> OllamaProvider:
        return closing(OllamaProvider(model, wire.base_url, retry=FAST, **kwargs))

    return make


async def test_thinking_then_tool_calls_each_emitted_once(wire: Any, provider: Any) -> None:
    wire.reply(wire.ndjson("ollama_think_tools.ndjson"))
    chunks: list[StreamChunk] = []
    response = await provider(supports_tools=True, think_effort=0.9).chat(
        [Message.user("Weather in Paris and Rome?")], tools=[WEATHER], on_chunk=chunks.append
    )

    assert [c.thinking for c in chunks if c.thinking] == ["Weather for ", "two cities."]
    streamed = [c.tool_calls[0] for c in chunks if c.tool_calls]
    assert [(c.name, c.arguments) for c in streamed] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Rome"}),
    ]
    assert response.tool_calls == tuple(streamed)
    assert len({c.id for c in streamed}) == 2 and all(c.id for c in streamed)
    assert (response.input_tokens, response.output_tokens) == (76, 41)
    assert response.stop_reason == "tool_use"
    assert chunks[-1].done

    sent = wire.last
    assert wire.requests[-1].path == "/api/chat"
    assert sent["think"] == "high"
    assert sent["stream"] is True
    assert sent["options"] == {"num_ctx": 32_000}
    assert sent["tools"][0]["function"]["parameters"] == WEATHER.input_schema


ANSWER = {
    "model": "llava",
    "created_at": "2025-06-01T10:00:01.2Z",
    "message": {"role": "assistant", "content": "A red square."},
    "done": True,
    "done_reason": "stop",
    "prompt_eval_count": 600,
    "eval_count": 4,
}


async def test_history_with_tool_results_and_images(wire: Any, provider: Any) -> None:
    wire.reply(wire.body(ANSWER))
    call = ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"})
    history = [
        Message.user("Look:", ImagePart(data=b"img")),
        Message.assistant("", tool_calls=[call]),
        Message.tool("sunny", tool_call_id="c1", tool_name="get_weather"),
    ]
    response = await provider("llava", supports_tools=True).chat(history, tools=[WEATHER])

    assert response.content == "A red square."
    assert (response.input_tokens, response.output_tokens) == (600, 4)
    sent = wire.last
    assert sent["stream"] is False
    assert "think" not in sent
    assert sent["messages"] == [
        {"role": "user", "content": "Look:", "images": ["aW1n"]},
        {
            "role": "assistant",
            "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}],
        },
        {"role": "tool", "content": "sunny", "tool_name": "get_weather"},
    ]


@pytest.mark.parametrize(
    ("effort", "sent"),
    # Only 0 switches thinking off (the seed: effort <= 0): a low effort still thinks.
    [(0.0, False), (0.01, "low"), (0.2, "low"), (0.3, "low"), (0.6, "medium"), (0.95, "high")],
)
async def test_think_levels(wire: Any, provider: Any, effort: float, sent: object) -> None:
    wire.reply(wire.ndjson("ollama_text.ndjson"))
    await provider(think_effort=effort).chat([Message.user("Hi")], on_chunk=lambda c: None)
    assert wire.last["think"] == sent


async def test_tools_need_supports_tools(provider: Any) -> None:
    assert provider().capabilities.supports_tools is False
    with pytest.raises(UserError, match="supports_tools"):
        await provider().chat([Message.user("Hi")], tools=[WEATHER])


async def test_server_errors_are_retried_then_typed(wire: Any, provider: Any) -> None:
    failing = wire.body({"error": "busy"}, status=429, headers={"retry-after": "0.25"})
    wire.reply(failing, wire.body(ANSWER))
    assert (await provider().chat([Message.user("Hi")])).content == "A red square."
    first, second = wire.requests
    assert second.at - first.at >= 0.25  # a gateway's Retry-After is honoured too

    wire.reply(wire.body({"error": "model 'nope' not found"}, status=404))
    with pytest.raises(ProviderError) as caught:
        await provider("nope").chat([Message.user("Hi")])
    assert (caught.value.status, caught.value.retryable) == (404, False)
    assert "not found" in caught.value.message


async def test_a_stream_without_done_is_truncated(wire: Any, provider: Any) -> None:
    short = wire.ndjson("ollama_text.ndjson")
    short.pieces = short.pieces[:2]
    wire.reply(short)
    chunks: list[StreamChunk] = []
    with pytest.raises(ProviderError) as caught:
        await provider().chat([Message.user("Hi")], on_chunk=chunks.append)
    assert caught.value.code == "truncated_stream"
    assert not any(c.done for c in chunks)


async def test_an_unreachable_server_is_a_connection_error(closing: Any) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dead = closing(
        OllamaProvider(
            "m", f"http://127.0.0.1:{port}", retry=RetryPolicy(max_retries=1, base_delay=0.01)
        )
    )
    with pytest.raises(ProviderError) as caught:
        await dead.chat([Message.user("Hi")])
    assert (caught.value.code, caught.value.retryable) == ("connection_error", True)


async def test_url_images_are_refused(provider: Any) -> None:
    with pytest.raises(UserError, match="inline"):
        await provider().chat([Message.user("Hi", ImagePart(url="https://example.com/a.png"))])


def _part(message: dict[str, Any], done: bool = False, **extra: Any) -> bytes:
    data = {"model": "qwen3:8b", "created_at": "2025-06-01T10:00:00.0Z", "done": done}
    data["message"] = {"role": "assistant", "content": "", **message}
    return (json.dumps({**data, **extra}) + "\n").encode()


async def test_identical_parallel_calls_are_two_calls(wire: Any, provider: Any) -> None:
    # Ollama sends each call once, in the part where it parsed it: two equal
    # calls in one part are two calls the model meant to make.
    paris = {"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    wire.reply(
        wire.Canned(
            [
                _part({"tool_calls": [paris, paris]}),
                _part({}, done=True, done_reason="stop", prompt_eval_count=50, eval_count=9),
            ],
            content_type="application/x-ndjson",
        )
    )
    chunks: list[StreamChunk] = []
    response = await provider(supports_tools=True).chat(
        [Message.user("Twice?")], tools=[WEATHER], on_chunk=chunks.append
    )
    assert [(c.name, c.arguments) for c in response.tool_calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Paris"}),
    ]
    assert len({c.id for c in response.tool_calls}) == 2
    assert sum(1 for c in chunks if c.tool_calls) == 2


async def test_usage_left_out_by_a_prompt_cache_hit_is_estimated_not_zero(
    wire: Any, provider: Any
) -> None:
    answer = {k: v for k, v in ANSWER.items() if k not in ("prompt_eval_count", "eval_count")}
    wire.reply(wire.body(answer))
    long_prompt = "Describe the weather in every European capital. " * 40
    response = await provider().chat([Message.user(long_prompt)])
    assert response.input_tokens > 200  # ~2,000 characters of prompt
    assert response.output_tokens > 0

    # A partial cache hit reports only the newly evaluated tail: the whole prompt counts.
    wire.reply(wire.body({**ANSWER, "prompt_eval_count": 7}))
    response = await provider().chat([Message.user(long_prompt)])
    assert response.input_tokens > 200
    assert response.output_tokens == 4


async def test_tool_errors_are_marked_as_errors(wire: Any, provider: Any) -> None:
    wire.reply(wire.body(ANSWER))
    call = ToolCall(id="c1", name="get_weather", arguments={"city": "Atlantis"})
    history = [
        Message.user("Weather?"),
        Message.assistant("", tool_calls=[call]),
        Message.tool("no such city", tool_call_id="c1", tool_name="get_weather", is_error=True),
    ]
    await provider(supports_tools=True).chat(history, tools=[WEATHER])
    assert wire.last["messages"][-1]["content"] == "Error: no such city"


def test_supports_images_can_be_switched_off() -> None:
    assert OllamaProvider("llava").capabilities.supports_images is True
    assert OllamaProvider("llama3.2", supports_images=False).capabilities.supports_images is False


async def test_cancelling_a_streamed_turn_closes_its_connection(
    wire: Any, provider: Any, cancel_mid_stream: Any
) -> None:
    stalled = wire.ndjson("ollama_text.ndjson", stall=True)
    stalled.pieces = stalled.pieces[:1]
    wire.reply(stalled)
    await cancel_mid_stream(
        lambda on_chunk: provider().chat([Message.user("Hi")], on_chunk=on_chunk)
    )
    assert await asyncio.to_thread(stalled.disconnected.wait, 5)


async def test_a_slow_non_streamed_answer_gets_the_response_timeout(
    wire: Any, closing: Any
) -> None:
    # llava on a CPU can take minutes over one image before it answers.
    slow = wire.body(ANSWER)
    slow.pieces.insert(0, wire.Pause(0.6))
    wire.reply(slow)
    policy = RetryPolicy(max_retries=0, timeout=0.2, response_timeout=5.0)
    patient = closing(OllamaProvider("llava", wire.base_url, retry=policy))
    assert (await patient.chat([Message.user("Hi")])).content == "A red square."


async def test_a_call_the_server_repeats_in_a_later_part_runs_once(
    wire: Any, provider: Any
) -> None:
    # A server that sends the turn's calls again in its final part: each call
    # is still made (and streamed) once.
    paris = {"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    rome = {"function": {"name": "get_weather", "arguments": {"city": "Rome"}}}
    wire.reply(
        wire.Canned(
            [
                _part({"tool_calls": [paris]}),
                _part({"tool_calls": [rome]}),
                _part(
                    {"tool_calls": [rome, paris]},
                    done=True,
                    done_reason="stop",
                    prompt_eval_count=50,
                    eval_count=9,
                ),
            ],
            content_type="application/x-ndjson",
        ),
        wire.ndjson("ollama_text.ndjson"),
    )
    ran: list[str] = []

    @tool(name="get_weather")
    def get_weather(city: str) -> str:
        """Current weather for a city.

        Args:
            city: The city.
        """
        ran.append(city)
        return "sunny"

    chunks: list[StreamChunk] = []
    agent = SimpleAgent(provider=provider(supports_tools=True), tools=[get_weather])
    result = await agent.run("Weather in Paris and Rome?", on_chunk=chunks.append)

    assert ran == ["Paris", "Rome"]
    assert [(c.name, c.arguments) for c in result.tool_calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Rome"}),
    ]
    assert sum(1 for c in chunks if c.tool_calls) == 2
    # The next request answers exactly those two calls.
    replayed = wire.last["messages"]
    assert [m["role"] for m in replayed] == ["user", "assistant", "tool", "tool"]
    assert len(replayed[1]["tool_calls"]) == 2


async def test_the_servers_done_reason_is_kept(wire: Any, provider: Any) -> None:
    wire.reply(wire.body({**ANSWER, "done_reason": "length"}))
    response = await provider().chat([Message.user("Hi")])
    assert (response.stop_reason, response.finish_reason) == ("max_tokens", "length")
    assert response.request_id is None and response.cached_input_tokens is None
