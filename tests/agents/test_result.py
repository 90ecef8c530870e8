"""RunResult: populated fields, export, JSON, checksum and reconstruction."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from datetime import UTC, datetime

import pytest

from heron import (
    Capabilities,
    ChatResponse,
    ChunkCallback,
    Message,
    Provider,
    ProviderMetadata,
    RunResult,
    SimpleAgent,
    ToolCall,
    ToolCallRecord,
    ToolSchema,
    UserError,
    tool,
)
from heron.testing import Reply, ScriptedProvider, call


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def test_a_run_fills_every_field() -> None:
    agent = SimpleAgent(
        provider=ScriptedProvider([call("add", a=1, b=2), "3"]), tools=[add], name="calc"
    )
    before = datetime.now(UTC)
    result = await agent.run("1+2")

    assert result.agent_name == "calc"
    assert result.reply == result.last_text_content == "3"
    assert result.output == [Message.assistant("3")]
    assert [(c.name, c.arguments, c.result, c.is_error) for c in result.tool_calls] == [
        ("add", {"a": 1, "b": 2}, "3", False)
    ]
    assert result.tool_calls[0].id.startswith("call_")
    assert result.has_tool_calls
    assert result.input_tokens > 0 and result.output_tokens > 0
    assert result.duration > 0
    assert result.delegated_by is None
    assert result.stop_reason == "end_turn"
    assert result.turns == 2
    assert before <= result.created_at <= datetime.now(UTC)
    assert [m.role for m in result.messages] == ["user", "assistant", "tool", "assistant"]
    assert len(result.id) == 36


async def test_each_run_gets_its_own_id_and_messages() -> None:
    agent = SimpleAgent(provider=ScriptedProvider(["a", "b"]))
    r1, r2 = await agent.run("1"), await agent.run("2")
    assert r1.id != r2.id
    assert [m.text for m in r2.messages] == ["2", "b"]


def test_export_is_compact() -> None:
    result = RunResult(agent_name="a")
    exported = result.export()
    assert set(exported) == {
        "agent_name",
        "output",
        "tool_calls",
        "created_at",
        "id",
        "checksum",
        "duration",
    }
    assert None not in exported.values()


def test_export_keeps_set_fields() -> None:
    result = RunResult(
        agent_name="analyst",
        delegated_by="manager",
        output=[Message.assistant("hi")],
        input_tokens=512,
        output_tokens=128,
        duration=2.34,
        stop_reason="end_turn",
    )
    exported = result.export()
    assert exported["delegated_by"] == "manager"
    assert (exported["input_tokens"], exported["output_tokens"]) == (512, 128)
    assert exported["duration"] == 2.34
    assert exported["stop_reason"] == "end_turn"
    assert json.loads(result.to_json()) == exported


def test_checksum_is_sha256_of_output_tool_calls_and_epoch() -> None:
    created = datetime(2026, 4, 18, 12, 0, 0, 750_000, tzinfo=UTC)
    result = RunResult(
        agent_name="a",
        output=[Message.assistant("Paris")],
        tool_calls=[ToolCallRecord(id="c1", name="lookup", arguments={"q": "x"}, result="r")],
        created_at=created,
    )
    payload = {
        "output": [{"role": "assistant", "content": "Paris"}],
        "tool_calls": [{"id": "c1", "name": "lookup", "arguments": {"q": "x"}, "result": "r"}],
        "created_at": 1776513600,
    }
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    assert result.checksum == hashlib.sha256(blob.encode()).hexdigest()
    # Sub-second differences do not change it; the content does.
    same = RunResult(
        agent_name="b",
        output=result.output,
        tool_calls=result.tool_calls,
        created_at=created.replace(microsecond=0),
    )
    assert same.checksum == result.checksum
    other = RunResult(agent_name="a", output=[Message.assistant("Lyon")], created_at=created)
    assert other.checksum != result.checksum


async def test_from_dict_round_trips_export_and_to_dict() -> None:
    agent = SimpleAgent(provider=ScriptedProvider([call("add", a=1, b=2), "3"]), tools=[add])
    result = await agent.run("1+2")

    restored = RunResult.from_dict(json.loads(result.to_json()))
    assert restored.export() == result.export()
    assert restored.messages == []

    full = RunResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert full.messages == result.messages
    assert full.checksum == result.checksum


def test_from_dict_detects_tampering() -> None:
    data = RunResult(agent_name="a", output=[Message.assistant("yes")]).export()
    data["output"][0]["content"] = "no"
    with pytest.raises(ValueError, match="checksum"):
        RunResult.from_dict(data)


def test_from_dict_tolerates_missing_optional_keys() -> None:
    restored = RunResult.from_dict({"agent_name": "a"})
    assert restored.input_tokens == 0
    assert restored.stop_reason is None
    assert restored.reply == ""


async def test_to_json_can_keep_the_messages() -> None:
    result = await SimpleAgent(provider=ScriptedProvider(["hi"])).run("hello")
    restored = RunResult.from_dict(json.loads(result.to_json(messages=True)))
    assert restored.messages == result.messages
    assert "messages" not in json.loads(result.to_json())


@pytest.mark.parametrize(
    ("output", "complaint"),
    [
        (
            "Paris",
            r"output must be a list of Message .*such as \[Message.assistant\(text\)\], not str",
        ),
        (
            [Message.assistant("ok"), "Paris"],
            r"output\[1\] must be a Message or its to_dict\(\) data, not str",
        ),
        ([{"content": "no role"}], r"output\[0\] is not a valid Message: missing 'role'"),
        (
            [{"role": "robot", "content": "x"}],
            r"output\[0\] is not a valid Message: unknown message role",
        ),
        ([{"role": "assistant", "content": 5}], r"output\[0\] is not a valid Message"),
        (None, "output must be a list of Message"),
    ],
)
def test_malformed_output_is_refused_at_construction(output: object, complaint: str) -> None:
    with pytest.raises(UserError, match=complaint):
        RunResult(agent_name="a", output=output)  # type: ignore[arg-type]


def test_output_and_tool_calls_may_be_given_as_their_dicts() -> None:
    # As the seed allows hashes: entries in to_dict() form are rebuilt at once.
    record = ToolCallRecord(id="c1", name="lookup", arguments={"q": "x"}, result="r")
    result = RunResult(
        agent_name="a",
        output=[{"role": "assistant", "content": "Paris"}],  # type: ignore[list-item]
        tool_calls=[record.to_dict()],  # type: ignore[list-item]
    )
    assert result.output == [Message.assistant("Paris")]
    assert result.tool_calls == [record]
    assert result.reply == "Paris"
    assert RunResult.from_dict(result.export()).checksum == result.checksum


def test_malformed_tool_calls_and_messages_are_refused_at_construction() -> None:
    with pytest.raises(UserError, match=r"tool_calls\[0\] must be a ToolCallRecord"):
        RunResult(agent_name="a", tool_calls=[("add", {"a": 1})])  # type: ignore[list-item]
    with pytest.raises(UserError, match=r"tool_calls\[0\] is not a valid ToolCallRecord"):
        RunResult(agent_name="a", tool_calls=[{"name": "add"}])  # type: ignore[list-item]
    with pytest.raises(UserError, match="ToolCallRecord arguments must be a dict"):
        ToolCallRecord(id="c1", name="add", arguments=[1, 2])  # type: ignore[arg-type]
    with pytest.raises(UserError, match=r"messages\[0\] must be a Message"):
        RunResult(agent_name="a", messages=[42])  # type: ignore[list-item]
    with pytest.raises(UserError, match="duration must be seconds"):
        RunResult(agent_name="a", duration="2s")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="input_tokens must be an int"):
        RunResult(agent_name="a", input_tokens=None)  # type: ignore[arg-type]
    with pytest.raises(UserError, match=r"tool_calls\[0\] is not a valid ToolCallRecord: .*dur"):
        RunResult(agent_name="a", tool_calls=[{"id": "c", "name": "n", "duration": "slow"}])  # type: ignore[list-item]
    with pytest.raises(UserError, match="created_at must be a datetime"):
        RunResult(agent_name="a", created_at="2026-04-18")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="content must be a str or a tuple"):
        Message(role="assistant", content=["not", "parts"])  # type: ignore[arg-type]


async def test_reply_falls_back_to_the_thinking_of_a_model_answering_only_in_it() -> None:
    # Some models (qwen3 on Ollama) route their whole answer through reasoning.
    provider = ScriptedProvider([Reply(text="", thinking="The answer is 4.")])
    result = await SimpleAgent(provider=provider).run("2+2?")
    assert result.reply == "The answer is 4."
    assert result.output == [Message.assistant("The answer is 4.")]


async def test_reply_prefers_content_to_thinking() -> None:
    provider = ScriptedProvider([Reply(text="4", thinking="2 and 2 make 4.")])
    assert (await SimpleAgent(provider=provider).run("2+2?")).reply == "4"


async def test_reply_falls_back_to_the_latest_text_of_the_same_run() -> None:
    provider = ScriptedProvider(
        [Reply(text="Adding them now.", tool_calls=[call("add", a=2, b=2)]), "", "", "ok"]
    )
    agent = SimpleAgent(provider=provider, tools=[add])
    first = await agent.run("2+2?")
    assert first.reply == "Adding them now."
    # Only this run's text counts: an empty answer never borrows an earlier run's.
    second = await agent.run("And again?")
    assert second.reply == ""
    assert second.output == []


class _MetadataProvider(Provider):
    """A provider whose turns carry vendor metadata, the first one all of it."""

    name = "meta"

    def __init__(self) -> None:
        self.turn = 0

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities()

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] | None = None,
        on_chunk: ChunkCallback | None = None,
    ) -> ChatResponse:
        self.turn += 1
        if self.turn == 1:
            return ChatResponse(
                tool_calls=(ToolCall(id="c1", name="add", arguments={"a": 1, "b": 2}),),
                input_tokens=40,
                output_tokens=5,
                stop_reason="tool_use",
                finish_reason="tool_calls",
                request_id="req_1",
                response_id="chatcmpl-1",
                cached_input_tokens=32,
                cache_write_tokens=8,
            )
        if self.turn == 2:
            return ChatResponse(content="3", input_tokens=50, output_tokens=1)  # none given
        return ChatResponse(content="done", finish_reason="stop")


async def test_each_turns_provider_metadata_is_kept_in_the_export() -> None:
    agent = SimpleAgent(provider=_MetadataProvider(), tools=[add])
    result = await agent.run("1+2")
    assert result.reply == "3"
    assert result.provider_metadata == [
        ProviderMetadata(
            turn=1,
            request_id="req_1",
            response_id="chatcmpl-1",
            finish_reason="tool_calls",
            cached_input_tokens=32,
            cache_write_tokens=8,
        )
    ]
    exported = json.loads(result.to_json())
    assert exported["provider_metadata"] == [
        {
            "turn": 1,
            "request_id": "req_1",
            "response_id": "chatcmpl-1",
            "finish_reason": "tool_calls",
            "cached_input_tokens": 32,
            "cache_write_tokens": 8,
        }
    ]
    assert RunResult.from_dict(exported).provider_metadata == result.provider_metadata
    # Turns are counted within the run: the next run's first turn is turn 1 again.
    second = await agent.run("and?")
    assert second.provider_metadata == [ProviderMetadata(turn=1, finish_reason="stop")]
    # A run whose provider gives none exports no such key.
    plain = await SimpleAgent(provider=ScriptedProvider(["hi"])).run("hello")
    assert plain.provider_metadata == [] and "provider_metadata" not in plain.export()
    with pytest.raises(UserError, match=r"provider_metadata\[0\]"):
        RunResult(agent_name="a", provider_metadata=[{"request_id": "x"}])  # type: ignore[list-item]


def test_a_response_pickled_before_the_metadata_fields_existed_gives_none() -> None:
    # A daemon replays recorded (pickled) turns; one recorded by an older Heron
    # has no slots for the metadata fields at all.
    response = ChatResponse(content="x", finish_reason="stop", request_id="req_1")
    old = ChatResponse.__new__(ChatResponse)
    old.__setstate__(response.__getstate__()[:7])  # type: ignore[attr-defined]
    assert old.content == "x"
    assert ProviderMetadata.of(3, old) is None
    assert ProviderMetadata.of(3, response) == ProviderMetadata(
        turn=3, finish_reason="stop", request_id="req_1"
    )
