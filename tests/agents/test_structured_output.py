"""Structured output: typed final answers, validation feedback and retries."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest
from pydantic import BaseModel

from heron import Message, OutputValidationError, RunError, SimpleAgent, StreamChunk, UserError
from heron.testing import ScriptedProvider


class City(BaseModel):
    name: str
    population: int


async def test_a_valid_answer_is_parsed_into_the_model() -> None:
    provider = ScriptedProvider(['{"name": "Lyon", "population": 522000}'])
    agent = SimpleAgent(provider=provider)
    result = await agent.run("Tell me about Lyon.", output_type=City)

    assert result.output_value == City(name="Lyon", population=522000)
    assert result.stop_reason == "end_turn"
    system = provider.requests[0].messages[0].text
    assert "OUTPUT FORMAT" in system and '"population"' in system


async def test_code_fences_are_tolerated() -> None:
    provider = ScriptedProvider(['```json\n{"name": "Oslo", "population": 709000}\n```'])
    result = await SimpleAgent(provider=provider).run("Oslo?", output_type=City)
    assert result.output_value == City(name="Oslo", population=709000)


async def test_an_invalid_answer_goes_back_with_the_errors_then_succeeds() -> None:
    def second(messages: Sequence[Message]) -> str:
        feedback = messages[-1].text
        assert messages[-1].role == "user"
        assert "population" in feedback and "integer" in feedback
        return '{"name": "Lyon", "population": 522000}'

    provider = ScriptedProvider(['{"name": "Lyon", "population": "lots"}', second])
    agent = SimpleAgent(provider=provider)
    result = await agent.run("Lyon?", output_type=City)

    assert result.output_value == City(name="Lyon", population=522000)
    assert result.turns == 2
    assert len(provider.requests) == 2


async def test_not_json_at_all_is_reported_as_such() -> None:
    def second(messages: Sequence[Message]) -> str:
        assert "not valid JSON" in messages[-1].text
        return '{"name": "Nice", "population": 342000}'

    provider = ScriptedProvider(["Lyon is lovely.", second])
    result = await SimpleAgent(provider=provider).run("Nice?", output_type=City)
    assert result.output_value.name == "Nice"


async def test_giving_up_after_the_retry_limit_is_a_clear_failure() -> None:
    provider = ScriptedProvider(["nope"] * 3)
    agent = SimpleAgent(provider=provider, output_retries=2)
    with pytest.raises(OutputValidationError, match="after 2 retries") as info:
        await agent.run("City?", output_type=City)
    assert len(provider.requests) == 3
    assert info.value.result is not None
    assert info.value.result.stop_reason == "error"
    assert info.value.result.output_value is None


async def test_a_json_schema_dict_works_as_output_type() -> None:
    schema = {
        "type": "object",
        "properties": {"tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["tags"],
        "additionalProperties": False,
    }

    def second(messages: Sequence[Message]) -> str:
        assert "tags" in messages[-1].text
        return json.dumps({"tags": ["a", "b"]})

    provider = ScriptedProvider(['{"tags": [1]}', second])
    result = await SimpleAgent(provider=provider).run("Tag it.", output_type=schema)
    assert result.output_value == {"tags": ["a", "b"]}


async def test_plain_python_types_are_accepted() -> None:
    provider = ScriptedProvider(["[1, 2, 3]"])
    result = await SimpleAgent(provider=provider).run("Numbers?", output_type=list[int])
    assert result.output_value == [1, 2, 3]


async def test_an_invalid_schema_is_a_user_error() -> None:
    agent = SimpleAgent(provider=ScriptedProvider(["{}"]))
    with pytest.raises(UserError, match="JSON schema"):
        await agent.run("x", output_type={"type": "no-such-type"})


async def test_runs_without_output_type_do_not_carry_the_format_instructions() -> None:
    provider = ScriptedProvider(['{"name": "A", "population": 1}', "plain"])
    agent = SimpleAgent(provider=provider, instruction="Be brief.")
    await agent.run("one", output_type=City)
    await agent.run("two")
    assert "OUTPUT FORMAT" in provider.requests[0].messages[0].text
    assert provider.requests[1].messages[0].text == "Be brief."


async def test_a_structured_result_exports_to_json() -> None:
    provider = ScriptedProvider(['{"name": "Lyon", "population": 522000}'])
    result = await SimpleAgent(provider=provider).run("Lyon?", output_type=City)
    exported = json.loads(result.to_json())
    assert exported["output_value"] == {"name": "Lyon", "population": 522000}
    # Rebuilt results carry the JSON form of the value.
    from heron import RunResult

    assert RunResult.from_dict(exported).output_value == {"name": "Lyon", "population": 522000}


async def test_output_parsing_is_forgiving_where_it_is_unambiguous() -> None:
    class Point(BaseModel):
        x: int

    text = await SimpleAgent(provider=ScriptedProvider(["hello world"])).run("hi", output_type=str)
    assert text.output_value == "hello world"
    prose = 'Here it is:\n```json\n{"x": 4}\n```\nAnything else?'
    point = await SimpleAgent(provider=ScriptedProvider([prose])).run("p", output_type=Point)
    assert point.output_value == Point(x=4)
    with pytest.raises(UserError, match="does not look like a JSON schema"):
        await SimpleAgent(provider=ScriptedProvider(["{}"])).run("p", output_type={"a": 1})


async def test_the_retry_request_is_streamed_as_a_user_chunk() -> None:
    chunks: list[StreamChunk] = []
    provider = ScriptedProvider(["nope", "[1]"])
    await SimpleAgent(provider=provider).run("list?", chunks.append, output_type=list[int])
    users = [c.content for c in chunks if c.role == "user"]
    assert users[0] == "list?"
    assert len(users) == 2 and "not valid JSON" in users[1]


async def test_a_run_with_output_type_that_hits_max_turns_raises() -> None:
    agent = SimpleAgent(provider=ScriptedProvider(["not json"]), max_turns=1)
    with pytest.raises(RunError, match="max_turns") as info:
        await agent.run("City?", output_type=City)
    assert info.value.result is not None
    assert info.value.result.output_value is None


@pytest.mark.parametrize(
    "answer",
    [
        '```JSON\n{"name": "Oslo", "population": 1}\n```',
        '```json\r\n{"name": "Oslo", "population": 1}\r\n```',
        'First:\n```python\nprint("hi")\n```\nThen:\n```\n{"name": "Oslo", "population": 1}\n```',
        # Fences that bend the rules still count.
        'Here you go: ```json\n{"name": "Oslo", "population": 1}\n```',
        '```json\n{"name": "Oslo", "population": 1}```',
    ],
)
async def test_json_is_found_in_any_fenced_block(answer: str) -> None:
    result = await SimpleAgent(provider=ScriptedProvider([answer])).run("x", output_type=City)
    assert result.output_value == City(name="Oslo", population=1)


async def test_nan_is_not_json() -> None:
    def second(messages: Sequence[Message]) -> str:
        assert "not valid JSON" in messages[-1].text
        return "1.5"

    result = await SimpleAgent(provider=ScriptedProvider(["NaN", second])).run(
        "x", output_type={"type": "number"}
    )
    assert result.output_value == 1.5


async def test_out_of_range_numbers_are_not_json() -> None:
    def second(messages: Sequence[Message]) -> str:
        assert "not valid JSON" in messages[-1].text
        return "2.5"

    provider = ScriptedProvider(["1e999", second])
    result = await SimpleAgent(provider=provider).run("x", output_type=float)
    assert result.output_value == 2.5
    json.loads(result.to_json(allow_nan=False))
