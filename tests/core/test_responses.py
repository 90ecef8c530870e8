"""Provider-facing values: capabilities, usage, tool schemas and chat responses."""

import pytest

from heron import Capabilities, ChatResponse, ToolSchema, Usage


class TestCapabilities:
    def test_defaults(self) -> None:
        caps = Capabilities()
        assert caps.supports_tools is True
        assert caps.supports_images is False
        assert caps.supports_thinking is False
        assert caps.context_window == 128_000
        assert caps.safe_usage_ratio == 0.5

    def test_default_compaction_threshold_is_half_the_window(self) -> None:
        assert Capabilities().compaction_threshold == 64_000

    @pytest.mark.parametrize(
        ("window", "ratio", "threshold"),
        [(200_000, 0.75, 150_000), (1000, 0.333, 333), (10, 1.0, 10), (3, 0.5, 1)],
    )
    def test_compaction_threshold_is_whole_tokens(
        self, window: int, ratio: float, threshold: int
    ) -> None:
        caps = Capabilities(context_window=window, safe_usage_ratio=ratio)
        assert caps.compaction_threshold == threshold
        assert isinstance(caps.compaction_threshold, int)

    @pytest.mark.parametrize("window", [0, -1])
    def test_context_window_must_be_positive(self, window: int) -> None:
        with pytest.raises(ValueError, match="context_window must be positive"):
            Capabilities(context_window=window)

    @pytest.mark.parametrize("ratio", [0.0, -0.1, 1.01, 2.0])
    def test_safe_usage_ratio_must_be_in_range(self, ratio: float) -> None:
        with pytest.raises(ValueError, match=r"safe_usage_ratio must be in \(0, 1\]"):
            Capabilities(safe_usage_ratio=ratio)


class TestUsage:
    def test_addition_adds_every_count(self) -> None:
        total = Usage(input_tokens=10, output_tokens=2, requests=1) + Usage(
            input_tokens=5, output_tokens=7, requests=2
        )
        assert total == Usage(input_tokens=15, output_tokens=9, requests=3)

    def test_addition_leaves_the_operands_alone(self) -> None:
        a = Usage(input_tokens=1, output_tokens=1, requests=1)
        _ = a + a
        assert a == Usage(input_tokens=1, output_tokens=1, requests=1)

    def test_sum_from_an_empty_usage(self) -> None:
        parts = [Usage(input_tokens=i, output_tokens=2 * i, requests=1) for i in range(1, 5)]
        assert sum(parts, Usage()) == Usage(input_tokens=10, output_tokens=20, requests=4)

    def test_total_tokens(self) -> None:
        assert Usage(input_tokens=30, output_tokens=12).total_tokens == 42
        assert Usage().total_tokens == 0

    def test_to_dict(self) -> None:
        assert Usage(input_tokens=3, output_tokens=4, requests=5).to_dict() == {
            "input_tokens": 3,
            "output_tokens": 4,
            "requests": 5,
        }


class TestToolSchema:
    def test_default_input_schema_is_an_empty_object(self) -> None:
        schema = ToolSchema(name="now", description="The time.")
        assert schema.input_schema == {"type": "object", "properties": {}}

    def test_default_input_schemas_are_not_shared(self) -> None:
        a = ToolSchema(name="a", description="")
        b = ToolSchema(name="b", description="")
        a.input_schema["properties"]["x"] = {"type": "string"}
        assert b.input_schema == {"type": "object", "properties": {}}

    def test_to_dict(self) -> None:
        schema = ToolSchema(
            name="add",
            description="Add.",
            input_schema={"type": "object", "properties": {"a": {"type": "integer"}}},
        )
        assert schema.to_dict() == {
            "name": "add",
            "description": "Add.",
            "input_schema": {"type": "object", "properties": {"a": {"type": "integer"}}},
        }


def test_chat_response_defaults() -> None:
    response = ChatResponse()
    assert response.content == ""
    assert (response.input_tokens, response.output_tokens) == (0, 0)
    assert response.tool_calls == ()
    assert response.thinking is None
    assert response.provider_thinking is None
    assert response.stop_reason == "end_turn"
