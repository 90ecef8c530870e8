"""RunResult with sub-runs: the delegation tree survives export, JSON, checksum and rebuild."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from heron import Message, RunResult, SimpleAgent, StreamChunk, ToolCallRecord
from heron.testing import ScriptedProvider, call


async def team_run() -> RunResult:
    """lead -> manager -> researcher, each a worker tool of the one above."""
    researcher = SimpleAgent(provider=ScriptedProvider(["Five."]), name="researcher")
    manager = SimpleAgent(
        provider=ScriptedProvider([call("researcher", task="Count them"), "There are five."]),
        name="manager",
        tools=[researcher.as_tool()],
    )
    lead = SimpleAgent(
        provider=ScriptedProvider([call("manager", task="How many?"), "Five herons."]),
        name="lead",
        tools=[manager.as_tool()],
    )
    return await lead.run("How many herons?")


async def test_export_nests_sub_runs_and_round_trips() -> None:
    result = await team_run()
    data = json.loads(result.to_json())

    manager = data["tool_calls"][0]["runs"][0]
    researcher = manager["tool_calls"][0]["runs"][0]
    assert (manager["agent_name"], manager["delegated_by"]) == ("manager", "lead")
    assert (researcher["agent_name"], researcher["delegated_by"]) == ("researcher", "manager")
    assert "messages" not in manager

    restored = RunResult.from_dict(data)
    assert restored.export() == result.export()
    assert restored.checksum == result.checksum
    assert [r.agent_name for r in restored.walk()] == ["lead", "manager", "researcher"]
    assert restored.tokens_by_agent() == result.tokens_by_agent()
    assert restored.own_input_tokens == result.own_input_tokens


async def test_to_dict_keeps_every_level_of_messages() -> None:
    result = await team_run()
    data = json.loads(json.dumps(result.to_dict()))
    researcher = data["tool_calls"][0]["runs"][0]["tool_calls"][0]["runs"][0]
    assert [m["content"] for m in researcher["messages"]] == ["Count them", "Five."]

    restored = RunResult.from_dict(data)
    assert [[m.text for m in r.messages] for r in restored.walk()] == [
        [m.text for m in r.messages] for r in result.walk()
    ]
    assert restored.checksum == result.checksum  # messages are not part of it


# The checksum is seed 002's content fingerprint: output, tool calls, created_at.
CHANGES = [
    ("created_at", "2020-01-01T00:00:00+00:00"),
    ("output", []),
]


@pytest.mark.parametrize(("field", "value"), CHANGES)
@pytest.mark.parametrize("depth", [0, 1, 2])
async def test_altering_the_content_at_any_depth_is_detected(
    field: str, value: object, depth: int
) -> None:
    data = json.loads((await team_run()).to_json())
    run = data
    for _ in range(depth):
        run = run["tool_calls"][0]["runs"][0]
    if isinstance(value, int) and field in run:
        value = run[field] + value
    assert run.get(field) != value
    run[field] = value
    with pytest.raises(ValueError, match="checksum"):
        RunResult.from_dict(data)


async def test_the_same_content_from_another_run_has_the_same_checksum() -> None:
    # Deduplication: ids, names and token counts are not content.
    data = json.loads((await team_run()).to_json())
    original = RunResult.from_dict(data)
    data["id"], data["agent_name"], data["input_tokens"] = "copy", "someone", 1
    data.pop("checksum")
    assert RunResult.from_dict(data).checksum == original.checksum


async def test_altering_a_tool_call_result_is_detected() -> None:
    data = json.loads((await team_run()).to_json())
    data["tool_calls"][0]["runs"][0]["tool_calls"][0]["result"] = "Six."
    with pytest.raises(ValueError, match="checksum"):
        RunResult.from_dict(data)


def test_the_checksum_covers_sub_runs() -> None:
    created = datetime(2026, 4, 18, 12, tzinfo=UTC)

    def parent(answer: str) -> RunResult:
        sub = RunResult(
            agent_name="w", output=[Message.assistant(answer)], created_at=created, id="r1"
        )
        record = ToolCallRecord(id="c1", name="w", arguments={"task": "t"}, runs=(sub,))
        return RunResult(agent_name="p", tool_calls=[record], created_at=created, id="r0")

    assert parent("yes").checksum == parent("yes").checksum
    assert parent("yes").checksum != parent("no").checksum


def test_own_tokens_and_the_split_by_agent_add_up() -> None:
    inner = RunResult(agent_name="w", input_tokens=30, output_tokens=5)
    other = RunResult(agent_name="w", input_tokens=10, output_tokens=1)
    records = [
        ToolCallRecord(id="c1", name="w", arguments={}, runs=(inner,)),
        ToolCallRecord(id="c2", name="w", arguments={}, runs=(other,)),
    ]
    outer = RunResult(agent_name="p", tool_calls=records, input_tokens=100, output_tokens=20)
    assert (outer.own_input_tokens, outer.own_output_tokens) == (60, 14)
    assert outer.sub_runs == [inner, other]
    # Agents sharing a name share an entry.
    assert outer.tokens_by_agent() == {"p": (60, 14), "w": (40, 6)}


def test_a_record_without_runs_exports_as_before() -> None:
    record = ToolCallRecord(id="c1", name="t", arguments={})
    assert "runs" not in record.to_dict()
    assert ToolCallRecord.from_dict(record.to_dict()) == record


def test_chunks_carry_no_agent_unless_forwarded() -> None:
    assert StreamChunk(role="user").agent is None
