"""Memory compaction: folding the working context into a running summary."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Compaction", "memory_block"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Compaction:
    """What one :meth:`BaseAgent.compact` did to the agent's working context.

    ::

        done = await agent.compact()
        if done.compacted:
            print(f"folded {done.folded} messages into memory:", done.memory)
        else:
            print("left as it was:", done.reason)
    """

    compacted: bool
    """Whether the working context was folded into a new memory."""
    reason: str | None = None
    """Why it was not, when it was not (nothing to fold, an empty summary)."""
    folded: int = 0
    """Messages summarised into the memory and dropped from the working context."""
    kept: int = 0
    """Messages left in the working context, verbatim (what the model has not acted on)."""
    memory: str | None = None
    """The agent's memory after the call."""
    input_tokens: int = 0
    """Tokens the summary request read (also counted in ``agent.usage``)."""
    output_tokens: int = 0
    """Tokens the summary took to write."""
    context_tokens_before: int = 0
    """The working context's size before, in tokens (the provider's count or an estimate)."""
    context_tokens_after: int = 0
    """Its size after."""


def memory_block(memory: str) -> str:
    """The system-prompt section that carries the memory into later turns."""
    return (
        "MEMORY (a summary of the earlier conversation, which is no longer shown):\n"
        + memory.strip()
    )
