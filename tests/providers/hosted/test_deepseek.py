"""DeepSeekProvider against the replay server: reasoning out, reasoning back in."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from heron import ImagePart, Message, StreamChunk, ToolCall, ToolSchema, UserError
from heron.providers import DeepSeekProvider, RetryPolicy

FAST = RetryPolicy(max_retries=1, base_delay=0.01, timeout=2.0)
TIME = ToolSchema(name="get_time", description="The current time.")


@pytest.fixture
def provider(wire: Any, closing: Any) -> Callable[..., DeepSeekProvider]:
    def make(model: str = "deepseek-v4-flash", **kwargs: Any) -> DeepSeekProvider:
        return closing(
            DeepSeekProvider("sk-ds", model, base_url=wire.base_url, retry=FAST, **kwargs)
        )

    return make


async def test_reasoning_streams_as_thinking_before_the_tool_call(wire: Any, provider: Any) -> None:
    wire.reply(wire.sse("deepseek_reasoning_tool.sse"))
    chunks: list[StreamChunk] = []
    response = await provider(think_effort=0.8).chat(
        [Message.user("What time is it?")], tools=[TIME], on_chunk=chunks.append
    )

    assert [c.thinking for c in chunks if c.thinking] == [
        "The user wants the time.",
        " I should call the tool.",
    ]
    assert all(not c.content for c in chunks if c.thinking)
    assert [c.tool_calls for c in chunks if c.tool_calls] == [
        (ToolCall(id="call_00_time", name="get_time", arguments={}),)
    ]
    assert chunks[-1].done and chunks[-1].thinking is None
    assert response.thinking == "The user wants the time. I should call the tool."
    assert (response.input_tokens, response.output_tokens) == (120, 30)
    assert wire.requests[-1].path == "/chat/completions"
    assert wire.last["reasoning_effort"] == "max"
    assert wire.last["stream_options"] == {"include_usage": True}


async def test_reasoning_of_the_current_turn_is_sent_back_with_the_tool_results(
    wire: Any, provider: Any
) -> None:
    wire.reply(wire.sse("deepseek_reasoning_text.sse"))
    call = ToolCall(id="call_00_time", name="get_time", arguments={})
    history = [
        Message.user("Earlier question"),
        Message.assistant("Earlier answer", thinking="old reasoning"),
        Message.user("What time is it?"),
        Message.assistant("", tool_calls=[call], thinking="I should call the tool."),
        Message.tool("12:00", tool_call_id=call.id, tool_name="get_time"),
    ]
    response = await provider().chat(history, tools=[TIME], on_chunk=lambda c: None)

    assert response.content == "It is 12:00."
    sent = wire.last["messages"]
    assert "reasoning_content" not in sent[1]  # an earlier turn: not part of this exchange
    assert sent[3]["reasoning_content"] == "I should call the tool."
    assert sent[3]["tool_calls"][0]["id"] == "call_00_time"


@pytest.mark.parametrize(
    ("effort", "sent"), [(0.01, "low"), (0.3, "low"), (0.6, "high"), (1.0, "max"), (None, None)]
)
async def test_think_effort_maps_to_deepseek_levels(
    wire: Any, provider: Any, effort: float | None, sent: str | None
) -> None:
    wire.reply(wire.sse("deepseek_reasoning_text.sse"))
    await provider(think_effort=effort).chat([Message.user("Hi")], on_chunk=lambda c: None)
    assert wire.last.get("reasoning_effort") == sent
    assert "thinking" not in wire.last  # on by default: only switching it off is said


async def test_think_effort_zero_switches_thinking_off(wire: Any, provider: Any) -> None:
    # Chat Completions has no "none" effort: thinking is disabled by its own field.
    wire.reply(wire.sse("deepseek_reasoning_text.sse"))
    await provider(think_effort=0.0).chat([Message.user("Hi")], on_chunk=lambda c: None)
    assert wire.last["thinking"] == {"type": "disabled"}
    assert "reasoning_effort" not in wire.last
    wire.reply(wire.sse("deepseek_reasoning_text.sse"))
    await provider("deepseek-chat", think_effort=0.0).chat(
        [Message.user("Hi")], on_chunk=lambda c: None
    )
    assert "thinking" not in wire.last  # not a reasoning model: nothing to switch off


async def test_images_only_for_the_vision_model(wire: Any, provider: Any) -> None:
    png = ImagePart(data=b"img")
    with pytest.raises(UserError, match="does not accept images"):
        await provider().chat([Message.user("What?", png)])
    wire.reply(wire.sse("deepseek_reasoning_text.sse"))
    vision = provider("deepseek-v4-flash-vision-exp")
    await vision.chat([Message.user("What?", png)], on_chunk=lambda c: None)
    assert wire.last["messages"][0]["content"][1]["type"] == "image_url"


def test_capabilities() -> None:
    flash = DeepSeekProvider("k")
    assert flash.capabilities.context_window == 1_000_000
    assert flash.capabilities.supports_thinking and not flash.capabilities.supports_images
    assert DeepSeekProvider("k", "deepseek-v4-flash-vision-exp").capabilities.supports_images
    assert DeepSeekProvider("k", supports_images=True).capabilities.supports_images
    assert flash.base_url == "https://api.deepseek.com"


async def test_non_streaming_path_reads_reasoning_content(wire: Any, provider: Any) -> None:
    wire.reply(
        wire.body(
            {
                "id": "ds-8",
                "object": "chat.completion",
                "created": 1,
                "model": "deepseek-v4-flash",
                "choices": [
                    {
                        "index": 0,
                        "message": {
                            "role": "assistant",
                            "content": "Noon.",
                            "reasoning_content": "Check the clock.",
                        },
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 9, "completion_tokens": 5, "total_tokens": 14},
            }
        )
    )
    response = await provider().chat([Message.user("Time?")])
    assert (response.content, response.thinking) == ("Noon.", "Check the clock.")
    assert (response.input_tokens, response.output_tokens, response.stop_reason) == (
        9,
        5,
        "end_turn",
    )


async def test_reasoning_of_an_earlier_tool_calling_turn_is_always_sent_back(
    wire: Any, provider: Any
) -> None:
    # DeepSeek's Thinking Mode: a turn that made tool calls keeps its
    # reasoning_content in every later request, or the API answers 400.
    wire.reply(wire.sse("deepseek_reasoning_text.sse"))
    call = ToolCall(id="call_00_time", name="get_time", arguments={})
    history = [
        Message.user("q1"),
        Message.assistant("", tool_calls=[call], thinking="R1"),
        Message.tool("12:00", tool_call_id=call.id, tool_name="get_time"),
        Message.assistant("It is noon.", thinking="R2"),
        Message.user("q2"),
    ]
    await provider().chat(history, tools=[TIME], on_chunk=lambda c: None)

    sent = wire.last["messages"]
    assert sent[1]["reasoning_content"] == "R1"
    assert "reasoning_content" not in sent[3]  # no tool calls, before the latest question
