"""Stream chunks and delivering them to sync or async callbacks."""

import asyncio

import pytest

from heron import StreamChunk, ToolCall
from heron._core import emit


def test_chunk_defaults() -> None:
    chunk = StreamChunk(role="assistant")
    assert chunk.content == ""
    assert chunk.done is False
    assert chunk.tool_calls == ()
    assert chunk.tool_call_id is None
    assert chunk.tool_name is None
    assert chunk.thinking is None
    assert chunk.is_error is False


def test_chunks_compare_by_value() -> None:
    call = ToolCall(id="c1", name="add", arguments={"a": 1})
    assert StreamChunk(role="assistant", tool_calls=(call,)) == StreamChunk(
        role="assistant", tool_calls=(ToolCall(id="c1", name="add", arguments={"a": 1}),)
    )


async def test_emit_without_a_callback_does_nothing() -> None:
    await emit(None, StreamChunk(role="user", content="hi", done=True))


async def test_emit_calls_a_sync_callback() -> None:
    received: list[StreamChunk] = []
    chunk = StreamChunk(role="assistant", content="Hel")
    await emit(received.append, chunk)
    assert received == [chunk]


async def test_emit_awaits_an_async_callback_to_completion() -> None:
    received: list[StreamChunk] = []

    async def on_chunk(chunk: StreamChunk) -> None:
        # Only appended if emit awaits the coroutine past its first suspension.
        await asyncio.sleep(0)
        received.append(chunk)

    chunk = StreamChunk(role="tool", content="5", done=True, tool_call_id="c1", tool_name="add")
    await emit(on_chunk, chunk)
    assert received == [chunk]


async def test_emit_preserves_order_across_calls() -> None:
    received: list[str] = []

    async def on_chunk(chunk: StreamChunk) -> None:
        await asyncio.sleep(0)
        received.append(chunk.content)

    for piece in ["a", "b", "c"]:
        await emit(on_chunk, StreamChunk(role="assistant", content=piece))
    assert received == ["a", "b", "c"]


async def test_emit_propagates_callback_errors() -> None:
    def on_chunk(chunk: StreamChunk) -> None:
        raise RuntimeError("consumer broke")

    with pytest.raises(RuntimeError, match="consumer broke"):
        await emit(on_chunk, StreamChunk(role="assistant"))


async def test_emit_propagates_async_callback_errors() -> None:
    async def on_chunk(chunk: StreamChunk) -> None:
        raise RuntimeError("async consumer broke")

    with pytest.raises(RuntimeError, match="async consumer broke"):
        await emit(on_chunk, StreamChunk(role="assistant"))
