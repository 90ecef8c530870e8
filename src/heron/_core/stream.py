"""Streaming: the chunk shape handed to ``on_chunk`` and how it is delivered."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, TypeAlias, TypeVar

from .messages import ToolCall

__all__ = ["ChunkCallback", "StreamChunk", "emit"]

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True, slots=True)
class StreamChunk:
    """One piece of a live run, as passed to ``on_chunk``.

    A run produces, in order: one ``user`` chunk echoing the prompt; per model
    turn, ``assistant`` deltas (``thinking`` deltas first, then ``content``),
    one chunk per finished tool call (``tool_calls`` holding that one call),
    and a ``done`` chunk carrying no tool calls; then one ``tool`` chunk per
    tool result. When a structured answer is sent back for another try, the
    request to the model is echoed as a ``user`` chunk too. A worker agent's
    chunks (``agent.as_tool()``, ``agent.delegate()``) reach its parent's
    ``on_chunk`` in the same shape, with ``agent`` naming the worker.
    """

    role: Literal["user", "assistant", "tool"]
    """Who the chunk belongs to."""
    content: str = ""
    """Delta text for assistant chunks; the full text for user and tool chunks."""
    done: bool = False
    """True on the last chunk of a message."""
    tool_calls: tuple[ToolCall, ...] = ()
    """A single just-finished tool call, mid-stream."""
    tool_call_id: str | None = None
    """On ``tool`` chunks: the call answered."""
    tool_name: str | None = None
    """On ``tool`` chunks: the tool that ran."""
    thinking: str | None = None
    """A reasoning-text delta (never on a ``done`` chunk, never with ``content``)."""
    is_error: bool = False
    """On ``tool`` chunks: whether the tool failed."""
    agent: str | None = None
    """The worker agent that produced a forwarded chunk; ``None`` for the run's own agent."""


ChunkCallback: TypeAlias = Callable[[StreamChunk], Awaitable[None] | None]
"""A sync or async callable receiving each :class:`StreamChunk`."""


async def emit(callback: Callable[[T], Awaitable[None] | None] | None, value: T) -> None:
    """Deliver ``value`` (a chunk, or a hook's argument) to ``callback``.

    ``callback`` may be ``None`` (nothing happens), sync, or async (awaited).
    """
    if callback is None:
        return
    result = callback(value)
    if inspect.isawaitable(result):
        await result
