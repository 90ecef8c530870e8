"""The embedded model's worker protocol: length-prefixed JSON frames over a socket pair.

Every frame is a 4-byte big-endian length and that many bytes of UTF-8 JSON. The
parent sends ``{"op": "chat", "id", "messages", "tools", "stream"}`` and
``{"op": "cancel", "id"}``; the worker answers ``{"kind": "ready"}`` once its model
is loaded, then per request ``{"id", "kind": "chunk", "chunk"}`` frames and one
``{"id", "kind": "done", "response"}`` or ``{"id", "kind": "error", "error"}``.
"""

from __future__ import annotations

import asyncio
import json
import struct
from collections.abc import Mapping
from typing import Any

from .._core import ChatResponse, ProviderError, StreamChunk, ToolCall

__all__ = [
    "chunk_from",
    "chunk_to",
    "error_from",
    "error_to",
    "frame",
    "read_frame",
    "response_from",
    "response_to",
]

_HEADER = struct.Struct(">I")
MAX_FRAME = 64 * 1024 * 1024
"""The largest frame either side accepts (a whole conversation fits many times over)."""


def frame(message: Mapping[str, Any]) -> bytes:
    """``message`` encoded as one frame."""
    body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return _HEADER.pack(len(body)) + body


async def read_frame(reader: asyncio.StreamReader) -> dict[str, Any]:
    """The next frame's message; ``asyncio.IncompleteReadError`` at the end of the stream."""
    (size,) = _HEADER.unpack(await reader.readexactly(_HEADER.size))
    if size > MAX_FRAME:
        raise ValueError(f"frame of {size} bytes is over the {MAX_FRAME}-byte limit")
    message = json.loads(await reader.readexactly(size))
    if not isinstance(message, dict):
        raise ValueError("a frame must hold a JSON object")
    return message


def chunk_to(chunk: StreamChunk) -> dict[str, Any]:
    """The parts of an assistant chunk a model turn streams."""
    return {
        "content": chunk.content,
        "thinking": chunk.thinking,
        "tool_calls": [call.to_dict() for call in chunk.tool_calls],
        "done": chunk.done,
    }


def chunk_from(data: Mapping[str, Any]) -> StreamChunk:
    """The chunk :func:`chunk_to` encoded."""
    return StreamChunk(
        role="assistant",
        content=data["content"],
        thinking=data["thinking"],
        tool_calls=tuple(ToolCall.from_dict(c) for c in data["tool_calls"]),
        done=data["done"],
    )


def response_to(response: ChatResponse) -> dict[str, Any]:
    """A local model's response (it has no provider-specific thinking payload)."""
    return {
        "content": response.content,
        "input_tokens": response.input_tokens,
        "output_tokens": response.output_tokens,
        "tool_calls": [call.to_dict() for call in response.tool_calls],
        "thinking": response.thinking,
        "stop_reason": response.stop_reason,
    }


def response_from(data: Mapping[str, Any]) -> ChatResponse:
    """The response :func:`response_to` encoded."""
    return ChatResponse(
        content=data["content"],
        input_tokens=data["input_tokens"],
        output_tokens=data["output_tokens"],
        tool_calls=tuple(ToolCall.from_dict(c) for c in data["tool_calls"]),
        thinking=data["thinking"],
        stop_reason=data["stop_reason"],
    )


def error_to(error: ProviderError) -> dict[str, Any]:
    """A provider error's fields."""
    return {
        "message": error.message,
        "status": error.status,
        "code": error.code,
        "retryable": error.retryable,
        "provider": error.provider,
    }


def error_from(data: Mapping[str, Any]) -> ProviderError:
    """The error :func:`error_to` encoded."""
    return ProviderError(
        data["message"],
        status=data["status"],
        code=data["code"],
        retryable=data["retryable"],
        provider=data["provider"],
    )
