"""The provider-neutral token estimate that the scripted provider reports."""

from heron import ImagePart, Message, ToolCall
from heron._core.tokens import estimate_message_tokens, estimate_tokens


def test_words_and_punctuation_count_as_tokens() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("Hello, world!") == 4
    assert estimate_tokens("a b c d e f") == 6


def test_cjk_characters_count_one_each() -> None:
    assert estimate_tokens("東京は日本の首都です") == 10
    assert estimate_tokens("abc漢字") == 3


def test_long_unbroken_strings_count_by_length() -> None:
    assert estimate_tokens("f" * 4000) == 1000
    assert estimate_tokens("  spaced   out  ") == 4


def test_each_message_costs_framing() -> None:
    empty = estimate_message_tokens([Message.user()])
    assert empty > 0
    assert estimate_message_tokens([Message.user(), Message.user()]) == 2 * empty


def test_images_thinking_and_calls_add_tokens() -> None:
    plain = estimate_message_tokens([Message.assistant("hi")])
    assert estimate_message_tokens([Message.assistant("hi", thinking="let me think")]) > plain
    call = ToolCall(id="c", name="add", arguments={"a": 1})
    with_call = Message.assistant("hi", tool_calls=[call])
    assert estimate_message_tokens([with_call]) > plain
    with_image = Message.user("hi", ImagePart(data=b"x"))
    assert estimate_message_tokens([with_image]) > estimate_message_tokens([Message.user("hi")])
