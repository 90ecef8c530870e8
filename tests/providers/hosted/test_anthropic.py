"""AnthropicProvider against the replay server: thinking, signed blocks, tool_use blocks."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from heron import (
    ImagePart,
    Message,
    ProviderError,
    StreamChunk,
    TextPart,
    ToolCall,
    ToolSchema,
    UserError,
)
from heron.providers import AnthropicProvider, InvalidToolCall, RetryPolicy

FAST = RetryPolicy(max_retries=2, base_delay=0.01, timeout=2.0)
WEATHER = ToolSchema(
    name="get_weather",
    description="Current weather for a city.",
    input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
)
SIGNED = {
    "type": "thinking",
    "thinking": "Two cities, two calls.",
    "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds",
}


@pytest.fixture
def provider(wire: Any, closing: Any) -> Callable[..., AnthropicProvider]:
    def make(**kwargs: Any) -> AnthropicProvider:
        kwargs.setdefault("retry", FAST)
        return closing(AnthropicProvider("sk-ant", base_url=wire.base_url, **kwargs))

    return make


async def test_thinking_text_and_parallel_tool_calls_stream_in_order(
    wire: Any, provider: Any
) -> None:
    events = wire.sse("anthropic_thinking_tools.sse")
    gate = wire.Gate()
    # Hold the stream after the first tool_use block stops: that call must be out.
    stop_of_first_call = next(
        i for i, e in enumerate(events.pieces) if b'"content_block_stop","index":2' in e
    )
    events.pieces.insert(stop_of_first_call + 1, gate)
    wire.reply(events)
    chunks: list[StreamChunk] = []

    def on_chunk(chunk: StreamChunk) -> None:
        chunks.append(chunk)
        if chunk.tool_calls and chunk.tool_calls[0].id == "toolu_paris":
            gate.open()

    response = await provider(think_effort=0.5).chat(
        [Message.system("Be brief."), Message.user("Weather in Paris and Rome?")],
        tools=[WEATHER],
        on_chunk=on_chunk,
    )

    kinds = [
        "thinking" if c.thinking else "text" if c.content else "call" if c.tool_calls else "done"
        for c in chunks
    ]
    assert kinds == ["thinking", "thinking", "text", "call", "call", "done"]
    assert response.tool_calls == (
        ToolCall(id="toolu_paris", name="get_weather", arguments={"city": "Paris"}),
        ToolCall(id="toolu_rome", name="get_weather", arguments={"city": "Rome"}),
    )
    assert response.thinking == "Two cities, two calls."
    assert response.provider_thinking == (SIGNED,)
    assert response.content == "Looking both up."
    assert (response.input_tokens, response.output_tokens) == (500, 89)  # cache reads count
    assert response.stop_reason == "tool_use"

    sent = wire.last
    assert wire.requests[-1].path == "/v1/messages"
    assert wire.requests[-1].headers["authorization"] == "Bearer sk-ant"  # this SDK's scheme
    assert sent["system"] == "Be brief."
    assert sent["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris and Rome?"}]}
    ]
    assert sent["tools"] == [
        {
            "name": "get_weather",
            "description": WEATHER.description,
            "input_schema": WEATHER.input_schema,
        }
    ]
    # 0.5 of the way from 1,024 to max_tokens (4,096); max_tokens raised by the budget.
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": 2560}
    assert sent["max_tokens"] == 4096 + 2560


async def test_signed_thinking_is_replayed_unchanged_before_the_tool_results(
    wire: Any, provider: Any
) -> None:
    wire.reply(wire.sse("anthropic_text.sse"))
    calls = [
        ToolCall(id="toolu_paris", name="get_weather", arguments={"city": "Paris"}),
        ToolCall(id="toolu_rome", name="get_weather", arguments={"city": "Rome"}),
    ]
    history = [
        Message.user("Weather in Paris and Rome?"),
        Message.assistant("Looking both up.", tool_calls=calls, provider_thinking=[SIGNED]),
        Message.tool("sunny", tool_call_id="toolu_paris", tool_name="get_weather"),
        Message.tool(
            "no such city", tool_call_id="toolu_rome", tool_name="get_weather", is_error=True
        ),
    ]
    response = await provider(think_effort=0.5).chat(
        history, tools=[WEATHER], on_chunk=lambda c: None
    )

    assert response.content == "Sunny in both."
    assert response.provider_thinking is None
    assert wire.last["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                SIGNED,
                {"type": "text", "text": "Looking both up."},
                {
                    "type": "tool_use",
                    "id": "toolu_paris",
                    "name": "get_weather",
                    "input": {"city": "Paris"},
                },
                {
                    "type": "tool_use",
                    "id": "toolu_rome",
                    "name": "get_weather",
                    "input": {"city": "Rome"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_paris",
                    "content": [{"type": "text", "text": "sunny"}],
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_rome",
                    "content": [{"type": "text", "text": "no such city"}],
                    "is_error": True,
                },
            ],
        },
    ]


async def test_non_streaming_path_reads_thinking_blocks_and_sends_images(
    wire: Any, provider: Any
) -> None:
    wire.reply(wire.body(json.loads(wire.fixture("anthropic_message.json"))))
    png = ImagePart(data=b"\x89PNG", media_type="image/png")
    response = await provider().chat([Message.user("Describe:", png)])

    assert response.content == "A red square on white."
    assert response.provider_thinking == (
        {"type": "thinking", "thinking": "A red square.", "signature": "sig-xyz"},
    )
    assert (response.input_tokens, response.output_tokens) == (1200, 14)
    sent = wire.last
    assert "stream" not in sent and "thinking" not in sent
    assert sent["max_tokens"] == 4096
    assert sent["messages"][0]["content"][1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw=="},
    }


async def test_overloaded_is_retried_honouring_retry_after(wire: Any, provider: Any) -> None:
    overloaded = json.loads(wire.fixture("anthropic_overloaded.json"))
    wire.reply(
        wire.body(overloaded, status=529, headers={"retry-after": "0.25"}),
        wire.sse("anthropic_text.sse"),
    )
    response = await provider().chat([Message.user("Hi")], on_chunk=lambda c: None)

    assert response.content == "Sunny in both."
    first, second = wire.requests
    assert second.at - first.at >= 0.25


async def test_error_event_inside_the_stream_is_typed_and_retried(wire: Any, provider: Any) -> None:
    wire.reply(wire.sse("anthropic_stream_error.sse"), wire.sse("anthropic_text.sse"))
    response = await provider().chat([Message.user("Hi")], on_chunk=lambda c: None)
    assert response.content == "Sunny in both."
    assert len(wire.requests) == 2

    wire.reply(*(wire.sse("anthropic_stream_error.sse") for _ in range(3)))
    with pytest.raises(ProviderError) as caught:
        await provider().chat([Message.user("Hi")], on_chunk=lambda c: None)
    assert (caught.value.code, caught.value.retryable) == ("overloaded_error", True)


async def test_a_stream_cut_after_text_is_an_error(wire: Any, provider: Any) -> None:
    cut = wire.sse("anthropic_text.sse", cut=True)
    cut.pieces = cut.pieces[:4]
    wire.reply(cut)
    chunks: list[StreamChunk] = []
    with pytest.raises(ProviderError) as caught:
        await provider().chat([Message.user("Hi")], on_chunk=chunks.append)
    assert caught.value.code == "connection_error"
    assert not any(c.done for c in chunks)  # no "finished" signal for a half-built message


async def test_a_stream_without_message_stop_is_truncated(wire: Any, provider: Any) -> None:
    short = wire.sse("anthropic_text.sse")
    short.pieces = short.pieces[:-1]
    wire.reply(short)
    with pytest.raises(ProviderError) as caught:
        await provider(retry=RetryPolicy(max_retries=0)).chat(
            [Message.user("Hi")], on_chunk=lambda c: None
        )
    assert caught.value.code == "truncated_stream"


def test_thinking_budget_and_capabilities() -> None:
    assert AnthropicProvider("k").thinking_budget is None
    assert AnthropicProvider("k", think_effort=0).thinking_budget is None
    assert AnthropicProvider("k", think_effort=1.0, max_tokens=8000).thinking_budget == 8000
    assert AnthropicProvider("k", think_effort=0.5, max_tokens=512).thinking_budget == 1024
    assert AnthropicProvider("k", think_effort=0.5).capabilities.supports_thinking
    assert AnthropicProvider("k").capabilities.context_window == 200_000
    with pytest.raises(UserError, match="max_tokens"):
        AnthropicProvider("k", max_tokens=0)


def test_answer_and_thinking_stay_within_the_models_output_limit() -> None:
    # 64,000 of answer plus a 64,000 budget would be refused (400): both shrink alike.
    big = AnthropicProvider("k", "claude-sonnet-4-5", max_tokens=64_000, think_effort=1.0)
    assert (big.output_tokens, big.thinking_budget) == (64_000, 32_000)
    small = AnthropicProvider("k", "claude-sonnet-4-5", max_tokens=4096, think_effort=1.0)
    assert (small.output_tokens, small.thinking_budget) == (8192, 4096)  # fits: untouched
    opus = AnthropicProvider("k", "claude-opus-4-1", max_tokens=30_000, think_effort=0.5)
    assert opus.output_tokens == 32_000 and 1024 <= opus.thinking_budget < 32_000
    assert (
        AnthropicProvider("k", "claude-3-5-haiku-latest", max_tokens=10_000).output_tokens == 8192
    )


async def test_the_capped_total_is_what_is_sent(wire: Any, provider: Any) -> None:
    wire.reply(wire.sse("anthropic_text.sse"))
    await provider(max_tokens=64_000, think_effort=1.0).chat(
        [Message.user("Hi")], on_chunk=lambda c: None
    )
    assert wire.last["max_tokens"] == 64_000
    assert wire.last["thinking"] == {"type": "enabled", "budget_tokens": 32_000}


async def test_a_thinking_block_without_a_signature_is_malformed(wire: Any, provider: Any) -> None:
    events = wire.sse("anthropic_thinking_tools.sse")
    events.pieces = [e for e in events.pieces if b"signature_delta" not in e]
    wire.reply(events)
    with pytest.raises(ProviderError) as caught:
        await provider(think_effort=0.5).chat(
            [Message.user("Weather?")], tools=[WEATHER], on_chunk=lambda c: None
        )
    assert caught.value.code == "malformed_response"
    assert "signature" in caught.value.message


async def test_a_later_system_message_stays_in_place(wire: Any, provider: Any) -> None:
    wire.reply(wire.sse("anthropic_text.sse"))
    call = ToolCall(id="toolu_1", name="get_weather", arguments={"city": "Paris"})
    history = [
        Message.system("Be brief."),
        Message.user("Weather?"),
        Message.assistant("", tool_calls=[call]),
        Message.system("The user is in a hurry."),
        Message.tool("sunny", tool_call_id="toolu_1", tool_name="get_weather"),
    ]
    await provider().chat(history, tools=[WEATHER], on_chunk=lambda c: None)

    assert wire.last["system"] == "Be brief."
    # Tool results lead their turn, as the API requires; the note follows them.
    assert wire.last["messages"][-1] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": [{"type": "text", "text": "sunny"}],
            },
            {"type": "text", "text": "(system message) The user is in a hurry."},
        ],
    }


async def test_images_in_the_system_message_are_sent_not_dropped(wire: Any, provider: Any) -> None:
    wire.reply(wire.sse("anthropic_text.sse"))
    logo = ImagePart(data=b"\x89PNG", media_type="image/png")
    await provider().chat(
        [Message(role="system", content=(TextPart(text="Our logo:"), logo)), Message.user("Hi")],
        on_chunk=lambda c: None,
    )
    assert wire.last["system"] == "Our logo:"
    assert [b["type"] for b in wire.last["messages"][0]["content"]] == ["image", "text"]


async def test_broken_tool_input_json_becomes_an_invalid_call(wire: Any, provider: Any) -> None:
    events = wire.sse("anthropic_thinking_tools.sse")
    events.pieces = [e.replace(b'is\\"}', b"is") for e in events.pieces]
    wire.reply(events)
    response = await provider(think_effort=0.5).chat(
        [Message.user("Weather?")], tools=[WEATHER], on_chunk=lambda c: None
    )
    bad, good = response.tool_calls
    assert isinstance(bad, InvalidToolCall) and bad.raw_arguments == '{"city": "Paris'
    assert good.arguments == {"city": "Rome"}


async def test_a_stream_that_only_pings_times_out(wire: Any, provider: Any) -> None:
    # Pings keep the socket busy, so a read timeout never fires; they are no progress.
    start, ping = (
        wire.sse("anthropic_text.sse").pieces[0],
        b'event: ping\ndata: {"type": "ping"}\n\n',
    )
    pinging = wire.Canned([start] + [wire.Pause(0.05), ping] * 200, stall=True)
    wire.reply(pinging)
    quick = provider(retry=RetryPolicy(max_retries=0, timeout=0.3))
    with pytest.raises(ProviderError) as caught:
        await quick.chat([Message.user("Hi")], on_chunk=lambda c: None)
    assert caught.value.code == "timeout"
    assert pinging.sent < 100  # it gave up while the server was still pinging


async def test_vendor_metadata_reaches_the_response_streamed_or_not(
    wire: Any, provider: Any
) -> None:
    wire.reply(wire.sse("anthropic_text.sse", headers={"request-id": "req_011"}))
    streamed = await provider().chat([Message.user("Hi")], on_chunk=lambda c: None)
    assert (streamed.request_id, streamed.response_id) == ("req_011", "msg_02")
    assert streamed.finish_reason == "end_turn"
    assert (streamed.cached_input_tokens, streamed.cache_write_tokens) == (None, None)

    message = json.loads(wire.fixture("anthropic_message.json"))
    message["usage"].update(cache_read_input_tokens=1000, cache_creation_input_tokens=150)
    wire.reply(wire.body(message, headers={"request-id": "req_012"}))
    plain = await provider().chat([Message.user("Describe it")])
    assert (plain.request_id, plain.response_id) == ("req_012", "msg_04")
    assert (plain.finish_reason, plain.cached_input_tokens, plain.cache_write_tokens) == (
        "end_turn",
        1000,
        150,
    )
    assert plain.input_tokens == 1200 + 1000 + 150  # cached tokens are read too
