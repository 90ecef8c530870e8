"""A provider-neutral token estimate, for when no tokenizer is at hand."""

from __future__ import annotations

import re
from collections.abc import Iterable

from .messages import Message

__all__ = ["estimate_message_tokens", "estimate_tokens"]

# Words, numbers and single punctuation marks: close to what BPE tokenizers
# produce for English prose, and deterministic, which tests rely on.
_TOKEN = re.compile(r"\w+|[^\w\s]")

# Every message costs a few tokens of framing (role markers, separators).
_MESSAGE_OVERHEAD = 4
# An image is billed as a fixed block by most vendors; this is a middling figure.
_IMAGE_TOKENS = 256


def estimate_tokens(text: str) -> int:
    """Estimate how many tokens ``text`` takes."""
    return len(_TOKEN.findall(text))


def estimate_message_tokens(messages: Iterable[Message]) -> int:
    """Estimate the tokens a list of messages takes in a prompt."""
    total = 0
    for m in messages:
        total += _MESSAGE_OVERHEAD + estimate_tokens(m.text) + _IMAGE_TOKENS * len(m.images)
        for call in m.tool_calls:
            total += estimate_tokens(call.name) + estimate_tokens(str(call.arguments))
        if m.thinking:
            total += estimate_tokens(m.thinking)
    return total
