"""The provider interface and the think-effort mapping every provider shares."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TypeVar

from .._core import Capabilities, ChatResponse, ChunkCallback, Message, ToolSchema

__all__ = ["Provider", "resolve_think_effort", "think_budget"]

T = TypeVar("T")


class Provider(ABC):
    """A model API behind one method.

    ``chat`` sends the whole history (and the tools the model may call) and
    returns the complete turn. With ``on_chunk`` it streams as it goes:
    thinking deltas, then text deltas, one chunk per finished tool call, then a
    ``done`` chunk; without it a provider may take a non-streaming path.

    A failure of the model service (an HTTP error, a broken stream, a timeout)
    is raised as :class:`heron.ProviderError`; agents let it propagate.

    Subclasses implement :meth:`chat` and :attr:`capabilities`; :func:`emit`
    delivers a chunk to ``on_chunk`` whether it is sync or async. An agent
    streams a turn its provider did not stream (all at once, when it ends)::

        class EchoProvider(Provider):  # a real one reports real token counts
            @property
            def capabilities(self) -> Capabilities:
                return Capabilities()

            async def chat(self, messages, *, tools=None, on_chunk=None):
                text = messages[-1].text
                for word in text.split(" "):
                    await emit(on_chunk, StreamChunk(role="assistant", content=word + " "))
                await emit(on_chunk, StreamChunk(role="assistant", done=True))
                return ChatResponse(content=text, input_tokens=0, output_tokens=0)
    """

    name: str = "provider"
    """Short name used in errors and logs."""
    model: str | None = None
    """The model's name, when the provider knows it; recorded on every run's result."""

    @abstractmethod
    async def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] | None = None,
        on_chunk: ChunkCallback | None = None,
    ) -> ChatResponse:
        """Send ``messages`` and return the model's complete response."""

    @property
    @abstractmethod
    def capabilities(self) -> Capabilities:
        """What this provider and model support; static, not re-queried per call."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook with a do-nothing default
        """Release what the provider holds (HTTP connections); it may be used again after.

        The default holds nothing and does nothing.
        """


def resolve_think_effort(effort: float | None, levels: Sequence[T]) -> T | None:
    """Bucket a 0..1 ``effort`` evenly over a provider's native ``levels``.

    ``None`` means thinking was not asked for and gives ``None``. Values
    outside 0..1 are clamped::

        >>> resolve_think_effort(0.5, ["low", "medium", "high"])
        'medium'
        >>> resolve_think_effort(0.0, [False, "low", "medium", "high"])
        False
    """
    if effort is None:
        return None
    if not levels:
        raise ValueError("levels must not be empty")
    if math.isnan(effort):
        raise ValueError("think effort must be a number between 0 and 1, not NaN")
    clamped = min(max(float(effort), 0.0), 1.0)
    index = min(int(clamped * len(levels)), len(levels) - 1)
    return levels[index]


def think_budget(effort: float | None, *, minimum: int, maximum: int) -> int | None:
    """Scale a 0..1 ``effort`` into a token budget between ``minimum`` and ``maximum``.

    ``None`` (thinking not asked for) and an effort of 0 or less give ``None``:
    no thinking at all::

        >>> think_budget(0.5, minimum=1024, maximum=8192)
        4608
    """
    if minimum <= 0 or maximum < minimum:
        raise ValueError("need 0 < minimum <= maximum")
    if effort is not None and math.isnan(effort):
        raise ValueError("think effort must be a number between 0 and 1, not NaN")
    if effort is None or effort <= 0:
        return None
    clamped = min(float(effort), 1.0)
    return round(minimum + (maximum - minimum) * clamped)
