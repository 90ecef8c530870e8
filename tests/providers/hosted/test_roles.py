"""Main and image roles over real HTTP: DeepSeek drives, Ollama (llava) describes."""

from __future__ import annotations

from typing import Any

from heron import ImagePart, SimpleAgent, StreamChunk, tool
from heron.providers import DeepSeekProvider, OllamaProvider, RetryPolicy

PNG = ImagePart(data=b"\x89PNG clock face", media_type="image/png")


@tool
def get_time() -> list[object]:
    """A photo of the wall clock."""
    return ["Clock photo:", PNG]


async def test_a_tool_image_is_described_by_the_image_provider(wire: Any, closing: Any) -> None:
    fast = RetryPolicy(max_retries=0, timeout=2.0)
    main = closing(DeepSeekProvider("sk-ds", base_url=wire.base_url, retry=fast))
    image = closing(OllamaProvider("llava", wire.base_url, retry=fast))
    description = {
        "model": "llava",
        "created_at": "2025-06-01T10:00:01.2Z",
        "message": {"role": "assistant", "content": "A clock showing noon."},
        "done": True,
        "done_reason": "stop",
        "prompt_eval_count": 600,
        "eval_count": 6,
    }
    wire.reply(
        wire.sse("deepseek_reasoning_tool.sse"),
        wire.body(description),
        wire.sse("deepseek_reasoning_text.sse"),
    )
    agent = SimpleAgent(provider=[("main", main), ("image", image)], tools=[get_time])
    chunks: list[StreamChunk] = []
    result = await agent.run("What time is it?", on_chunk=chunks.append)

    assert result.reply == "It is 12:00."
    _, describe, second = wire.requests
    assert describe.path == "/api/chat"
    assert describe.json["messages"][-1]["images"] == [PNG.base64]
    tool_message = second.json["messages"][-1]
    assert tool_message["role"] == "tool"
    assert tool_message["content"].startswith("Clock photo:")
    assert "A clock showing noon." in tool_message["content"]
    assert all(
        m["role"] != "user" or isinstance(m["content"], str) for m in second.json["messages"]
    )
    # This turn's reasoning goes back with the tool result, as DeepSeek requires.
    assert second.json["messages"][-2]["reasoning_content"] == (
        "The user wants the time. I should call the tool."
    )
    # Every request's real usage, the description's included.
    assert (result.input_tokens, result.output_tokens) == (120 + 600 + 200, 30 + 6 + 12)
    assert [c.role for c in chunks].count("tool") == 1


async def test_an_image_that_cannot_be_described_becomes_a_note_not_a_failed_run(
    wire: Any, closing: Any
) -> None:
    fast = RetryPolicy(max_retries=0, timeout=2.0)
    main = closing(DeepSeekProvider("sk-ds", base_url=wire.base_url, retry=fast))
    image = closing(OllamaProvider("llava", wire.base_url, retry=fast))
    wire.reply(
        wire.sse("deepseek_reasoning_tool.sse"),
        wire.body({"error": "model 'llava' not found, try pulling it first"}, status=404),
        wire.sse("deepseek_reasoning_text.sse"),
    )
    agent = SimpleAgent(provider=[("main", main), ("image", image)], tools=[get_time])
    result = await agent.run("What time is it?", on_chunk=lambda c: None)

    assert result.reply == "It is 12:00."
    assert len(wire.requests) == 3
    tool_message = wire.requests[2].json["messages"][-1]
    assert tool_message["content"].startswith("Clock photo:")
    assert "could not be described" in tool_message["content"]
    assert "not found" in tool_message["content"]
    assert not result.tool_calls[0].is_error  # the tool itself worked
