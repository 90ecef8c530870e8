"""Messages, content parts and tool calls: constructors, views and the JSON round trip."""

import base64
import dataclasses
import json
from typing import Any

import pytest

from heron import ImagePart, Message, TextPart, ToolCall

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR-not-really-an-image\xff\x00"


def through_json(message: Message) -> Message:
    """Round-trip ``message`` through real JSON text, so non-JSON values fail loudly."""
    return Message.from_dict(json.loads(json.dumps(message.to_dict())))


class TestConstructors:
    def test_system(self) -> None:
        m = Message.system("Be brief.")
        assert m.role == "system"
        assert m.content == "Be brief."
        assert m.tool_calls == ()
        assert m.tool_call_id is None

    def test_user_plain_text_stays_a_string(self) -> None:
        m = Message.user("Hello")
        assert m.role == "user"
        assert m.content == "Hello"

    def test_user_several_strings_are_joined_as_is(self) -> None:
        assert Message.user("Hello, ", "world").content == "Hello, world"

    def test_user_without_content_is_empty(self) -> None:
        m = Message.user()
        assert m.content == ""
        assert m.parts == ()

    def test_user_with_an_image_keeps_every_part_in_order(self) -> None:
        image = ImagePart(data=PNG)
        m = Message.user("What is this?", image, "Be precise.")
        assert m.content == (
            TextPart(text="What is this?"),
            image,
            TextPart(text="Be precise."),
        )

    def test_user_with_a_text_part_only_keeps_parts(self) -> None:
        m = Message.user(TextPart(text="hi"))
        assert m.content == (TextPart(text="hi"),)
        assert m.text == "hi"

    def test_assistant_with_tool_calls_and_thinking(self) -> None:
        calls = [ToolCall(id="c1", name="add", arguments={"a": 1})]
        m = Message.assistant(
            "Adding.", tool_calls=calls, thinking="Use the tool.", provider_thinking=[{"sig": "x"}]
        )
        assert m.role == "assistant"
        assert m.content == "Adding."
        assert m.tool_calls == (ToolCall(id="c1", name="add", arguments={"a": 1}),)
        assert m.thinking == "Use the tool."
        assert m.provider_thinking == ({"sig": "x"},)

    def test_assistant_defaults(self) -> None:
        m = Message.assistant()
        assert m.content == ""
        assert m.tool_calls == ()
        assert m.thinking is None
        assert m.provider_thinking is None

    def test_assistant_accepts_an_iterator_of_calls(self) -> None:
        calls = (ToolCall(id=f"c{i}", name="n") for i in range(3))
        assert [c.id for c in Message.assistant(tool_calls=calls).tool_calls] == ["c0", "c1", "c2"]

    def test_tool_result(self) -> None:
        m = Message.tool("42", tool_call_id="c1", tool_name="add")
        assert m.role == "tool"
        assert m.content == "42"
        assert m.tool_call_id == "c1"
        assert m.tool_name == "add"
        assert m.is_error is False

    def test_tool_error_with_an_image(self) -> None:
        image = ImagePart(url="https://example.com/shot.png")
        m = Message.tool("failed", image, tool_call_id="c2", tool_name="shot", is_error=True)
        assert m.is_error is True
        assert m.images == (image,)
        assert m.text == "failed"

    def test_messages_are_frozen(self) -> None:
        m = Message.user("hi")
        with pytest.raises(dataclasses.FrozenInstanceError):
            m.content = "changed"  # type: ignore[misc]


class TestViews:
    def test_text_of_parts_leaves_images_out(self) -> None:
        m = Message.user("one ", ImagePart(data=PNG), "two")
        assert m.text == "one two"

    def test_parts_of_a_plain_string(self) -> None:
        assert Message.user("hi").parts == (TextPart(text="hi"),)

    def test_parts_of_an_empty_string_is_empty(self) -> None:
        assert Message.assistant("").parts == ()

    def test_parts_of_part_content_are_the_parts(self) -> None:
        image = ImagePart(data=PNG)
        assert Message.user("a", image).parts == (TextPart(text="a"), image)

    def test_images_of_a_plain_string_is_empty(self) -> None:
        assert Message.user("no pictures").images == ()

    def test_images_picks_only_images_in_order(self) -> None:
        first = ImagePart(data=PNG)
        second = ImagePart(url="https://example.com/b.jpg", media_type="image/jpeg")
        m = Message.user(first, "between", second)
        assert m.images == (first, second)


class TestRoleValidation:
    def test_unknown_role_is_refused(self) -> None:
        with pytest.raises(ValueError, match="unknown message role: 'robot'"):
            Message(role="robot")  # type: ignore[arg-type]

    def test_unknown_role_is_refused_from_dict(self) -> None:
        with pytest.raises(ValueError, match="unknown message role"):
            Message.from_dict({"role": "developer", "content": "x"})


class TestImagePart:
    def test_needs_data_or_url(self) -> None:
        with pytest.raises(ValueError, match="exactly one of `data` or `url`"):
            ImagePart()

    def test_refuses_both_data_and_url(self) -> None:
        with pytest.raises(ValueError, match="exactly one of `data` or `url`"):
            ImagePart(data=PNG, url="https://example.com/a.png")

    def test_empty_bytes_still_count_as_data(self) -> None:
        assert ImagePart(data=b"").base64 == ""

    def test_inline_base64_and_data_url(self) -> None:
        image = ImagePart(data=PNG, media_type="image/jpeg")
        assert base64.b64decode(image.base64) == PNG
        assert image.data_url == f"data:image/jpeg;base64,{image.base64}"

    def test_url_image_has_no_base64_and_keeps_its_url(self) -> None:
        image = ImagePart(url="https://example.com/a.png")
        assert image.base64 == ""
        assert image.data_url == "https://example.com/a.png"

    def test_default_media_type_is_png(self) -> None:
        assert ImagePart(data=PNG).media_type == "image/png"


class TestToDict:
    def test_leaves_out_empty_fields(self) -> None:
        assert Message.user("hi").to_dict() == {"role": "user", "content": "hi"}

    def test_images_travel_as_base64(self) -> None:
        m = Message.user("look", ImagePart(data=PNG, media_type="image/jpeg"))
        assert m.to_dict()["content"] == [
            {"type": "text", "text": "look"},
            {"type": "image", "media_type": "image/jpeg", "data": base64.b64encode(PNG).decode()},
        ]

    def test_url_images_travel_as_urls(self) -> None:
        m = Message.user(ImagePart(url="https://example.com/a.png"))
        assert m.to_dict()["content"] == [
            {"type": "image", "media_type": "image/png", "url": "https://example.com/a.png"}
        ]

    def test_assistant_fields(self) -> None:
        m = Message.assistant(
            "ok",
            tool_calls=[ToolCall(id="c1", name="add", arguments={"a": 1})],
            thinking="hmm",
            provider_thinking=[{"type": "thinking", "signature": "abc"}],
        )
        assert m.to_dict() == {
            "role": "assistant",
            "content": "ok",
            "tool_calls": [{"id": "c1", "name": "add", "arguments": {"a": 1}}],
            "thinking": "hmm",
            "provider_thinking": [{"type": "thinking", "signature": "abc"}],
        }

    def test_is_error_only_when_true(self) -> None:
        ok = Message.tool("fine", tool_call_id="c", tool_name="t")
        failed = Message.tool("boom", tool_call_id="c", tool_name="t", is_error=True)
        assert "is_error" not in ok.to_dict()
        assert failed.to_dict()["is_error"] is True


ROUND_TRIPS: dict[str, Message] = {
    "system": Message.system("You are terse."),
    "empty user": Message.user(),
    "user text": Message.user("What is 2 + 3?"),
    "user with inline image": Message.user(
        "Describe:", ImagePart(data=PNG, media_type="image/webp")
    ),
    "user with url image": Message.user(ImagePart(url="https://example.com/cat.gif")),
    "assistant with everything": Message.assistant(
        "Calling two tools.",
        tool_calls=[
            ToolCall(id="call_1", name="add", arguments={"a": 2, "b": 3}),
            ToolCall(id="call_2", name="search", arguments={"q": "x", "tags": ["a"], "n": None}),
        ],
        thinking="I should add first.",
        provider_thinking=[{"type": "thinking", "thinking": "...", "signature": "sig=="}, "raw"],
    ),
    "assistant with empty provider thinking": Message.assistant("x", provider_thinking=[]),
    "tool ok": Message.tool("5", tool_call_id="call_1", tool_name="add"),
    "tool error with image": Message.tool(
        "it broke", ImagePart(data=b""), tool_call_id="call_2", tool_name="shot", is_error=True
    ),
}


@pytest.mark.parametrize("message", ROUND_TRIPS.values(), ids=ROUND_TRIPS.keys())
def test_round_trip_through_json_is_lossless(message: Message) -> None:
    assert through_json(message) == message


def test_round_trip_keeps_image_bytes_exactly() -> None:
    back = through_json(Message.user(ImagePart(data=PNG)))
    assert back.images[0].data == PNG


def test_from_dict_without_content_is_empty() -> None:
    assert Message.from_dict({"role": "assistant"}).content == ""


def test_from_dict_refuses_unknown_part_types() -> None:
    with pytest.raises(ValueError, match="unknown content part type: 'audio'"):
        Message.from_dict({"role": "user", "content": [{"type": "audio", "data": ""}]})


class TestToolCall:
    def test_round_trip(self) -> None:
        c = ToolCall(id="call_9", name="lookup", arguments={"q": "heron", "limit": 3})
        assert ToolCall.from_dict(json.loads(json.dumps(c.to_dict()))) == c

    def test_arguments_default_to_empty(self) -> None:
        assert ToolCall(id="c", name="now").arguments == {}
        assert ToolCall(id="a", name="n") == ToolCall.from_dict(
            {"id": "a", "name": "n", "arguments": {}}
        )

    def test_from_dict_copies_the_arguments(self) -> None:
        raw: dict[str, Any] = {"id": "c", "name": "n", "arguments": {"a": 1}}
        c = ToolCall.from_dict(raw)
        raw["arguments"]["a"] = 2
        assert c.arguments == {"a": 1}
