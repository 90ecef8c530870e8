"""The Chat Completions wire format, shared by the OpenAI and DeepSeek providers.

Requests are built as plain dicts (what goes over the wire is what the tests
read back); responses are read from the ``openai`` SDK's parsed objects.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .._core import (
    ChatResponse,
    FinishReason,
    ImagePart,
    Message,
    TextPart,
    ToolCall,
    ToolSchema,
    UserError,
)
from .._core.tokens import estimate_message_tokens, estimate_tokens
from ._calls import complete_arguments, parse_call
from ._faults import malformed, truncated
from ._retry import Tracker

__all__ = [
    "StreamAssembler",
    "cached_tokens",
    "estimated_usage",
    "finish_reason",
    "parse_calls",
    "to_wire_messages",
    "to_wire_tools",
]

_FINISH: dict[str, FinishReason] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "content_filter",
}


def finish_reason(raw: str | None, has_calls: bool) -> FinishReason:
    """Heron's stop reason for a Chat Completions ``finish_reason``."""
    if raw == "length":  # the output limit, even if calls were made before it
        return "max_tokens"
    if has_calls:  # some compatible servers say "stop" after a tool call
        return "tool_use"
    return _FINISH.get(raw or "", "other")


def parse_calls(raw: Sequence[tuple[str, str, str | None]], finish: str | None) -> list[ToolCall]:
    """Tool calls from ``(id, name, arguments)``; broken arguments give :class:`InvalidToolCall`.

    When the output limit ended the turn (``finish`` is ``length``), a call
    whose arguments are not a whole JSON object was cut off rather than got
    wrong: it is dropped, and the turn ends as ``max_tokens``.
    """
    return [
        parse_call(call_id, name, arguments)
        for call_id, name, arguments in raw
        if not _cut_off(arguments, finish)
    ]


def _cut_off(arguments: str | None, finish: str | None) -> bool:
    """Whether the output limit ended the turn before these arguments were whole."""
    return finish == "length" and not complete_arguments(arguments or "")


def to_wire_tools(tools: Sequence[ToolSchema]) -> list[dict[str, Any]]:
    """Heron tool schemas as Chat Completions ``function`` tools."""
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": t.to_dict()["input_schema"],
            },
        }
        for t in tools
    ]


def to_wire_messages(
    messages: Sequence[Message],
    *,
    provider: str,
    images: bool,
    replay_reasoning: bool = False,
) -> list[dict[str, Any]]:
    """Heron messages as Chat Completions messages.

    ``replay_reasoning`` sends an assistant turn's ``thinking`` back as
    ``reasoning_content``: always for a turn that made tool calls (DeepSeek
    rejects a request that drops it), else from the latest user message on
    (before that DeepSeek ignores it). Images in tool results and system
    messages, which cannot hold them, follow as a user message; a failed tool
    result's text starts with ``Error:``.
    """
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    out: list[dict[str, Any]] = []
    pending_images: list[dict[str, Any]] = []
    for i, m in enumerate(messages):
        if m.role != "tool" and pending_images:
            out.append({"role": "user", "content": pending_images})
            pending_images = []
        if m.role == "system":
            out.append({"role": "system", "content": m.text})
            if m.images:  # a system message holds text only: its images follow from the user
                _require_images(provider, images)
                out.append(
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "Images attached to the system message:"},
                            *(_image(p) for p in m.images),
                        ],
                    }
                )
        elif m.role == "user":
            out.append({"role": "user", "content": _user_content(m, provider, images)})
        elif m.role == "assistant":
            # "" rather than null: llama.cpp's server (and others) reject a null content.
            entry: dict[str, Any] = {"role": "assistant", "content": m.text}
            if m.tool_calls:
                entry["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                    }
                    for c in m.tool_calls
                ]
            if replay_reasoning and m.thinking and (m.tool_calls or i > last_user):
                entry["reasoning_content"] = m.thinking
            out.append(entry)
        else:
            text = m.text or ("(no output)" if not m.images else "(see the images below)")
            if m.is_error:  # a tool message has no error flag of its own
                text = f"Error: {text}"
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": text})
            if m.images:
                _require_images(provider, images)
                pending_images.append(
                    {"type": "text", "text": f"Images returned by tool {m.tool_name!r}:"}
                )
                pending_images += [_image(p) for p in m.images]
    if pending_images:
        out.append({"role": "user", "content": pending_images})
    return out


def _user_content(m: Message, provider: str, images: bool) -> str | list[dict[str, Any]]:
    if isinstance(m.content, str):
        return m.content
    if m.images:
        _require_images(provider, images)
    return [
        {"type": "text", "text": p.text} if isinstance(p, TextPart) else _image(p)
        for p in m.content
    ]


def _image(part: ImagePart) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": part.data_url}}


def _require_images(provider: str, images: bool) -> None:
    if not images:
        raise UserError(
            f"{provider}: this model does not accept images; describe them to text first "
            "(an agent does, given an image-capable provider) or pass supports_images=True"
        )


def estimated_usage(
    messages: Sequence[Message], tools: Sequence[ToolSchema], answer: Message
) -> tuple[int, int]:
    """Input and output token estimates, for a server that reports no usage.

    Better than claiming 0: compaction and budgets still see the real size.
    """
    prompt = estimate_message_tokens(messages) + sum(
        estimate_tokens(json.dumps(t.to_dict())) for t in tools
    )
    return prompt, estimate_message_tokens((answer,))


def cached_tokens(usage: Any) -> int | None:
    """Prompt tokens read from the cache: OpenAI's ``prompt_tokens_details``, DeepSeek's hits."""
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    if cached is None:
        cached = getattr(usage, "prompt_cache_hit_tokens", None)
    return cached if isinstance(cached, int) and not isinstance(cached, bool) else None


@dataclass
class _PendingCall:
    index: int
    id: str
    name: str = ""
    arguments: str = ""


@dataclass
class StreamAssembler:
    """Builds one turn from Chat Completions stream chunks and streams it on.

    Tool-call arguments arrive a fragment at a time, tagged with the call's
    ``index`` and with no end marker; fragments of parallel calls may
    interleave. A call is emitted early when another call starts and its
    arguments already form a whole JSON object; every other call when the
    stream ends.
    """

    provider: str
    out: Tracker
    text: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    finish: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    request_id: str | None = None
    """The request's id from the response headers, set by the caller."""
    response_id: str | None = None
    _pending: dict[int, _PendingCall] = field(default_factory=dict)
    _emitted: dict[int, str] = field(default_factory=dict)  # index -> id of its emitted call

    async def feed(self, chunk: Any) -> None:
        """Take one ``ChatCompletionChunk``."""
        self.response_id = self.response_id or getattr(chunk, "id", None) or None
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.input_tokens = usage.prompt_tokens
            self.output_tokens = usage.completion_tokens
            self.cached_tokens = cached_tokens(usage)
        for choice in chunk.choices or ():
            if choice.index != 0:
                continue
            delta = choice.delta
            reasoning = getattr(delta, "reasoning_content", None)
            if reasoning:
                self.thinking.append(reasoning)
                await self.out.think(reasoning)
            if delta.content:
                self.text.append(delta.content)
                await self.out.text(delta.content)
            for piece in delta.tool_calls or ():
                await self._call_delta(piece)
            if choice.finish_reason:
                self.finish = choice.finish_reason

    async def _call_delta(self, piece: Any) -> None:
        index, call_id = piece.index, piece.id or ""
        function = piece.function
        name = (function.name or "") if function is not None else ""
        arguments = (function.arguments or "") if function is not None else ""
        pending = self._pending.get(index)
        if pending is not None and call_id and pending.id and call_id != pending.id:
            # Servers that number every call 0 tell calls apart by id alone.
            await self._emit(self._pending.pop(index))
            pending = None
        if pending is None:
            emitted = self._emitted.get(index)
            if emitted is not None and call_id in ("", emitted):
                if name or arguments:
                    raise malformed(
                        self.provider, f"tool call {index} went on after its arguments were whole"
                    )
                return
            await self._emit_whole()
            pending = self._pending[index] = _PendingCall(index=index, id=call_id)
        pending.id = pending.id or call_id
        pending.name += name
        pending.arguments += arguments

    async def _emit_whole(self) -> None:
        """A new call starts: emit the pending ones whose arguments are already whole."""
        for index, pending in list(self._pending.items()):
            if pending.name and complete_arguments(pending.arguments):
                await self._emit(self._pending.pop(index))

    async def _emit(self, pending: _PendingCall) -> None:
        if not pending.name:
            raise malformed(self.provider, f"tool call {pending.index} came without a name")
        if _cut_off(pending.arguments, self.finish):
            return  # the turn ends as max_tokens, without half a call
        call = parse_call(pending.id, pending.name, pending.arguments)
        self._emitted[pending.index] = pending.id
        self.calls.append(call)
        await self.out.call(call)

    async def end(self, messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ChatResponse:
        """The stream is over: close the open calls, check it finished, build the response."""
        if self.finish is None:
            raise truncated(self.provider, "no finish_reason was sent")
        for index in sorted(self._pending):
            await self._emit(self._pending.pop(index))
        await self.out.done()
        text, thinking = "".join(self.text), "".join(self.thinking)
        input_tokens, output_tokens = self.input_tokens, self.output_tokens
        if input_tokens is None or output_tokens is None:
            answer = Message.assistant(text, tool_calls=self.calls, thinking=thinking or None)
            input_tokens, output_tokens = estimated_usage(messages, tools, answer)
        return ChatResponse(
            content=text,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            tool_calls=tuple(self.calls),
            thinking=thinking or None,
            stop_reason=finish_reason(self.finish, bool(self.calls)),
            finish_reason=self.finish,
            request_id=self.request_id,
            response_id=self.response_id,
            cached_input_tokens=self.cached_tokens,
        )
