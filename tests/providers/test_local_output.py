"""OutputSplitter: thinking, answer text and tool-call openings from streamed pieces."""

from __future__ import annotations

import pytest

from heron.providers._local_output import OutputSplitter, Piece


def split(*deltas: str) -> tuple[list[Piece], OutputSplitter]:
    splitter = OutputSplitter()
    out: list[Piece] = []
    for delta in deltas:
        out += splitter.feed(delta)
    out += splitter.finish()
    return out, splitter


def joined(pieces: list[Piece], kind: str) -> str:
    return "".join(text for k, text in pieces if k == kind)


def test_plain_text_passes_through_without_leading_whitespace() -> None:
    pieces, splitter = split("\n", " Hello", ", world", "!")
    assert joined(pieces, "text") == "Hello, world!"
    assert not splitter.in_call


def test_text_that_only_looks_like_a_tag_is_released() -> None:
    pieces, _ = split("<", "b>bold</b>")
    assert joined(pieces, "text") == "<b>bold</b>"


@pytest.mark.parametrize(
    "deltas", [("<tool_call>",), ("<", "tool", "_call", ">"), ("  <tool_", "call>[")]
)
def test_a_call_opening_is_reported_however_it_is_split(deltas: tuple[str, ...]) -> None:
    pieces, splitter = split(*deltas)
    assert pieces == [("call", "")]
    assert splitter.in_call


def test_text_before_a_call_is_released_and_the_tag_is_not() -> None:
    pieces, splitter = split("Let me check.", "<tool", "_call>[{")
    assert pieces == [("text", "Let me check."), ("call", "")]
    assert splitter.in_call


def test_a_partial_tag_at_the_end_of_text_is_held_until_it_is_clear() -> None:
    splitter = OutputSplitter()
    assert splitter.feed("It is 5 <") == [("text", "It is 5 ")]
    assert splitter.feed(" 6") == [("text", "< 6")]


def test_think_block_streams_as_thinking_then_the_answer_as_text() -> None:
    pieces, _ = split("<think>", "\nThe user wants", " the time.</th", "ink>\n\nIt is noon.")
    assert joined(pieces, "thinking") == "The user wants the time."
    assert joined(pieces, "text") == "It is noon."
    assert not any("<" in text for _, text in pieces)


def test_think_then_call() -> None:
    pieces, splitter = split("<think>need the clock</think>", "<tool_call>")
    assert pieces == [("thinking", "need the clock"), ("call", "")]
    assert splitter.in_thinking is False and splitter.in_call


def test_an_unclosed_think_block_is_thinking_at_the_end() -> None:
    pieces, splitter = split("<think>still going")
    assert pieces == [("thinking", "still going")]
    assert splitter.in_thinking


def test_whitespace_only_output_gives_nothing() -> None:
    pieces, _ = split("  ", "\n")
    assert pieces == []
