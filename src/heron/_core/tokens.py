"""A provider-neutral token estimate, for when no tokenizer is at hand."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from .messages import Message

__all__ = ["estimate_message_tokens", "estimate_tokens"]

# Han, kana and hangul: tokenizers spend about one token per character on them.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
# One CJK character, a word (of other letters and digits), or one punctuation mark.
_TOKEN = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+|[^\w\s]")

# Every message costs a few tokens of framing (role markers, separators).
_MESSAGE_OVERHEAD = 4
# An image is billed as a fixed block by most vendors; this is a middling figure.
_IMAGE_TOKENS = 256


def estimate_tokens(text: str) -> int:
    """Estimate how many tokens ``text`` takes.

    Words, CJK characters and punctuation marks count one each, and never less
    than a token per four characters, so long unbroken strings (hashes, base64,
    minified code) are not mistaken for one token.
    """
    if len(text) <= _CACHED_CHARS:
        return _estimate_cached(text)
    return _estimate(text)


def _estimate(text: str) -> int:
    return max(len(_TOKEN.findall(text)), (len(text) + 3) // 4)


# A history's texts are estimated again every turn; short ones are remembered
# (at most 2,048 of at most 8 KiB, so the cache never holds much).
_CACHED_CHARS = 8192
_estimate_cached = functools.lru_cache(maxsize=2048)(_estimate)


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
