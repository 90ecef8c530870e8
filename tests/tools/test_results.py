"""Turning whatever a tool returns into the :class:`ToolResult` the model sees."""

import dataclasses
import json
from typing import Any

import pytest
from pydantic import BaseModel

from heron import ImagePart, TextPart, ToolResult
from heron.tools import to_tool_result

IMAGE = ImagePart(data=b"\x89PNG fake")


class Weather(BaseModel):
    city: str
    celsius: float


@dataclasses.dataclass
class Hit:
    title: str
    score: float


class Opaque:
    def __str__(self) -> str:
        return "<opaque thing>"


class TestToolResult:
    def test_defaults(self) -> None:
        result = ToolResult()
        assert result.content == ()
        assert result.structured is None
        assert (result.is_error, result.stop_iteration) == (False, False)
        assert result.text == ""
        assert result.images == ()

    def test_text_joins_text_parts_and_images_picks_images(self) -> None:
        result = ToolResult(content=(TextPart(text="a"), IMAGE, TextPart(text="b")))
        assert result.text == "ab"
        assert result.images == (IMAGE,)

    def test_of_text(self) -> None:
        assert ToolResult.of_text("hi") == ToolResult(content=(TextPart(text="hi"),))
        assert ToolResult.of_text("no", is_error=True).is_error is True

    def test_error(self) -> None:
        result = ToolResult.error("it broke")
        assert (result.text, result.is_error) == ("it broke", True)


class TestConversions:
    def test_a_string_is_text(self) -> None:
        result = to_tool_result("It is noon.")
        assert result == ToolResult(content=(TextPart(text="It is noon."),))

    def test_an_empty_string_is_kept(self) -> None:
        assert to_tool_result("").content == (TextPart(text=""),)

    def test_none_is_no_output(self) -> None:
        result = to_tool_result(None)
        assert result.text == "(no output)"
        assert result.structured is None
        assert not result.is_error

    def test_a_tool_result_passes_through_unchanged(self) -> None:
        original = ToolResult.error("already failed")
        assert to_tool_result(original) is original

    def test_a_dict_is_json_and_structured(self) -> None:
        value = {"city": "Oslo", "temps": [1, 2.5], "ok": True, "none": None}
        result = to_tool_result(value)
        assert json.loads(result.text) == value
        assert result.structured == value
        assert result.images == ()

    def test_a_list_is_json_and_structured(self) -> None:
        result = to_tool_result([1, "two", {"three": 3}])
        assert result.text == '[1, "two", {"three": 3}]'
        assert result.structured == [1, "two", {"three": 3}]

    @pytest.mark.parametrize(("value", "text"), [(42, "42"), (2.5, "2.5"), (True, "true")])
    def test_scalars_are_json(self, value: Any, text: str) -> None:
        result = to_tool_result(value)
        assert result.text == text
        assert result.structured == value

    def test_a_tuple_is_a_json_array(self) -> None:
        result = to_tool_result((1, 2))
        assert result.text == "[1, 2]"
        assert result.structured == [1, 2]

    def test_a_pydantic_model_is_json_and_structured(self) -> None:
        result = to_tool_result(Weather(city="Oslo", celsius=-3.5))
        assert json.loads(result.text) == {"city": "Oslo", "celsius": -3.5}
        assert result.structured == {"city": "Oslo", "celsius": -3.5}

    def test_models_nested_in_lists_and_dicts_are_json(self) -> None:
        value = {"results": [Weather(city="Oslo", celsius=1.0), Weather(city="Rome", celsius=20)]}
        result = to_tool_result(value)
        expected = {
            "results": [{"city": "Oslo", "celsius": 1.0}, {"city": "Rome", "celsius": 20.0}]
        }
        assert json.loads(result.text) == expected
        assert result.structured == expected

    def test_dataclasses_are_json(self) -> None:
        result = to_tool_result([Hit(title="Heron", score=0.9)])
        assert result.structured == [{"title": "Heron", "score": 0.9}]

    def test_structured_values_are_json_ready(self) -> None:
        result = to_tool_result({"nested": [Weather(city="Oslo", celsius=1), (1, 2)]})
        assert json.loads(json.dumps(result.structured)) == result.structured

    def test_an_image_is_an_image_part(self) -> None:
        result = to_tool_result(IMAGE)
        assert result.content == (IMAGE,)
        assert result.text == ""
        assert result.structured is None

    def test_a_text_part_is_kept(self) -> None:
        assert to_tool_result(TextPart(text="x")).content == (TextPart(text="x"),)

    def test_a_list_with_images_becomes_parts_in_order(self) -> None:
        url_image = ImagePart(url="https://example.com/b.png")
        result = to_tool_result(
            ["Two screenshots:", IMAGE, {"width": 640}, url_image, TextPart(text="end")]
        )
        assert result.content == (
            TextPart(text="Two screenshots:"),
            IMAGE,
            TextPart(text='{"width": 640}'),
            url_image,
            TextPart(text="end"),
        )
        assert result.images == (IMAGE, url_image)
        assert result.structured is None

    def test_a_model_next_to_an_image_is_json_text(self) -> None:
        result = to_tool_result((IMAGE, Weather(city="Oslo", celsius=2)))
        assert json.loads(result.content[1].text) == {"city": "Oslo", "celsius": 2.0}  # type: ignore[union-attr]

    def test_an_opaque_object_next_to_an_image_is_its_str(self) -> None:
        result = to_tool_result([IMAGE, Opaque()])
        assert result.content[1] == TextPart(text="<opaque thing>")

    def test_a_non_json_object_is_its_str(self) -> None:
        result = to_tool_result(Opaque())
        assert result.text == "<opaque thing>"
        assert result.structured is None
        assert not result.is_error

    def test_a_dict_holding_a_non_json_object_is_its_str(self) -> None:
        value = {"thing": Opaque()}
        result = to_tool_result(value)
        assert result.text == str(value)
        assert result.structured is None
