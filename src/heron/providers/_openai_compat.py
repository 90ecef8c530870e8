"""The Chat Completions provider both :class:`OpenAIProvider` and :class:`DeepSeekProvider` are."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import openai

from .._core import (
    Capabilities,
    ChatResponse,
    ChunkCallback,
    Message,
    ToolCall,
    ToolSchema,
    UserError,
)
from ._base import Provider
from ._checks import require_effort, require_key, require_model
from ._faults import classify_sdk_error, malformed
from ._openai_wire import (
    StreamAssembler,
    estimated_usage,
    finish_reason,
    parse_arguments,
    to_wire_messages,
    to_wire_tools,
)
from ._retry import Fault, RetryPolicy, Tracker, with_retries

__all__ = ["ChatCompletionsProvider"]


class ChatCompletionsProvider(Provider):
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
        self.model = require_model(self.name, model)
        """The model id sent with every request."""
        self.base_url = base_url
        """The API endpoint (``None``: the SDK's default)."""
        self.think_effort = require_effort(self.name, think_effort)
        """How hard the model should think, 0..1 (``None``: the model's default)."""
        self.retry = retry or RetryPolicy()
        """How failed requests are retried."""
        self._api_key = require_key(self.name, api_key)
        self._capabilities = capabilities
        self._sdk: openai.AsyncOpenAI | None = None
        self._sdk_loop: asyncio.AbstractEventLoop | None = None

    @property
    def capabilities(self) -> Capabilities:
        """What the model supports (from the per-model tables, or as overridden)."""
        return self._capabilities

    def reasoning_effort(self) -> str | None:
        """The ``reasoning_effort`` to send, or ``None`` to send none."""
        return None

    def _client(self) -> openai.AsyncOpenAI:
        # An httpx2 connection pool belongs to the event loop it was made on;
        # a provider used from a second asyncio.run() gets a fresh client.
        loop = asyncio.get_running_loop()
        if self._sdk is None or self._sdk_loop is not loop:
            self._sdk = openai.AsyncOpenAI(
                api_key=self._api_key,
                base_url=self.base_url,
                max_retries=0,
                timeout=self.retry.timeout,
            )
            self._sdk_loop = loop
        return self._sdk

    async def aclose(self) -> None:
        """Close the HTTP connections this provider holds."""
        if self._sdk is not None:
            await self._sdk.close()
            self._sdk = None

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

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] | None = None,
        on_chunk: ChunkCallback | None = None,
    ) -> ChatResponse:
        """Send the conversation; stream it to ``on_chunk`` if given."""
        tools = tuple(tools or ())
        if tools and not self._capabilities.supports_tools:
            raise UserError(f"{self.name}: tools were passed but supports_tools is False")
        tracker = Tracker(on_chunk)
        body = self.request(messages, tools, stream=tracker.active)

        async def attempt() -> ChatResponse:
            client = self._client()
            if not tracker.active:
                response = await client.chat.completions.create(**body)
                return self._parse(response, messages, tools)
            assembler = StreamAssembler(provider=self.name, out=tracker)
            stream = await client.chat.completions.create(**body)
            async with stream:
                async for chunk in stream:
                    await assembler.feed(chunk)
            return await assembler.end(messages, tools)

        return await with_retries(
            attempt, policy=self.retry, classify=self._classify, tracker=tracker
        )

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
            ToolCall(
                id=c.id,
                name=c.function.name,
                arguments=parse_arguments(self.name, c.function.name, c.function.arguments),
            )
            for c in message.tool_calls or ()
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
        )
