"""The Chat Completions provider both :class:`OpenAIProvider` and :class:`DeepSeekProvider` are."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx2
import openai

from .._core import Capabilities, ChatResponse, Message, ToolSchema
from ._checks import require_key
from ._faults import classify_sdk_error, malformed
from ._hosted import HostedProvider, response_header, split_query
from ._openai_wire import (
    StreamAssembler,
    cached_tokens,
    estimated_usage,
    finish_reason,
    parse_calls,
    to_wire_messages,
    to_wire_tools,
)
from ._retry import Fault, RetryPolicy, Tracker, idle_limit

__all__ = ["ChatCompletionsProvider"]

# Vendor fields the openai SDK has no keyword for: they travel in extra_body.
_EXTRA_FIELDS = ("thinking",)


def _sdk_arguments(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` as ``create()`` keywords, vendor-only fields moved into ``extra_body``."""
    kwargs = {k: v for k, v in body.items() if k not in _EXTRA_FIELDS}
    extra = {k: body[k] for k in _EXTRA_FIELDS if k in body}
    if extra:
        kwargs["extra_body"] = extra
    return kwargs


class ChatCompletionsProvider(HostedProvider[openai.AsyncOpenAI]):
    """A provider speaking the Chat Completions API through the ``openai`` SDK.

    Subclasses set the defaults and decide :meth:`reasoning_effort`.
    """

    replay_reasoning = False
    """Whether reasoning text is sent back as ``reasoning_content``."""

    def __init__(
        self,
        *,
        api_key: str,
        model: str,
        base_url: str | None,
        capabilities: Capabilities,
        think_effort: float | None,
        retry: RetryPolicy | None,
    ) -> None:
        super().__init__(
            model=model, think_effort=think_effort, retry=retry, capabilities=capabilities
        )
        self.base_url = base_url
        """The API endpoint (``None``: the SDK's default)."""
        self._api_key = require_key(self.name, api_key)

    def reasoning_effort(self) -> str | None:
        """The ``reasoning_effort`` to send, or ``None`` to send none."""
        return None

    def _connect(self) -> openai.AsyncOpenAI:
        # The read timeout bounds a whole non-streamed response; a stream is
        # watched by idle_limit() instead, event by event.
        timeout = httpx2.Timeout(self.retry.response_timeout, connect=self.retry.timeout)
        base_url, query = split_query(self.base_url)
        return openai.AsyncOpenAI(
            api_key=self._api_key,
            base_url=base_url,
            default_query=query,
            max_retries=0,
            timeout=timeout,
        )

    async def _disconnect(self, client: openai.AsyncOpenAI) -> None:
        await client.close()

    def request(
        self, messages: Sequence[Message], tools: Sequence[ToolSchema], *, stream: bool
    ) -> dict[str, Any]:
        """The request body for one call."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": to_wire_messages(
                messages,
                provider=self.name,
                images=self._capabilities.supports_images,
                replay_reasoning=self.replay_reasoning,
            ),
        }
        if tools:
            body["tools"] = to_wire_tools(tools)
            # OpenAI's default, said aloud: some compatible servers (llama.cpp's)
            # take a missing tool_choice as "none" and never call a tool.
            body["tool_choice"] = "auto"
        effort = self.reasoning_effort()
        if effort is not None:
            body["reasoning_effort"] = effort
        if stream:
            body["stream"] = True
            # Without it the stream carries no usage, and every count would be 0.
            body["stream_options"] = {"include_usage": True}
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
            response = await client.chat.completions.create(**_sdk_arguments(body))
            return self._parse(response, messages, tools)
        assembler = StreamAssembler(provider=self.name, out=out)
        async with idle_limit(self.retry.timeout, provider=self.name) as idle:
            stream = await client.chat.completions.create(**_sdk_arguments(body))
            assembler.request_id = response_header(stream, "x-request-id")
            async with stream:
                async for chunk in stream:
                    idle.pause()
                    await assembler.feed(chunk)
                    idle.resume()
        return await assembler.end(messages, tools)

    def _classify(self, exc: Exception) -> Fault | None:
        return classify_sdk_error(exc, provider=self.name, sdk=openai)

    def _parse(
        self, response: Any, messages: Sequence[Message], tools: Sequence[ToolSchema]
    ) -> ChatResponse:
        if not response.choices:
            raise malformed(self.name, "the response has no choices")
        choice = response.choices[0]
        message = choice.message
        calls = tuple(
            parse_calls(
                [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or ()],
                choice.finish_reason,
            )
        )
        text = message.content or ""
        thinking = getattr(message, "reasoning_content", None) or None
        usage = response.usage
        if usage is not None:
            counts = (usage.prompt_tokens, usage.completion_tokens)
        else:
            answer = Message.assistant(text, tool_calls=calls, thinking=thinking)
            counts = estimated_usage(messages, tools, answer)
        return ChatResponse(
            content=text,
            input_tokens=counts[0],
            output_tokens=counts[1],
            tool_calls=calls,
            thinking=thinking,
            stop_reason=finish_reason(choice.finish_reason, bool(calls)),
            finish_reason=choice.finish_reason,
            request_id=getattr(response, "_request_id", None),
            response_id=getattr(response, "id", None) or None,
            cached_input_tokens=cached_tokens(usage) if usage is not None else None,
        )
