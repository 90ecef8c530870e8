"""DeepSeek: an OpenAI-compatible API with streamed reasoning text."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._core import Capabilities, Message, ToolSchema
from ._base import resolve_think_effort
from ._openai_compat import ChatCompletionsProvider
from ._retry import RetryPolicy

__all__ = ["DeepSeekProvider"]

DEEPSEEK_BASE_URL = "https://api.deepseek.com"

_VISION_MODELS = frozenset(("deepseek-v4-flash-vision-exp",))
_CONTEXT_WINDOWS: dict[str, int] = {
    "deepseek-v4-flash": 1_000_000,
    "deepseek-v4-flash-vision-exp": 1_000_000,
    "deepseek-v4-pro": 1_000_000,
    "deepseek-chat": 128_000,
    "deepseek-reasoner": 128_000,
}
_DEFAULT_CONTEXT_WINDOW = 1_000_000
# Models that reason, stream reasoning_content and take reasoning_effort.
_REASONER_PREFIXES = ("deepseek-v4", "deepseek-reasoner")
# Chat Completions takes low/high/max; thinking is switched off by a separate field.
_EFFORT_LEVELS = ("low", "high", "max")


class DeepSeekProvider(ChatCompletionsProvider):
    """DeepSeek through its OpenAI-compatible API.

    Reasoning models stream ``reasoning_content`` as thinking chunks, and a
    turn's reasoning is sent back with the tool results that follow it, as the
    API requires. ``think_effort`` (0..1) becomes ``reasoning_effort``
    low/high/max, and 0 switches thinking off (``thinking: {"type":
    "disabled"}``). Images are accepted only by the vision model unless
    ``supports_images`` says otherwise::

        provider = DeepSeekProvider(os.environ["DEEPSEEK_API_KEY"], think_effort=0.3)
    """

    name = "deepseek"
    replay_reasoning = True

    def __init__(
        self,
        api_key: str,
        model: str = "deepseek-v4-flash",
        *,
        base_url: str = DEEPSEEK_BASE_URL,
        supports_tools: bool = True,
        supports_images: bool | None = None,
        context_window: int | None = None,
        think_effort: float | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        capabilities = Capabilities(
            supports_tools=supports_tools,
            supports_images=(
                supports_images if supports_images is not None else model in _VISION_MODELS
            ),
            supports_thinking=model.startswith(_REASONER_PREFIXES),
            context_window=context_window or _CONTEXT_WINDOWS.get(model, _DEFAULT_CONTEXT_WINDOW),
        )
        super().__init__(
            api_key=api_key,
            model=model,
            base_url=base_url,
            capabilities=capabilities,
            think_effort=think_effort,
            retry=retry,
        )

    @property
    def thinking_off(self) -> bool:
        """Whether ``think_effort`` 0 switches a reasoning model's thinking off."""
        return self.capabilities.supports_thinking and self.think_effort == 0

    def reasoning_effort(self) -> str | None:
        """low/high/max on reasoning models given a ``think_effort`` above 0; else ``None``."""
        if not self.capabilities.supports_thinking or self.thinking_off:
            return None
        return resolve_think_effort(self.think_effort, _EFFORT_LEVELS)

    def request(
        self, messages: Sequence[Message], tools: Sequence[ToolSchema], *, stream: bool
    ) -> dict[str, Any]:
        """The request body for one call."""
        body = super().request(messages, tools, stream=stream)
        if self.thinking_off:
            body["thinking"] = {"type": "disabled"}
        return body
