"""Anthropic's Messages API, with native thinking and signed thinking blocks."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import anthropic
import httpx2

from .._core import (
    Capabilities,
    ChatResponse,
    FinishReason,
    ImagePart,
    Message,
    Part,
    TextPart,
    ToolCall,
    ToolSchema,
    UserError,
)
from ._base import think_budget
from ._calls import parse_call
from ._checks import require_effort, require_key
from ._faults import classify_sdk_error, malformed, truncated
from ._hosted import HostedProvider, by_prefix, response_header, split_query
from ._retry import Fault, RetryPolicy, Tracker, idle_limit

__all__ = ["AnthropicProvider"]

_CONTEXT_WINDOWS: dict[str, int] = {
    "claude-2": 100_000,
    "claude-instant": 100_000,
}
_DEFAULT_CONTEXT_WINDOW = 200_000
# Most output tokens (answer and thinking together) a request may ask for;
# longest prefix wins. Newer models than the table get the current models' cap.
_OUTPUT_LIMITS: dict[str, int] = {
    "claude-2": 4096,
    "claude-instant": 4096,
    "claude-3-": 4096,
    "claude-3-5-": 8192,
    "claude-3-7-sonnet": 64_000,
    "claude-sonnet-4": 64_000,
    "claude-opus-4": 32_000,
    "claude-opus-4-5": 64_000,
    "claude-haiku-4": 64_000,
}
_DEFAULT_OUTPUT_LIMIT = 64_000
# The API's floor for a thinking budget.
_MIN_BUDGET = 1024

_STOP: dict[str, FinishReason] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "refusal": "content_filter",
}


class AnthropicProvider(HostedProvider[anthropic.AsyncAnthropic]):
    """Claude through the Messages API.

    ``think_effort`` (0..1) is scaled into a thinking ``budget_tokens``
    between 1,024 and ``max_tokens``; the ``max_tokens`` sent is raised by the
    budget, so the answer keeps ``max_tokens`` of room. The total never goes
    over the model's output limit (64,000 for current models): when answer
    and budget do not both fit, they shrink in proportion. Thinking streams
    as thinking chunks, and the signed thinking blocks land on
    ``ChatResponse.provider_thinking``, to be replayed unchanged with the next
    request (agents do this for you)::

        provider = AnthropicProvider(os.environ["ANTHROPIC_API_KEY"], think_effort=0.7)
    """

    name = "anthropic"

    def __init__(
        self,
        api_key: str,
        model: str = "claude-sonnet-5",
        *,
        max_tokens: int = 4096,
        supports_tools: bool = True,
        supports_images: bool = True,
        context_window: int | None = None,
        think_effort: float | None = None,
        base_url: str | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise UserError(f"anthropic: max_tokens must be a positive integer, not {max_tokens!r}")
        budget = think_budget(
            require_effort(self.name, think_effort),
            minimum=_MIN_BUDGET,
            maximum=max(_MIN_BUDGET, max_tokens),
        )
        limit = by_prefix(model, _OUTPUT_LIMITS, _DEFAULT_OUTPUT_LIMIT)
        if budget is not None and max_tokens + budget > limit:
            # Both shares shrink alike; the budget keeps the API's floor.
            budget = max(_MIN_BUDGET, budget * limit // (max_tokens + budget))
        capabilities = Capabilities(
            supports_tools=supports_tools,
            supports_images=supports_images,
            supports_thinking=budget is not None,
            context_window=context_window
            or by_prefix(model, _CONTEXT_WINDOWS, _DEFAULT_CONTEXT_WINDOW),
        )
        super().__init__(
            model=model, think_effort=think_effort, retry=retry, capabilities=capabilities
        )
        self.max_tokens = max_tokens
        """Output tokens the answer may take (thinking comes on top)."""
        self.base_url = base_url
        """The API endpoint (``None``: the SDK's default)."""
        self._api_key = require_key(self.name, api_key)
        self._budget = budget
        self._total = min(max_tokens + (budget or 0), limit)

    @property
    def thinking_budget(self) -> int | None:
        """The ``budget_tokens`` sent, or ``None`` when thinking is off (no effort, or 0)."""
        return self._budget

    @property
    def output_tokens(self) -> int:
        """The ``max_tokens`` sent: answer and thinking, within the model's output limit."""
        return self._total

    def _connect(self) -> anthropic.AsyncAnthropic:
        # The read timeout bounds a whole non-streamed response; a stream is
        # watched by idle_limit() instead, event by event.
        timeout = httpx2.Timeout(self.retry.response_timeout, connect=self.retry.timeout)
        base_url, query = split_query(self.base_url)
        return anthropic.AsyncAnthropic(
            api_key=self._api_key,
            base_url=base_url,
            default_query=query,
            max_retries=0,
            timeout=timeout,
        )

    async def _disconnect(self, client: anthropic.AsyncAnthropic) -> None:
        await client.close()

    def request(
        self, messages: Sequence[Message], tools: Sequence[ToolSchema], *, stream: bool
    ) -> dict[str, Any]:
        """The request body for one call."""
        leading = _leading_system(messages)
        system = "\n\n".join(m.text for m in messages[:leading] if m.text)
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self._total,
            "messages": to_wire_messages(messages, images=self._capabilities.supports_images),
        }
        if system:
            body["system"] = system
        if tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.input_schema}
                for t in tools
            ]
        if self._budget is not None:
            body["thinking"] = {"type": "enabled", "budget_tokens": self._budget}
        if stream:
            body["stream"] = True
        return body

    async def _attempt(
        self,
        body: dict[str, Any],
        messages: Sequence[Message],
        tools: Sequence[ToolSchema],
        out: Tracker,
    ) -> ChatResponse:
        client = self._client()
        if not out.active:
            message = await client.messages.create(**body)
            data = message.model_dump(mode="json")
            return _from_message(self.name, data, getattr(message, "_request_id", None))
        turn = _Turn(provider=self.name, out=out)
        async with idle_limit(self.retry.timeout, provider=self.name) as idle:
            stream = await client.messages.create(**body)
            turn.request_id = response_header(stream, "request-id")
            async with stream:
                async for event in stream:
                    if event.type == "ping":
                        continue  # keeps the socket busy, but is no progress
                    idle.pause()
                    await turn.feed(event.model_dump(mode="json"))
                    idle.resume()
        return await turn.end()

    def _classify(self, exc: Exception) -> Fault | None:
        return classify_sdk_error(exc, provider=self.name, sdk=anthropic)


def _leading_system(messages: Sequence[Message]) -> int:
    """How many system messages open the conversation (they become ``system``)."""
    return next((i for i, m in enumerate(messages) if m.role != "system"), len(messages))


def to_wire_messages(messages: Sequence[Message], *, images: bool) -> list[dict[str, Any]]:
    """Heron messages as Messages API turns.

    The opening system messages go to ``system`` (their images, which it
    cannot hold, open the first user turn); a system message later on stays
    where it is, as a marked user text. Tool results become ``tool_result``
    blocks of a user turn, first in it as the API requires; consecutive turns
    of one role are merged, as the API wants them alternating.
    """
    out: list[dict[str, Any]] = []
    leading = _leading_system(messages)
    for i, m in enumerate(messages):
        if m.role == "system":
            blocks = [_block(p, images) for p in m.images]
            if i >= leading and m.text:
                blocks.insert(0, {"type": "text", "text": f"(system message) {m.text}"})
            role = "user"
        elif m.role == "assistant":
            role, blocks = "assistant", _assistant_blocks(m)
        elif m.role == "user":
            role, blocks = "user", [_block(p, images) for p in m.parts]
        else:
            result: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": m.tool_call_id,
                "content": [_block(p, images) for p in m.parts]
                or [{"type": "text", "text": "(no output)"}],
            }
            if m.is_error:
                result["is_error"] = True
            role, blocks = "user", [result]
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            merged = out[-1]["content"] + blocks
            out[-1]["content"] = sorted(merged, key=lambda b: b["type"] != "tool_result")
        else:
            out.append({"role": role, "content": blocks})
    return out


def _assistant_blocks(m: Message) -> list[dict[str, Any]]:
    # Signed thinking blocks go back first and byte for byte, or the API refuses the turn.
    blocks: list[dict[str, Any]] = [dict(b) for b in m.provider_thinking or ()]
    if m.text:
        blocks.append({"type": "text", "text": m.text})
    blocks += [
        {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in m.tool_calls
    ]
    return blocks


def _block(part: Part, images: bool) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if not images:
        raise UserError(
            "anthropic: supports_images is False; describe images to text first "
            "(an agent does, given an image-capable provider)"
        )
    return {"type": "image", "source": _image_source(part)}


def _image_source(part: ImagePart) -> dict[str, Any]:
    if part.url is not None:
        return {"type": "url", "url": part.url}
    return {"type": "base64", "media_type": part.media_type, "data": part.base64}


def _from_message(
    provider: str, data: dict[str, Any], request_id: str | None = None
) -> ChatResponse:
    """A non-streamed ``Message`` response, as plain data."""
    text: list[str] = []
    thinking: list[str] = []
    signed: list[dict[str, Any]] = []
    calls: list[ToolCall] = []
    for block in data.get("content") or ():
        kind = block.get("type")
        if kind == "text":
            text.append(block["text"])
        elif kind == "thinking":
            thinking.append(block["thinking"])
            signed.append(_signed(provider, block))
        elif kind == "redacted_thinking":
            signed.append(_signed(provider, block))
        elif kind == "tool_use":
            calls.append(ToolCall(id=block["id"], name=block["name"], arguments=block["input"]))
    usage = data.get("usage") or {}
    return ChatResponse(
        content="".join(text),
        input_tokens=_input_tokens(usage),
        output_tokens=int(usage.get("output_tokens") or 0),
        tool_calls=tuple(calls),
        thinking="".join(thinking) or None,
        provider_thinking=tuple(signed) or None,
        stop_reason=_stop_reason(data.get("stop_reason"), bool(calls)),
        finish_reason=data.get("stop_reason"),
        request_id=request_id,
        response_id=data.get("id") or None,
        **_cache_counts(usage),
    )


def _cache_counts(usage: dict[str, Any]) -> dict[str, int | None]:
    """The prompt-cache counts of a ``usage`` object, as :class:`ChatResponse` fields."""
    read, written = usage.get("cache_read_input_tokens"), usage.get("cache_creation_input_tokens")
    return {
        "cached_input_tokens": read if isinstance(read, int) else None,
        "cache_write_tokens": written if isinstance(written, int) else None,
    }


def _stop_reason(raw: str | None, has_calls: bool) -> FinishReason:
    if raw == "max_tokens":  # the output limit, even if calls were made before it
        return "max_tokens"
    return "tool_use" if has_calls else _STOP.get(raw or "", "other")


def _signed(provider: str, block: dict[str, Any]) -> dict[str, Any]:
    """A thinking block as the API wants it back: only the fields it sent."""
    if block["type"] == "redacted_thinking":
        return {"type": "redacted_thinking", "data": block["data"]}
    signature = block.get("signature")
    if not signature:  # replayed unsigned, the next request would be refused
        raise malformed(provider, "a thinking block came without its signature")
    return {"type": "thinking", "thinking": block.get("thinking", ""), "signature": signature}


def _input_tokens(usage: dict[str, Any]) -> int:
    # Cached prompt tokens are read too; leaving them out would hide most of a long prompt.
    return sum(
        int(usage.get(k) or 0)
        for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )


@dataclass
class _Turn:
    """Builds one turn from stream events and streams it on.

    Each content block starts, grows by deltas, and stops
    (``content_block_stop``): a tool call is emitted the moment its block stops.
    """

    provider: str
    out: Tracker
    blocks: dict[int, dict[str, Any]] = field(default_factory=dict)
    text: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    signed: list[dict[str, Any]] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)
    stop_reason: str | None = None
    started: bool = False
    stopped: bool = False
    request_id: str | None = None
    """The request's id from the response headers, set by the caller."""
    response_id: str | None = None

    async def feed(self, event: dict[str, Any]) -> None:
        """Take one stream event (as plain data)."""
        kind = event.get("type")
        if kind == "message_start":
            self.started = True
            self.response_id = event["message"].get("id") or None
            self.usage.update(event["message"].get("usage") or {})
        elif kind == "content_block_start":
            block = dict(event["content_block"])
            if block.get("type") == "tool_use":
                block["partial_json"] = ""
            self.blocks[event["index"]] = block
        elif kind == "content_block_delta":
            await self._delta(self._open(event["index"]), event["delta"])
        elif kind == "content_block_stop":
            await self._stop(self.blocks.pop(event["index"], None), event["index"])
        elif kind == "message_delta":
            self.stop_reason = event["delta"].get("stop_reason") or self.stop_reason
            self.usage.update(
                {k: v for k, v in (event.get("usage") or {}).items() if v is not None}
            )
        elif kind == "message_stop":
            self.stopped = True

    def _open(self, index: int) -> dict[str, Any]:
        block = self.blocks.get(index)
        if block is None:
            raise malformed(self.provider, f"a delta for content block {index}, which is not open")
        return block

    async def _delta(self, block: dict[str, Any], delta: dict[str, Any]) -> None:
        kind = delta.get("type")
        if kind == "text_delta":
            self.text.append(delta["text"])
            await self.out.text(delta["text"])
        elif kind == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + delta["thinking"]
            self.thinking.append(delta["thinking"])
            await self.out.think(delta["thinking"])
        elif kind == "signature_delta":
            block["signature"] = block.get("signature", "") + delta["signature"]
        elif kind == "input_json_delta":
            block["partial_json"] += delta["partial_json"]

    async def _stop(self, block: dict[str, Any] | None, index: int) -> None:
        if block is None:
            raise malformed(self.provider, f"content block {index} stopped without starting")
        kind = block.get("type")
        if kind in ("thinking", "redacted_thinking"):
            self.signed.append(_signed(self.provider, block))
        elif kind == "tool_use":
            raw = block["partial_json"]
            if not raw and block.get("input"):
                raw = json.dumps(block["input"])
            call = parse_call(block["id"], block["name"], raw)
            self.calls.append(call)
            await self.out.call(call)

    async def end(self) -> ChatResponse:
        """The stream is over: check it really finished, and build the response."""
        if not self.started or not self.stopped or self.blocks:
            raise truncated(self.provider, "no message_stop event arrived")
        await self.out.done()
        return ChatResponse(
            content="".join(self.text),
            input_tokens=_input_tokens(self.usage),
            output_tokens=int(self.usage.get("output_tokens") or 0),
            tool_calls=tuple(self.calls),
            thinking="".join(self.thinking) or None,
            provider_thinking=tuple(self.signed) or None,
            stop_reason=_stop_reason(self.stop_reason, bool(self.calls)),
            finish_reason=self.stop_reason,
            request_id=self.request_id,
            response_id=self.response_id,
            **_cache_counts(self.usage),
        )
