"""Tool-call ids that are unique within a conversation."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Sequence
from dataclasses import replace

from .._core import ChunkCallback, StreamChunk, ToolCall

__all__ = ["CallIds"]


class CallIds:
    """Gives each tool call of a turn an id unused in the conversation.

    Some APIs send no ids, or repeat one. A call keeps its provider id when
    that id is new; otherwise it gets a fresh one. The n-th call streamed with
    a given provider id (the empty one included) gets the same final id as the
    n-th call with that id in the finished turn, so the streamed chunk and the
    history always agree, whatever order the calls are streamed in.
    """

    def __init__(self, taken: set[str]) -> None:
        self._taken = taken
        self._final: dict[tuple[str, int], str] = {}
        self.streamed_any = False
        """Whether the provider sent any chunk this turn."""

    def _fix(self, call: ToolCall, seen: dict[str, int]) -> ToolCall:
        n = seen.get(call.id, 0)
        seen[call.id] = n + 1
        key = (call.id, n)
        final = self._final.get(key)
        if final is None:
            fresh = n == 0 and call.id and call.id not in self._taken
            final = call.id if fresh else f"call_{uuid.uuid4().hex[:16]}"
            self._final[key] = final
        return call if call.id == final else replace(call, id=final)

    def fix_all(self, calls: Sequence[ToolCall]) -> tuple[ToolCall, ...]:
        """The turn's calls with their final ids."""
        seen: dict[str, int] = {}
        return tuple(self._fix(c, seen) for c in calls)

    def wrap(self, on_chunk: ChunkCallback) -> ChunkCallback:
        """``on_chunk``, seeing streamed tool calls under their final ids."""
        seen: dict[str, int] = {}

        def fixed(chunk: StreamChunk) -> Awaitable[None] | None:
            self.streamed_any = True
            if chunk.tool_calls:
                calls = tuple(self._fix(c, seen) for c in chunk.tool_calls)
                chunk = replace(chunk, tool_calls=calls)
            return on_chunk(chunk)

        return fixed
