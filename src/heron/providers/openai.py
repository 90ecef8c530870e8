"""OpenAI's Chat Completions API, or any server that speaks it (``base_url``)."""

from __future__ import annotations

from .._core import Capabilities
from ._base import resolve_think_effort
from ._hosted import by_prefix
from ._openai_compat import ChatCompletionsProvider
from ._retry import RetryPolicy

__all__ = ["OpenAIProvider"]

# Longest prefix wins. Figures are the vendor's published context windows.
_CONTEXT_WINDOWS: dict[str, int] = {
    "gpt-5": 400_000,
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4-1106": 128_000,
    "gpt-4-0125": 128_000,
    "gpt-4-vision": 128_000,
    "gpt-4-32k": 32_768,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "o1": 200_000,
    "o1-mini": 128_000,
    "o1-preview": 128_000,
    "o3": 200_000,
    "o3-mini": 200_000,
    "o4-mini": 200_000,
}
_DEFAULT_CONTEXT_WINDOW = 128_000

# Models that reject image input: these prefixes, and these exact names (a
# "gpt-4" prefix would catch gpt-4o and gpt-4.1, which see).
_NO_IMAGES = (
    "o1-mini",
    "o1-preview",
    "o3-mini",
    "gpt-3.5-turbo",
    "gpt-4-0613",
    "gpt-4-0314",
    "gpt-4-32k",
    "gpt-4-1106-preview",
    "gpt-4-0125-preview",
    "gpt-4-turbo-preview",
)
_NO_IMAGES_EXACT = frozenset(("gpt-4",))

# Only these families accept reasoning_effort; the API rejects it on the others.
_REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5")
_EFFORT_LEVELS = ("low", "medium", "high")


class OpenAIProvider(ChatCompletionsProvider):
    """OpenAI through the Chat Completions API (not the Responses API).

    ``base_url`` points it at any OpenAI-compatible server (vLLM,
    llama.cpp's server, a gateway). ``think_effort`` (0..1) becomes
    ``reasoning_effort`` low/medium/high, sent only to reasoning model families
    (``o1``, ``o3``, ``o4``, ``gpt-5*``); Chat Completions never returns the
    reasoning text, so nothing is streamed as thinking::

        provider = OpenAIProvider(os.environ["OPENAI_API_KEY"], "gpt-5", think_effort=0.5)
    """

    name = "openai"

    def __init__(
        self,
        api_key: str,
        model: str = "gpt-5",
        *,
        base_url: str | None = None,
        supports_tools: bool = True,
        supports_images: bool | None = None,
        context_window: int | None = None,
        think_effort: float | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        capabilities = Capabilities(
            supports_tools=supports_tools,
            supports_images=(
                supports_images
                if supports_images is not None
                else not (model in _NO_IMAGES_EXACT or model.startswith(_NO_IMAGES))
            ),
            supports_thinking=False,
            context_window=context_window
            or by_prefix(model, _CONTEXT_WINDOWS, _DEFAULT_CONTEXT_WINDOW),
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
    def is_reasoning_model(self) -> bool:
        """Whether the model belongs to a family that takes ``reasoning_effort``."""
        return self.model.startswith(_REASONING_PREFIXES)

    def reasoning_effort(self) -> str | None:
        """low/medium/high for reasoning models given a ``think_effort``; else ``None``."""
        if not self.is_reasoning_model:
            return None
        return resolve_think_effort(self.think_effort, _EFFORT_LEVELS)
