"""Redacting secrets from tool output before a model sees it."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from typing import Any

from .._core import TextPart, UserError
from ..tools import ToolResult

__all__ = ["FILTERED_OUTPUT", "OutputFilter"]

FILTERED_OUTPUT = "FILTERED_OUTPUT"
"""What every redacted match is replaced with."""


class OutputFilter:
    """Replaces every match of some strings or patterns with ``FILTERED_OUTPUT``.

    Give it literal secrets (an API key a tool might read from a file) and
    patterns (``re.compile(r"sk-[A-Za-z0-9]{20,}")``); hand it to
    :class:`MCPClient` as ``output_filter`` and every tool result is scrubbed,
    text, structured data and nested structures alike, before the model sees
    it::

        OutputFilter([os.environ["API_KEY"], re.compile(r"sk-[A-Za-z0-9]{20,}")])
    """

    def __init__(self, values: Iterable[str | re.Pattern[str]]) -> None:
        if isinstance(values, str | re.Pattern):
            raise UserError("OutputFilter takes a list of strings and patterns, even of one")
        patterns: list[re.Pattern[str]] = []
        for value in values:
            if isinstance(value, re.Pattern):
                if not isinstance(value.pattern, str):
                    raise UserError("OutputFilter patterns must be str patterns, not bytes")
                if value.search("") is not None:
                    raise UserError(f"pattern {value.pattern!r} matches the empty string")
                patterns.append(value)
            elif isinstance(value, str):
                if not value:
                    raise UserError("OutputFilter cannot filter the empty string")
                patterns.append(re.compile(re.escape(value)))
            else:
                raise UserError(f"OutputFilter takes strings and re.Pattern objects, not {value!r}")
        self.patterns = tuple(patterns)
        """The compiled patterns, each searched for in the original text."""

    def filter_text(self, text: str) -> str:
        """``text`` with every character that any pattern matches replaced.

        Matches are found in the original text, and overlapping
        ones merge into one ``FILTERED_OUTPUT``: one secret that contains or
        overlaps another never leaves a piece of itself behind.
        """
        spans = sorted(
            m.span() for p in self.patterns for m in p.finditer(text) if m.end() > m.start()
        )
        if not spans:
            return text
        pieces: list[str] = []
        kept_from = 0  # text before this index is already copied or hidden
        start, end = spans[0]
        for next_start, next_end in spans[1:]:
            if next_start < end:
                end = max(end, next_end)
                continue
            pieces += [text[kept_from:start], FILTERED_OUTPUT]
            kept_from, (start, end) = end, (next_start, next_end)
        pieces += [text[kept_from:start], FILTERED_OUTPUT, text[end:]]
        return "".join(pieces)

    def filter(self, value: Any) -> Any:
        """``value`` with every string in it filtered: dicts (keys too), lists, tuples, results."""
        if isinstance(value, str):
            return self.filter_text(value)
        if isinstance(value, ToolResult):
            return dataclasses.replace(
                value,
                content=tuple(
                    TextPart(text=self.filter_text(p.text)) if isinstance(p, TextPart) else p
                    for p in value.content
                ),
                structured=self.filter(value.structured),
            )
        if isinstance(value, TextPart):
            return TextPart(text=self.filter_text(value.text))
        if isinstance(value, dict):
            return {self.filter(k): self.filter(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.filter(v) for v in value]
        if isinstance(value, tuple):
            return tuple(self.filter(v) for v in value)
        return value
