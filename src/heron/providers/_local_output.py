"""Split a local model's streamed output into thinking, answer text and a tool call."""

from __future__ import annotations

from typing import Literal

from ._local_prompt import CALL_OPEN

__all__ = ["THINK_CLOSE", "THINK_OPEN", "OutputSplitter", "Piece"]

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"

Piece = tuple[Literal["thinking", "text", "call"], str]
"""``("thinking" | "text", delta)``, or ``("call", "")`` once a tool call opens."""


def _partial_suffix(text: str, tag: str) -> int:
    """Length of the longest end of ``text`` that could be the start of ``tag``."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0


class OutputSplitter:
    """Incrementally classifies generated text.

    A reply may open with a ``<think>…</think>`` block (reasoning models; some
    chat templates open it in the prompt, so the reply starts inside it), then
    has answer text and/or a ``<tool_call>`` tag. Text that might be the start
    of a tag is held back until it is clear, so no tag fragment ever reaches
    the user as answer text.
    """

    def __init__(self, *, thinking: bool = False) -> None:
        # ``thinking``: the prompt itself opened the block (templates that end in ``<think>``).
        self._mode: Literal["start", "thinking", "text", "call"] = (
            "thinking" if thinking else "start"
        )
        self._held = ""
        self._thought = False  # whether the open think block has shown any text

    @property
    def in_call(self) -> bool:
        """Whether a tool call has opened (the rest is the call's JSON)."""
        return self._mode == "call"

    @property
    def in_thinking(self) -> bool:
        """Whether the model is inside its ``<think>`` block."""
        return self._mode == "thinking"

    def feed(self, delta: str) -> list[Piece]:
        """Take the next decoded text; return what can be released now."""
        self._held += delta
        out: list[Piece] = []
        while self._held and self._mode != "call":
            if not self._step(out):
                break
        return out

    def _step(self, out: list[Piece]) -> bool:
        """Advance once; False when more text is needed to decide."""
        held = self._held
        if self._mode == "start":
            stripped = held.lstrip()
            if not stripped:
                return False
            for tag, mode in ((THINK_OPEN, "thinking"), (CALL_OPEN, "call")):
                if stripped.startswith(tag):
                    self._mode = "thinking" if mode == "thinking" else "call"
                    self._held = stripped[len(tag) :].lstrip() if mode == "thinking" else ""
                    if mode == "call":
                        out.append(("call", ""))
                    return True
                if tag.startswith(stripped):
                    return False
            self._mode, self._held = "text", stripped
            return True
        if self._mode == "thinking":
            if not self._thought:  # the block's leading whitespace is layout, not thought
                held = self._held = held.lstrip()
                if not held:
                    return False
                self._thought = True
            if THINK_CLOSE in held:
                before, self._held = held.split(THINK_CLOSE, 1)
                if before.rstrip():
                    out.append(("thinking", before.rstrip()))
                self._mode, self._thought = "start", False
                return True
            keep = _partial_suffix(held, THINK_CLOSE)
            if len(held) > keep:
                out.append(("thinking", held[: len(held) - keep]))
            self._held = held[len(held) - keep :]
            return False
        # text: release everything that cannot be the start of a tool call
        if CALL_OPEN in held:
            before, _ = held.split(CALL_OPEN, 1)
            if before:
                out.append(("text", before))
            self._mode, self._held = "call", ""
            out.append(("call", ""))
            return False
        keep = _partial_suffix(held, CALL_OPEN)
        if len(held) > keep:
            out.append(("text", held[: len(held) - keep]))
        self._held = held[len(held) - keep :]
        return False

    def finish(self) -> list[Piece]:
        """Release whatever is still held at the end of generation."""
        held, self._held = self._held, ""
        if not held or self._mode == "call":
            return []
        if self._mode == "thinking":
            return [("thinking", held)]
        text = held.strip() if self._mode == "start" else held
        return [("text", text)] if text else []
