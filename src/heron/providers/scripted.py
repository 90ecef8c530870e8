"""A deterministic provider that plays back a script: for tests, examples and demos."""

from __future__ import annotations

import asyncio
import inspect
import itertools
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from .._core import (
    Capabilities,
    ChatResponse,
    ChunkCallback,
    FinishReason,
    Message,
    ScriptExhaustedError,
    StreamChunk,
    ToolCall,
    ToolSchema,
    emit,
)
from .._core.tokens import estimate_message_tokens, estimate_tokens
from ._base import Provider

__all__ = ["Reply", "ScriptedProvider", "ScriptedRequest", "Step", "call"]


def call(name: str, arguments: dict[str, Any] | None = None, /, **kwargs: Any) -> ToolCall:
    """Script one tool call: ``call("add", a=1, b=2)`` or ``call("add", {"a": 1})``.

    The provider gives it an id when it is played: ``call_N``, numbering on from
    the highest such id it has made or seen in the conversation.
    """
    return ToolCall(id="", name=name, arguments={**(arguments or {}), **kwargs})


@dataclass(frozen=True, kw_only=True, slots=True)
class Reply:
    """One scripted model turn spelled out in full."""

    text: str = ""
    """The assistant's text."""
    tool_calls: Sequence[ToolCall] = ()
    """Tool calls made this turn (build them with :func:`call`)."""
    thinking: str | None = None
    """Reasoning text, streamed before the answer."""
    provider_thinking: Sequence[Any] | None = None
    """Opaque provider data (e.g. signed thinking blocks) put on the response."""
    delay: float = 0.0
    """Seconds to wait before answering, like a slow model (cancellable)."""
    chunk_delay: float = 0.0
    """Seconds to wait before each streamed piece of text after the first (cancellable)."""
    stop_reason: FinishReason | None = None
    """Why the turn ended, as a provider says it (``max_tokens``: the answer was cut
    off); by default ``tool_use`` with tool calls, else ``end_turn``."""


Step: TypeAlias = (
    str
    | ToolCall
    | Sequence[ToolCall]
    | Reply
    | BaseException
    | type[BaseException]
    | Callable[[Sequence[Message]], "Step | Awaitable[Step]"]
)
"""What a script holds per turn; see :class:`ScriptedProvider`."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ScriptedRequest:
    """What one ``chat`` call received."""

    messages: tuple[Message, ...]
    """The full history sent."""
    tools: tuple[ToolSchema, ...]
    """The tools offered."""

    @property
    def tool_names(self) -> list[str]:
        """Names of the tools offered."""
        return [t.name for t in self.tools]


_ID = re.compile(r"call_(\d+)")
_PIECES = re.compile(r"\S+\s*|\s+")


class ScriptedProvider(Provider):
    """Plays a fixed script of model turns, streaming like a real provider.

    Each ``chat`` call consumes the next step:

    - a ``str``: the assistant's text for that turn;
    - ``call(name, **arguments)`` or a list of them: a turn making those calls;
    - ``Reply(text=..., tool_calls=[...], thinking=..., delay=...)``: all of it;
    - an exception instance (or class): raised by ``chat``;
    - a callable taking the messages and returning (or awaiting to) a step.

    With ``by_history=True`` the step is chosen by the number of assistant
    messages already in the conversation sent, not by how many calls this
    object has answered: one instance then serves any number of
    conversations, and a conversation resumed from saved state (after a
    restart, in another process) continues its script where it was.

    Every request is recorded in :attr:`requests`; token counts are estimated
    from the text. Running out of steps raises :class:`ScriptExhaustedError`::

        provider = ScriptedProvider([call("get-current-time"), "It is noon."])
    """

    name = "scripted"

    def __init__(
        self,
        steps: Sequence[Step],
        *,
        capabilities: Capabilities | None = None,
        model: str | None = None,
        by_history: bool = False,
    ) -> None:
        self.model = model
        """The model name to report (none by default)."""
        self._steps = list(steps)
        self._next = 0
        self._by_history = by_history
        self._last_id = 0
        self._capabilities = capabilities or Capabilities(
            supports_tools=True, supports_images=True, supports_thinking=True
        )
        self.requests: list[ScriptedRequest] = []
        """Every request received, oldest first."""

    @property
    def capabilities(self) -> Capabilities:
        """The capabilities given at construction (tools, images, thinking by default)."""
        return self._capabilities

    @property
    def remaining(self) -> int:
        """Steps not yet played."""
        return len(self._steps) - self._next

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] | None = None,
        on_chunk: ChunkCallback | None = None,
    ) -> ChatResponse:
        """Play the next step of the script."""
        self.requests.append(ScriptedRequest(messages=tuple(messages), tools=tuple(tools or ())))
        if self._by_history:
            self._next = sum(1 for m in messages if m.role == "assistant")
        if self._next >= len(self._steps):
            asked = self._next + 1 if self._by_history else len(self.requests)
            raise ScriptExhaustedError(
                f"ScriptedProvider ran out of steps: the script has {len(self._steps)}, "
                f"and request {asked} asked for another"
            )
        step: Any = self._steps[self._next]
        self._next += 1
        reply = await self._resolve(step, messages)
        if reply.delay:
            await asyncio.sleep(reply.delay)
        calls = self._number(reply.tool_calls, messages)
        if on_chunk is not None:
            await self._stream(reply, calls, on_chunk)
        input_tokens = estimate_message_tokens(messages) + sum(
            estimate_tokens(t.name) + estimate_tokens(t.description) + 8 for t in tools or ()
        )
        output_tokens = (
            estimate_tokens(reply.text)
            + estimate_tokens(reply.thinking or "")
            + sum(estimate_tokens(c.name) + estimate_tokens(str(c.arguments)) for c in calls)
        )
        return ChatResponse(
            content=reply.text,
            input_tokens=input_tokens,
            output_tokens=max(output_tokens, 1),
            tool_calls=calls,
            thinking=reply.thinking,
            provider_thinking=(
                tuple(reply.provider_thinking) if reply.provider_thinking is not None else None
            ),
            stop_reason=reply.stop_reason or ("tool_use" if calls else "end_turn"),
        )

    def _number(
        self, calls: Sequence[ToolCall], messages: Sequence[Message]
    ) -> tuple[ToolCall, ...]:
        """Give id-less calls ``call_N`` ids, numbering on from the highest one this
        provider made or was shown: unique after compaction shrinks the history,
        and after a saved conversation is resumed with a new provider."""
        if all(c.id for c in calls):
            return tuple(calls)
        shown = itertools.chain(
            (c.id for m in messages for c in m.tool_calls), (c.id for c in calls)
        )
        made = max(self._last_id, 0, *(int(m[1]) for i in shown if (m := _ID.fullmatch(i))))
        self._last_id = made + len(calls)
        return tuple(
            c if c.id else ToolCall(id=f"call_{made + i}", name=c.name, arguments=c.arguments)
            for i, c in enumerate(calls, start=1)
        )

    async def _resolve(self, step: Any, messages: Sequence[Message]) -> Reply:
        # Callables may return another callable; keep unwrapping to a value.
        while callable(step) and not isinstance(step, type):
            step = step(messages)
            if inspect.isawaitable(step):
                step = await step
        if isinstance(step, type) and issubclass(step, BaseException):
            raise step()
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, Reply):
            return step
        if isinstance(step, str):
            return Reply(text=step)
        if isinstance(step, ToolCall):
            return Reply(tool_calls=(step,))
        if isinstance(step, Sequence) and all(isinstance(c, ToolCall) for c in step):
            return Reply(tool_calls=tuple(step))
        raise TypeError(f"not a script step: {step!r}")

    @staticmethod
    async def _stream(reply: Reply, calls: Sequence[ToolCall], on_chunk: ChunkCallback) -> None:
        for piece in _PIECES.findall(reply.thinking or ""):
            await emit(on_chunk, StreamChunk(role="assistant", thinking=piece))
        for n, piece in enumerate(_PIECES.findall(reply.text)):
            if n and reply.chunk_delay:
                await asyncio.sleep(reply.chunk_delay)
            await emit(on_chunk, StreamChunk(role="assistant", content=piece))
        for c in calls:
            await emit(on_chunk, StreamChunk(role="assistant", tool_calls=(c,)))
        await emit(on_chunk, StreamChunk(role="assistant", done=True))
