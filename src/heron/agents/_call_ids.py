"""Tool-call ids that are unique within a conversation."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Sequence
from dataclasses import replace

from .._core import ChunkCallback, StreamChunk, ToolCall

__all__ = ["CallIds"]


class CallIds:
    """Gives each tool call of a turn an id unused in the conversation.

    Some APIs send no ids, or repeat one; the k-th call gets the same id in the
    streamed chunk and in the history, so consumers can match the two.
    """

    def __init__(self, taken: set[str]) -> None:
        self._taken = taken
        self._assigned: list[str] = []
        self._streamed = 0
        self.streamed_any = False
        """Whether the provider sent any chunk this turn."""

    def _fix(self, k: int, call: ToolCall) -> ToolCall:
        if k == len(self._assigned):
            used = call.id in self._taken or call.id in self._assigned
            self._assigned.append(
                f"call_{uuid.uuid4().hex[:16]}" if not call.id or used else call.id
            )
        new_id = self._assigned[k]
        return call if call.id == new_id else replace(call, id=new_id)

    def fix_all(self, calls: Sequence[ToolCall]) -> tuple[ToolCall, ...]:
        """The turn's calls with their final ids."""
        return tuple(self._fix(k, c) for k, c in enumerate(calls))

    def wrap(self, on_chunk: ChunkCallback) -> ChunkCallback:
        """``on_chunk``, seeing streamed tool calls under their final ids."""

        def fixed(chunk: StreamChunk) -> Awaitable[None] | None:
            self.streamed_any = True
            if chunk.tool_calls:
                calls = tuple(
                    self._fix(self._streamed + i, c) for i, c in enumerate(chunk.tool_calls)
                )
                self._streamed += len(calls)
                chunk = replace(chunk, tool_calls=calls)
            return on_chunk(chunk)

        return fixed
