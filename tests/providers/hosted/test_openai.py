"""OpenAIProvider against the replay server: both directions of the Chat Completions wire."""

from __future__ import annotations

import asyncio
import email.utils
import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from heron import (
    ImagePart,
    Message,
    ProviderError,
    SimpleAgent,
    StreamChunk,
    TextPart,
    ToolCall,
    ToolSchema,
    UserError,
    tool,
)
from heron.providers import InvalidToolCall, OpenAIProvider, RetryPolicy

FAST = RetryPolicy(max_retries=2, base_delay=0.01, max_delay=0.05, timeout=2.0)

WEATHER = ToolSchema(
    name="get_weather",
    description="Current weather for a city.",
    input_schema={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)


@pytest.fixture
def provider(wire: Any, closing: Any) -> Callable[..., OpenAIProvider]:
    def make(model: str = "gpt-5", **kwargs: Any) -> OpenAIProvider:
        kwargs.setdefault("retry", FAST)
        return closing(OpenAIProvider("sk-test", model, base_url=f"{wire.base_url}/v1", **kwargs))

    return make


async def test_streams_text_and_reports_real_usage(wire: Any, provider: Any) -> None:
    wire.reply(wire.sse("openai_text.sse"))
    chunks: list[StreamChunk] = []
    response = await provider().chat([Message.user("Hi")], on_chunk=chunks.append)

    assert [c.content for c in chunks if not c.done] == ["Hello", " there!"]
    assert chunks[-1] == StreamChunk(role="assistant", done=True)
    assert response.content == "Hello there!"
    assert (response.input_tokens, response.output_tokens) == (19, 3)
    assert response.stop_reason == "end_turn"
    sent = wire.last
    assert sent["stream"] is True
    assert sent["stream_options"] == {"include_usage": True}
    assert sent["messages"] == [{"role": "user", "content": "Hi"}]
    assert wire.requests[-1].headers["authorization"] == "Bearer sk-test"


async def test_parallel_tool_calls_are_emitted_as_each_one_completes(
    wire: Any, provider: Any
) -> None:
    events = wire.sse("openai_tools.sse")
    gate = wire.Gate()
    # Hold the stream right after the second call's first delta: the first
    # call must be out by then, or the test times out at the gate.
    events.pieces.insert(5, gate)
    wire.reply(events)
    seen: list[StreamChunk] = []

    def on_chunk(chunk: StreamChunk) -> None:
        seen.append(chunk)
        if chunk.tool_calls and chunk.tool_calls[0].id == "call_paris":
            gate.open()

    response = await provider().chat(
        [Message.user("Weather in Paris and Rome?")], tools=[WEATHER], on_chunk=on_chunk
    )

    calls = [c.tool_calls[0] for c in seen if c.tool_calls]
    assert calls == [
        ToolCall(id="call_paris", name="get_weather", arguments={"city": "Paris"}),
        ToolCall(id="call_rome", name="get_weather", arguments={"city": "Rome"}),
    ]
    assert response.tool_calls == tuple(calls)
    assert response.content == "Checking both."
    assert response.stop_reason == "tool_use"
    assert seen[-1].done and not seen[-1].tool_calls
    assert wire.last["tool_choice"] == "auto"
    assert wire.last["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "parameters": WEATHER.input_schema,
            },
        }
    ]


async def test_without_on_chunk_takes_the_non_streaming_path(wire: Any, provider: Any) -> None:
    wire.reply(wire.body(json.loads(wire.fixture("openai_tool_response.json"))))
    history = [
        Message.system("Be brief."),
        Message.user("Weather?"),
        Message.assistant("", tool_calls=[ToolCall(id="c1", name="get_weather", arguments={})]),
        Message.tool("sunny", tool_call_id="c1", tool_name="get_weather"),
    ]
    response = await provider().chat(history, tools=[WEATHER])

    assert response.tool_calls == (
        ToolCall(id="call_abc", name="get_weather", arguments={"city": "Oslo"}),
    )
    assert (response.input_tokens, response.output_tokens) == (50, 17)
    sent = wire.last
    assert "stream" not in sent
    assert sent["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    ]


@pytest.mark.parametrize(
    ("model", "effort", "sent"),
    [
        ("gpt-5", 0.9, "high"),
        ("gpt-5-mini", 0.5, "medium"),
        ("o3", 0.1, "low"),
        ("o4-mini", 0.5, "medium"),
        ("gpt-4o", 0.9, None),  # not a reasoning model: the API would reject the field
        ("gpt-5", None, None),  # no effort asked for
    ],
)
async def test_reasoning_effort_only_for_reasoning_families(
    wire: Any, provider: Any, model: str, effort: float | None, sent: str | None
) -> None:
    wire.reply(wire.sse("openai_text.sse"))
    await provider(model, think_effort=effort).chat([Message.user("Hi")], on_chunk=lambda c: None)
    assert wire.last.get("reasoning_effort") == sent


def test_capabilities_from_the_model_tables() -> None:
    assert OpenAIProvider("k").capabilities.context_window == 400_000
    assert OpenAIProvider("k", "gpt-4.1-mini").capabilities.context_window == 1_047_576
    assert OpenAIProvider("k", "o1-mini").capabilities.context_window == 128_000
    assert OpenAIProvider("k", "my-local-model").capabilities.context_window == 128_000
    assert OpenAIProvider("k", "o3-mini").capabilities.supports_images is False
    assert OpenAIProvider("k", "gpt-4o").capabilities.supports_images is True
    assert OpenAIProvider("k", "o3-mini", supports_images=True).capabilities.supports_images
    assert OpenAIProvider("k", context_window=4096).capabilities.context_window == 4096
    assert OpenAIProvider("k").capabilities.supports_thinking is False
    for model, window in [
        ("gpt-4", 8_192),
        ("gpt-4-0613", 8_192),
        ("gpt-4-32k", 32_768),
        ("gpt-4-1106-preview", 128_000),
        ("gpt-4-0125-preview", 128_000),
        ("gpt-4-turbo-2024-04-09", 128_000),
        ("gpt-4o-mini", 128_000),
    ]:
        assert OpenAIProvider("k", model).capabilities.context_window == window, model
    for model in ["gpt-4", "gpt-4-32k", "gpt-4-1106-preview", "gpt-4-0125-preview"]:
        assert OpenAIProvider("k", model).capabilities.supports_images is False, model
    for model in ["gpt-4o", "gpt-4.1", "gpt-4-turbo", "gpt-4-turbo-2024-04-09", "gpt-5"]:
        assert OpenAIProvider("k", model).capabilities.supports_images is True, model
    with pytest.raises(UserError, match="api_key"):
        OpenAIProvider("")


async def test_images_go_as_image_url_parts(wire: Any, provider: Any) -> None:
    wire.reply(wire.sse("openai_text.sse"))
    png = ImagePart(data=b"\x89PNG", media_type="image/png")
    await provider().chat([Message.user("What is it?", png)], on_chunk=lambda c: None)
    assert wire.last["messages"][0]["content"] == [
        {"type": "text", "text": "What is it?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}},
    ]


async def test_images_to_a_model_without_vision_are_refused_before_sending(
    wire: Any, provider: Any
) -> None:
    png = ImagePart(data=b"\x89PNG")
    with pytest.raises(UserError, match="does not accept images"):
        await provider("o3-mini").chat([Message.user("What?", png)])
    assert wire.requests == []


async def test_rate_limit_is_retried_after_the_servers_retry_after(
    wire: Any, provider: Any
) -> None:
    limited = wire.body(
        json.loads(wire.fixture("openai_rate_limit.json")),
        status=429,
        headers={"retry-after": "0.3"},
    )
    wire.reply(limited, wire.sse("openai_text.sse"))
    response = await provider().chat([Message.user("Hi")], on_chunk=lambda c: None)

    assert response.content == "Hello there!"
    first, second = wire.requests
    assert second.at - first.at >= 0.3  # Retry-After outweighs the 0.01 s backoff


@pytest.mark.parametrize("form", ["retry-after-ms", "http-date"])
async def test_retry_after_in_milliseconds_or_as_a_date_is_honoured(
    wire: Any, provider: Any, form: str
) -> None:
    if form == "retry-after-ms":
        headers, least = {"retry-after-ms": "400", "retry-after": "9"}, 0.4
    else:  # whole seconds only: three seconds from now, truncated, is still two from now
        headers, least = {"retry-after": email.utils.formatdate(time.time() + 3, usegmt=True)}, 1.5
    limited = wire.body(
        json.loads(wire.fixture("openai_rate_limit.json")), status=429, headers=headers
    )
    wire.reply(limited, wire.sse("openai_text.sse"))
    response = await provider().chat([Message.user("Hi")], on_chunk=lambda c: None)

    assert response.content == "Hello there!"
    first, second = wire.requests
    assert least <= second.at - first.at < 5  # the header's wait, not its 9 s fallback


async def test_persistent_server_errors_become_a_typed_error_after_the_retries(
    wire: Any, provider: Any
) -> None:
    error = {"error": {"message": "The server had an error", "type": "server_error", "code": None}}
    wire.reply(*(wire.body(error, status=503) for _ in range(3)))
    with pytest.raises(ProviderError) as caught:
        await provider().chat([Message.user("Hi")])

    assert len(wire.requests) == 3  # the first try and max_retries=2 more
    assert (caught.value.status, caught.value.retryable) == (503, True)
    assert caught.value.provider == "openai"
    assert "after 3 attempts" in caught.value.message


async def test_client_errors_are_not_retried(wire: Any, provider: Any) -> None:
    wire.reply(wire.body(json.loads(wire.fixture("openai_bad_request.json")), status=400))
    with pytest.raises(ProviderError) as caught:
        await provider().chat([Message.user("Hi")])

    assert len(wire.requests) == 1
    error = caught.value
    assert (error.status, error.code, error.retryable) == (400, "unknown_parameter", False)
    assert "Unrecognized request argument" in error.message


async def test_a_stream_cut_before_any_output_is_retried(wire: Any, provider: Any) -> None:
    cut = wire.sse("openai_text.sse", cut=True)
    cut.pieces = cut.pieces[:1]  # only the role delta: nothing reaches on_chunk
    wire.reply(cut, wire.sse("openai_text.sse"))
    chunks: list[StreamChunk] = []
    response = await provider().chat([Message.user("Hi")], on_chunk=chunks.append)

    assert response.content == "Hello there!"
    assert "".join(c.content for c in chunks) == "Hello there!"  # nothing streamed twice
    assert len(wire.requests) == 2


async def test_a_stream_cut_mid_answer_is_an_error_not_a_half_message(
    wire: Any, provider: Any
) -> None:
    cut = wire.sse("openai_text.sse", cut=True)
    cut.pieces = cut.pieces[:3]
    wire.reply(cut)
    chunks: list[StreamChunk] = []
    with pytest.raises(ProviderError) as caught:
        await provider().chat([Message.user("Hi")], on_chunk=chunks.append)

    assert [c.content for c in chunks] == ["Hello", " there!"]
    assert not any(c.done for c in chunks)  # no done chunk: the turn never ended
    assert caught.value.code == "connection_error"
    assert caught.value.retryable
    assert len(wire.requests) == 1  # text was streamed already: a retry would repeat it


async def test_a_stream_that_ends_without_finishing_is_truncated(wire: Any, provider: Any) -> None:
    short = wire.sse("openai_text.sse")
    short.pieces = short.pieces[:3]  # a clean end of body, but no finish_reason
    wire.reply(short)
    with pytest.raises(ProviderError) as caught:
        await provider().chat([Message.user("Hi")], on_chunk=lambda c: None)
    assert caught.value.code == "truncated_stream"
    assert caught.value.__cause__ is None  # raised as itself: not its own cause


async def test_a_stalled_stream_times_out_instead_of_hanging(wire: Any, provider: Any) -> None:
    stalled = wire.sse("openai_text.sse", stall=True)
    stalled.pieces = stalled.pieces[:2]
    wire.reply(stalled)
    slow = provider(retry=RetryPolicy(max_retries=0, timeout=0.3))
    with pytest.raises(ProviderError) as caught:
        await slow.chat([Message.user("Hi")], on_chunk=lambda c: None)
    assert caught.value.code == "timeout"


async def test_malformed_stream_data_is_a_provider_error(wire: Any, provider: Any) -> None:
    broken = wire.Canned([b"data: {not json\n\n"])
    wire.reply(broken)
    with pytest.raises(ProviderError) as caught:
        await provider().chat([Message.user("Hi")], on_chunk=lambda c: None)
    assert caught.value.code == "malformed_response"


async def test_invalid_tool_arguments_come_back_as_an_invalid_call(
    wire: Any, provider: Any
) -> None:
    data = json.loads(wire.fixture("openai_tool_response.json"))
    data["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = '{"city": '
    wire.reply(wire.body(data))
    response = await provider().chat([Message.user("Hi")], tools=[WEATHER])

    [bad] = response.tool_calls
    assert isinstance(bad, InvalidToolCall)
    assert (bad.id, bad.name, bad.arguments, bad.raw_arguments) == (
        "call_abc",
        "get_weather",
        {},
        '{"city": ',
    )
    assert "Expecting value" in bad.problem
    assert response.stop_reason == "tool_use"
    assert len(wire.requests) == 1


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    data = {
        "id": "chatcmpl-X",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-5",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(data)}\n\n".encode()


def _call_delta(index: int, arguments: str, **first: str) -> bytes:
    function: dict[str, str] = {"arguments": arguments}
    entry: dict[str, Any] = {"index": index, "function": function}
    if "id" in first:
        entry.update(id=first["id"], type="function")
    if "name" in first:
        function["name"] = first["name"]
    return _chunk({"tool_calls": [entry]})


async def test_interleaved_call_deltas_are_assembled_by_index(wire: Any, provider: Any) -> None:
    wire.reply(
        wire.Canned(
            [
                _call_delta(0, "", id="call_p", name="get_"),
                _call_delta(1, "", id="call_r", name="get_weather"),
                _call_delta(0, '{"city": ', name="weather"),  # the name, split across deltas
                _call_delta(1, '{"city": '),
                _call_delta(0, '"Paris"}'),
                _call_delta(1, '"Rome"}'),
                _chunk({}, "tool_calls"),
                b"data: [DONE]\n\n",
            ]
        )
    )
    chunks: list[StreamChunk] = []
    response = await provider().chat(
        [Message.user("Both?")], tools=[WEATHER], on_chunk=chunks.append
    )

    expected = (
        ToolCall(id="call_p", name="get_weather", arguments={"city": "Paris"}),
        ToolCall(id="call_r", name="get_weather", arguments={"city": "Rome"}),
    )
    assert response.tool_calls == expected
    assert tuple(c.tool_calls[0] for c in chunks if c.tool_calls) == expected
    assert response.stop_reason == "tool_use"


async def test_broken_streamed_arguments_become_an_invalid_call(wire: Any, provider: Any) -> None:
    wire.reply(
        wire.Canned(
            [
                _call_delta(0, '{"city": "Par', id="call_p", name="get_weather"),
                _call_delta(1, '{"city": "Rome"}', id="call_r", name="get_weather"),
                _chunk({}, "tool_calls"),
            ]
        )
    )
    chunks: list[StreamChunk] = []
    response = await provider().chat(
        [Message.user("Both?")], tools=[WEATHER], on_chunk=chunks.append
    )

    bad, good = response.tool_calls
    assert isinstance(bad, InvalidToolCall) and bad.raw_arguments == '{"city": "Par'
    assert good == ToolCall(id="call_r", name="get_weather", arguments={"city": "Rome"})
    assert [c.tool_calls[0].id for c in chunks if c.tool_calls] == ["call_p", "call_r"]
    assert chunks[-1].done
    assert len(wire.requests) == 1  # the model's mistake, not the server's: not retried


async def test_arguments_cut_off_by_the_output_limit_end_the_turn_as_max_tokens(
    wire: Any, provider: Any
) -> None:
    wire.reply(
        wire.Canned(
            [
                _chunk({"content": "Let me check."}),
                _call_delta(0, '{"city": "Rome"}', id="call_r", name="get_weather"),
                _call_delta(1, '{"city": "Par', id="call_p", name="get_weather"),
                _call_delta(2, "", id="call_t", name="get_weather"),  # cut before its arguments
                _chunk({}, "length"),
            ]
        )
    )
    chunks: list[StreamChunk] = []
    response = await provider().chat(
        [Message.user("Paris?")], tools=[WEATHER], on_chunk=chunks.append
    )

    assert response.stop_reason == "max_tokens"
    # Half a call is no call; the whole one before it stands.
    rome = ToolCall(id="call_r", name="get_weather", arguments={"city": "Rome"})
    assert response.tool_calls == (rome,)
    assert [c.tool_calls for c in chunks if c.tool_calls] == [(rome,)]
    assert response.content == "Let me check."


async def test_an_agent_answers_broken_arguments_with_an_error_and_the_model_retries(
    wire: Any, provider: Any
) -> None:
    cities: list[str] = []

    @tool
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        cities.append(city)
        return "sunny"

    wire.reply(
        wire.Canned(
            [
                _call_delta(0, '{"city": "Par', id="call_1", name="get_weather"),
                _chunk({}, "tool_calls"),
            ]
        ),
        wire.Canned(
            [
                _call_delta(0, '{"city": "Paris"}', id="call_2", name="get_weather"),
                _chunk({}, "tool_calls"),
            ]
        ),
        wire.sse("openai_text.sse"),
    )
    agent = SimpleAgent(provider=provider(), tools=[get_weather])
    result = await agent.run("Weather in Paris?", on_chunk=lambda c: None)

    assert result.reply == "Hello there!"
    assert cities == ["Paris"]  # the broken call never reached the tool
    first = result.tool_calls[0]
    assert first.is_error and "not valid JSON" in first.result and '{"city": "Par' in first.result
    sent = wire.requests[1].json["messages"]
    assert sent[1]["tool_calls"][0]["function"]["arguments"] == "{}"
    assert sent[2]["role"] == "tool" and "not valid JSON" in sent[2]["content"]


async def test_a_retry_after_beyond_the_policy_fails_at_once(wire: Any, provider: Any) -> None:
    error = json.loads(wire.fixture("openai_rate_limit.json"))
    wire.reply(wire.body(error, status=429, headers={"retry-after": "3600"}))
    with pytest.raises(ProviderError) as caught:
        await provider().chat([Message.user("Hi")])
    assert (caught.value.status, caught.value.code) == (429, "rate_limit_exceeded")
    assert len(wire.requests) == 1  # not an hour of waiting inside chat()


async def test_tool_images_follow_the_tool_message_as_user_content(
    wire: Any, provider: Any
) -> None:
    wire.reply(wire.sse("openai_text.sse"))
    png = ImagePart(data=b"\x89PNG", media_type="image/png")
    call = ToolCall(id="c1", name="screenshot", arguments={})
    history = [
        Message.user("Look"),
        Message.assistant("", tool_calls=[call]),
        Message.tool("Captured:", png, tool_call_id="c1", tool_name="screenshot"),
    ]
    await provider().chat(history, on_chunk=lambda c: None)
    # A tool message holds text only; its image goes right after it, from the user.
    assert wire.last["messages"][2:] == [
        {"role": "tool", "tool_call_id": "c1", "content": "Captured:"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Images returned by tool 'screenshot':"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}},
            ],
        },
    ]


async def test_an_exhausted_quota_is_not_retried(wire: Any, provider: Any) -> None:
    quota = {
        "error": {
            "message": "You exceeded your current quota, please check your plan and billing.",
            "type": "insufficient_quota",
            "param": None,
            "code": "insufficient_quota",
        }
    }
    wire.reply(wire.body(quota, status=429), wire.sse("openai_text.sse"))
    with pytest.raises(ProviderError) as caught:
        await provider().chat([Message.user("Hi")])
    assert (caught.value.status, caught.value.code) == (429, "insufficient_quota")
    assert not caught.value.retryable
    assert len(wire.requests) == 1  # a 429 that waiting cannot fix


async def test_failed_tool_results_and_system_images_reach_the_model(
    wire: Any, provider: Any
) -> None:
    wire.reply(wire.sse("openai_text.sse"))
    logo = ImagePart(data=b"\x89PNG", media_type="image/png")
    call = ToolCall(id="c1", name="get_weather", arguments={"city": "Atlantis"})
    history = [
        Message(role="system", content=(TextPart(text="Our logo:"), logo)),
        Message.user("Weather?"),
        Message.assistant("", tool_calls=[call]),
        Message.tool("no such city", tool_call_id="c1", tool_name="get_weather", is_error=True),
    ]
    await provider().chat(history, tools=[WEATHER], on_chunk=lambda c: None)

    sent = wire.last["messages"]
    assert sent[0] == {"role": "system", "content": "Our logo:"}
    assert sent[1] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "Images attached to the system message:"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}},
        ],
    }
    assert sent[-1] == {"role": "tool", "tool_call_id": "c1", "content": "Error: no such city"}


async def test_a_slow_non_streamed_answer_gets_the_response_timeout(
    wire: Any, provider: Any
) -> None:
    # A reasoning model sends nothing until it is done: the stream timeout
    # (between events) must not cut a non-streamed call short.
    slow = wire.body(json.loads(wire.fixture("openai_tool_response.json")))
    slow.pieces.insert(0, wire.Pause(0.6))
    wire.reply(slow)
    patient = provider(retry=RetryPolicy(max_retries=0, timeout=0.2, response_timeout=5.0))
    response = await patient.chat([Message.user("Weather?")], tools=[WEATHER])
    assert response.tool_calls[0].arguments == {"city": "Oslo"}
    assert len(wire.requests) == 1


async def test_a_timeout_is_retried_once_at_most(wire: Any, provider: Any) -> None:
    # Every attempt re-runs and re-bills the whole request: one more try, not max_retries.
    stalled = [wire.Canned([], content_type="application/json", stall=True) for _ in range(3)]
    wire.reply(*stalled)
    policy = RetryPolicy(max_retries=3, base_delay=0.01, timeout=1.0, response_timeout=0.2)
    with pytest.raises(ProviderError) as caught:
        await provider(retry=policy).chat([Message.user("Hi")])
    assert caught.value.code == "timeout"
    assert len(wire.requests) == 2
    assert "after 2 attempts" in caught.value.message


async def test_cancelling_a_streamed_turn_closes_its_connection(
    wire: Any, provider: Any, cancel_mid_stream: Any
) -> None:
    stalled = wire.sse("openai_text.sse", stall=True)
    stalled.pieces = stalled.pieces[:2]
    wire.reply(stalled)
    await cancel_mid_stream(
        lambda on_chunk: provider().chat([Message.user("Hi")], on_chunk=on_chunk)
    )
    assert await asyncio.to_thread(stalled.disconnected.wait, 5)


async def test_vendor_metadata_reaches_the_response_streamed_or_not(
    wire: Any, provider: Any
) -> None:
    wire.reply(wire.sse("openai_text.sse", headers={"x-request-id": "req_stream"}))
    streamed = await provider().chat([Message.user("Hi")], on_chunk=lambda c: None)
    assert (streamed.request_id, streamed.response_id) == ("req_stream", "chatcmpl-B9")
    assert (streamed.finish_reason, streamed.cached_input_tokens) == ("stop", 0)
    assert streamed.cache_write_tokens is None

    answer = json.loads(wire.fixture("openai_tool_response.json"))
    answer["usage"]["prompt_tokens_details"] = {"cached_tokens": 32}
    wire.reply(wire.body(answer, headers={"x-request-id": "req_plain"}))
    plain = await provider().chat([Message.user("Weather in Oslo?")], tools=[WEATHER])
    assert (plain.request_id, plain.response_id) == ("req_plain", "chatcmpl-C1")
    assert (plain.finish_reason, plain.cached_input_tokens) == ("tool_calls", 32)

    # DeepSeek reports its cache hits in a field of its own.
    answer["usage"] = {"prompt_tokens": 50, "completion_tokens": 17, "prompt_cache_hit_tokens": 48}
    wire.reply(wire.body(answer))
    deepseek_style = await provider().chat([Message.user("Weather?")], tools=[WEATHER])
    assert deepseek_style.cached_input_tokens == 48
    assert deepseek_style.request_id is None


async def test_a_runs_export_keeps_each_turns_vendor_metadata(wire: Any, provider: Any) -> None:
    wire.reply(
        wire.body(
            json.loads(wire.fixture("openai_tool_response.json")), headers={"x-request-id": "req_1"}
        ),
        wire.body(ANSWER_TEXT, headers={"x-request-id": "req_2"}),
    )

    @tool(name="get_weather")
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        return "cold"

    agent = SimpleAgent(provider=provider(), tools=[get_weather])
    result = await agent.run("Weather in Oslo?")
    assert result.reply == "Cold in Oslo."
    exported = json.loads(result.to_json())
    assert exported["provider_metadata"] == [
        {
            "turn": 1,
            "request_id": "req_1",
            "response_id": "chatcmpl-C1",
            "finish_reason": "tool_calls",
        },
        {"turn": 2, "request_id": "req_2", "response_id": "chatcmpl-C2", "finish_reason": "stop"},
    ]


ANSWER_TEXT = {
    "id": "chatcmpl-C2",
    "object": "chat.completion",
    "created": 1741570290,
    "model": "gpt-5",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Cold in Oslo.", "refusal": None},
            "logprobs": None,
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 80, "completion_tokens": 4, "total_tokens": 84},
}
