"""Ollama: local (or remote) models through the ``ollama`` client."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections import Counter
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import httpx
import ollama

from .._core import (
    Capabilities,
    ChatResponse,
    ChunkCallback,
    FinishReason,
    Message,
    ProviderError,
    ToolCall,
    ToolSchema,
    UserError,
)
from ._base import resolve_think_effort
from ._faults import malformed, retryable_status, truncated
from ._hosted import HostedProvider
from ._openai_wire import estimated_usage, to_wire_tools
from ._retry import Fault, RetryPolicy, Tracker, idle_limit, parse_retry_after

__all__ = ["OllamaProvider"]

DEFAULT_HOST = "http://localhost:11434"

# The ollama client raises ResponseError without the response's headers; an
# httpx hook notes Retry-After for the chat() call (task) that got the response.
_RETRY_AFTER: ContextVar[list[float | None] | None] = ContextVar("ollama_retry_after", default=None)


async def _note_retry_after(response: httpx.Response) -> None:
    slot = _RETRY_AFTER.get()
    if slot is not None and response.status_code >= 400:
        slot[0] = parse_retry_after(response.headers)


# Any effort above 0 asks for thinking: models that only know on/off (qwen3,
# deepseek-r1) must not have it switched off by a low effort.
_THINK_LEVELS: tuple[str, ...] = ("low", "medium", "high")
_DONE: dict[str, FinishReason] = {"stop": "end_turn", "length": "max_tokens"}


class OllamaProvider(HostedProvider[ollama.AsyncClient]):
    """A model served by Ollama.

    Tools are off by default (many local models cannot call them; pass
    ``supports_tools=True`` for one that can). ``think_effort`` (0..1) becomes
    ``think``: ``False`` at 0 only, else low/medium/high (any effort above 0
    asks for thinking); reasoning streams from ``message.thinking``. A tool
    call the server sends again in a later part of the stream runs once.
    ``context_window`` is also sent as ``num_ctx``, so the server really
    gives the model that much room. Images are sent to the
    model unless ``supports_images=False`` says it is text-only (then an
    agent does not ask it to describe images)::

        provider = OllamaProvider("qwen3:8b", supports_tools=True, think_effort=0.5)
    """

    name = "ollama"

    def __init__(
        self,
        model: str,
        host: str = DEFAULT_HOST,
        *,
        supports_tools: bool = False,
        supports_images: bool = True,
        context_window: int = 32_000,
        think_effort: float | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        capabilities = Capabilities(
            supports_tools=supports_tools,
            supports_images=supports_images,
            supports_thinking=True,
            context_window=context_window,
        )
        super().__init__(
            model=model, think_effort=think_effort, retry=retry, capabilities=capabilities
        )
        self.host = host or DEFAULT_HOST
        """The Ollama server's URL."""

    def think(self) -> bool | str | None:
        """The ``think`` value sent: ``None`` (not sent), ``False`` at 0, else a level.

        Efforts above 0 are spread evenly over low, medium and high.
        """
        effort = self.think_effort
        if effort is None:
            return None
        if effort <= 0:
            return False
        return resolve_think_effort(effort, _THINK_LEVELS)

    def _connect(self) -> ollama.AsyncClient:
        return ollama.AsyncClient(
            host=self.host,
            # The read timeout bounds a whole non-streamed response; a stream
            # is watched by idle_limit() instead, part by part.
            timeout=httpx.Timeout(self.retry.response_timeout, connect=self.retry.timeout),
            event_hooks={"response": [_note_retry_after]},
        )

    async def _disconnect(self, client: ollama.AsyncClient) -> None:
        await client._client.aclose()  # the ollama client has no close() of its own

    def request(
        self, messages: Sequence[Message], tools: Sequence[ToolSchema], *, stream: bool
    ) -> dict[str, Any]:
        """The ``chat`` arguments for one call."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [_wire_message(m) for m in messages],
            "stream": stream,
            "options": {"num_ctx": self._capabilities.context_window},
        }
        if tools:
            body["tools"] = to_wire_tools(tools)  # Ollama takes OpenAI's function format
        think = self.think()
        if think is not None:
            body["think"] = think
        return body

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] | None = None,
        on_chunk: ChunkCallback | None = None,
    ) -> ChatResponse:
        """Send the conversation; stream it to ``on_chunk`` if given."""
        token = _RETRY_AFTER.set([None])
        try:
            return await super().chat(messages, tools=tools, on_chunk=on_chunk)
        finally:
            _RETRY_AFTER.reset(token)

    async def _attempt(
        self,
        body: dict[str, Any],
        messages: Sequence[Message],
        tools: Sequence[ToolSchema],
        out: Tracker,
    ) -> ChatResponse:
        slot = _RETRY_AFTER.get()
        if slot is not None:
            slot[0] = None
        turn = _Turn(provider=self.name, out=out)
        if not out.active:
            await turn.feed(await self._client().chat(**body))
        else:
            # Closed here, not by garbage collection: a cancelled or failed
            # turn gives its connection back at once.
            async with idle_limit(self.retry.timeout, provider=self.name) as idle:
                parts = await self._client().chat(**body)
                async with contextlib.aclosing(parts):
                    async for part in parts:
                        idle.pause()
                        await turn.feed(part)
                        idle.resume()
        return await turn.end(messages, tools)

    def _classify(self, exc: Exception) -> Fault | None:
        name = self.name
        if isinstance(exc, ProviderError):
            return Fault(error=exc)
        if isinstance(exc, ollama.ResponseError):
            status = exc.status_code if exc.status_code > 0 else None
            slot = _RETRY_AFTER.get()
            return Fault(
                retry_after=slot[0] if slot is not None else None,
                error=ProviderError(
                    str(exc.error),
                    status=status,
                    # A status of -1 is an error line inside a stream that began fine.
                    retryable=status is not None and retryable_status(status),
                    provider=name,
                ),
            )
        if isinstance(exc, httpx.TimeoutException):
            return Fault(
                error=ProviderError(
                    "request timed out", code="timeout", retryable=True, provider=name
                )
            )
        if isinstance(exc, ConnectionError | httpx.TransportError):
            return Fault(
                error=ProviderError(
                    f"connection to {self.host} failed: {exc}",
                    code="connection_error",
                    retryable=True,
                    provider=name,
                )
            )
        if isinstance(exc, json.JSONDecodeError):
            return Fault(error=malformed(name, f"a line is not JSON ({exc})"))
        return None


def _wire_message(m: Message) -> dict[str, Any]:
    text = m.text
    if m.role == "tool" and m.is_error:
        text = f"Error: {text}"  # a tool message has no error flag of its own
    out: dict[str, Any] = {"role": m.role, "content": text}
    if m.images:
        if any(p.data is None for p in m.images):
            raise UserError("ollama: images must be inline bytes; Ollama cannot fetch a URL")
        out["images"] = [p.base64 for p in m.images]
    if m.tool_calls:
        out["tool_calls"] = [
            {"function": {"name": c.name, "arguments": c.arguments}} for c in m.tool_calls
        ]
    if m.role == "tool" and m.tool_name:
        out["tool_name"] = m.tool_name
    return out


@dataclass
class _Turn:
    """Builds one turn from Ollama's stream of partial responses.

    Tool calls arrive fully formed, so each is emitted on sight. A server may
    send a call again in a later part (the final one, say): a call equal to
    one an earlier part made is that call repeated, and is dropped, so it
    runs once. Two equal calls in one part are two calls the model meant.
    """

    provider: str
    out: Tracker
    text: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    final: Any = None
    made: Counter[str] = field(default_factory=Counter)
    """How many calls of each kind (name and arguments) the turn has made."""

    async def feed(self, part: Any) -> None:
        """Take one ``ollama.ChatResponse``."""
        message = part.message
        if message.thinking:
            self.thinking.append(message.thinking)
            await self.out.think(message.thinking)
        if message.content:
            self.text.append(message.content)
            await self.out.text(message.content)
        in_part: Counter[str] = Counter()
        for c in message.tool_calls or ():
            name, arguments = c.function.name, dict(c.function.arguments or {})
            kind = name + "\0" + json.dumps(arguments, sort_keys=True, default=str)
            in_part[kind] += 1
            if in_part[kind] <= self.made[kind]:
                continue  # an earlier part already made this call
            self.made[kind] += 1
            # Ollama gives calls no ids; these are unique so results can answer them.
            call = ToolCall(id=f"call_{uuid.uuid4().hex[:16]}", name=name, arguments=arguments)
            self.calls.append(call)
            await self.out.call(call)
        if part.done:
            self.final = part

    async def end(self, messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ChatResponse:
        """The stream is over: check it really finished, and build the response."""
        final = self.final
        if final is None:
            raise truncated(self.provider, "no part with done=true arrived")
        await self.out.done()
        text, thinking = "".join(self.text), "".join(self.thinking)
        answer = Message.assistant(text, tool_calls=self.calls, thinking=thinking or None)
        prompt, output = estimated_usage(messages, tools, answer)
        return ChatResponse(
            content=text,
            # Ollama counts only the prompt tokens it evaluated: a prompt-cache
            # hit leaves the count out, a partial hit reports the new tail
            # alone. The whole prompt is what budgets and compaction need.
            input_tokens=max(final.prompt_eval_count or 0, prompt),
            output_tokens=final.eval_count or output,
            tool_calls=tuple(self.calls),
            thinking=thinking or None,
            stop_reason="tool_use" if self.calls else _DONE.get(final.done_reason or "", "other"),
            finish_reason=final.done_reason or None,
        )
