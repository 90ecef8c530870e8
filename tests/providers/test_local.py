"""LocalProvider on the real embedded model (SmolLM2-135M-Instruct, in-process)."""

from __future__ import annotations

import asyncio
import shutil
import threading
from pathlib import Path
from typing import Any

import jsonschema
import llama_cpp
import pytest
from llama_cpp.llama_chat_format import Jinja2ChatFormatter

from heron import Message, ProviderError, SimpleAgent, StreamChunk, ToolCall, UserError
from heron.providers import LocalProvider, default_model_path
from heron.providers._local_prompt import template_messages
from heron.providers.local import _repeating
from heron.tools import get_current_time

from .gguf_edit import with_metadata

TIME = get_current_time.schema


@pytest.fixture(scope="module")
def provider() -> LocalProvider:
    # Short replies keep the suite fast; the model and its settings are the defaults.
    return LocalProvider(max_tokens=96)


def _local_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("heron-local-")]


async def _threads_finish(deadline: float = 10.0) -> bool:
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline
    while _local_threads():
        if loop.time() > end:
            return False
        await asyncio.sleep(0.01)
    return True


@pytest.mark.slow
async def test_the_time_question_is_answered_after_a_real_tool_call(
    provider: LocalProvider,
) -> None:
    agent = SimpleAgent(provider=provider, tools=[get_current_time])
    result = await agent.run("What time is it in UTC?")
    assert [c.name for c in result.tool_calls] == ["get-current-time"]
    call = result.tool_calls[0]
    jsonschema.validate(call.arguments, TIME.input_schema)
    assert not call.is_error and call.result
    assert result.reply.strip()
    assert result.stop_reason == "end_turn"
    assert result.input_tokens > 0 and result.output_tokens > 0


@pytest.mark.slow
async def test_a_routed_call_is_asked_with_only_the_routed_tools_in_the_prompt(
    provider: LocalProvider, tmp_path: Path
) -> None:
    """The call's form is the grammar's: the other tools' schemas would only make a small
    model read more (a node's file request waited minutes on every tool's schema)."""
    from heron.tools import filesystem_tools

    question = [Message.user("What time is it in UTC?")]
    alone = await provider.chat(question, tools=[TIME])
    others = [t.schema for t in filesystem_tools(tmp_path)]
    among = await provider.chat(question, tools=[*others, TIME])
    assert [c.name for c in alone.tool_calls] == [c.name for c in among.tool_calls]
    assert [c.name for c in among.tool_calls] == ["get-current-time"]
    assert among.input_tokens == alone.input_tokens


@pytest.mark.slow
async def test_a_routed_call_reads_the_file_the_request_names(
    provider: LocalProvider, tmp_path: Path
) -> None:
    from heron.tools import filesystem_tools

    tools = [t.schema for t in filesystem_tools(tmp_path)]
    question = [Message.user("Read pyproject.toml here and report the package's version.")]
    reply = await provider.chat(question, tools=tools)
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("fs-read-file", {"path": "pyproject.toml"})
    ]


@pytest.mark.slow
async def test_text_streams_in_deltas_that_add_up_to_the_reply(provider: LocalProvider) -> None:
    chunks: list[StreamChunk] = []
    response = await provider.chat(
        [Message.user("Say hello in one sentence.")], on_chunk=chunks.append
    )
    deltas = [c.content for c in chunks if c.content]
    assert len(deltas) > 1
    assert "".join(deltas) == response.content
    assert chunks[-1].done and not chunks[-1].content
    assert sum(c.done for c in chunks) == 1
    assert response.tool_calls == () and response.stop_reason == "end_turn"


@pytest.mark.slow
async def test_token_counts_are_the_models_own(provider: LocalProvider) -> None:
    messages = [Message.system("Answer briefly."), Message.user("Name a colour.")]
    chunks: list[StreamChunk] = []
    response = await provider.chat(messages, on_chunk=chunks.append)
    # Count independently with llama.cpp's own tokenizer and the model's template.
    llm = llama_cpp.Llama(str(default_model_path()), n_ctx=512, verbose=False, vocab_only=True)
    template = llm.metadata["tokenizer.chat_template"]
    formatter = Jinja2ChatFormatter(template, eos_token="<|im_end|>", bos_token="<|im_start|>")
    prompt = formatter(messages=template_messages(messages, [])).prompt
    assert response.input_tokens == len(llm.tokenize(prompt.encode(), add_bos=False, special=True))
    generated = llm.tokenize(response.content.encode(), add_bos=False, special=True)
    llm.close()
    assert abs(response.output_tokens - len(generated)) <= 2  # re-tokenising may merge a pair


@pytest.mark.slow
async def test_a_tool_call_streams_as_its_own_chunk_before_done(provider: LocalProvider) -> None:
    chunks: list[StreamChunk] = []
    response = await provider.chat(
        [Message.user("What time is it in Tokyo?")], tools=[TIME], on_chunk=chunks.append
    )
    assert response.stop_reason == "tool_use"
    streamed = [c.tool_calls for c in chunks if c.tool_calls]
    assert all(len(calls) == 1 for calls in streamed)
    assert tuple(calls[0] for calls in streamed) == response.tool_calls
    assert chunks[-1].done and not chunks[-1].tool_calls
    for call in response.tool_calls:
        assert call.name == "get-current-time"
        jsonschema.validate(call.arguments, TIME.input_schema)


@pytest.mark.slow
async def test_a_request_no_tool_serves_gets_a_text_answer(provider: LocalProvider) -> None:
    response = await provider.chat([Message.user("Write a haiku about rivers.")], tools=[TIME])
    assert response.tool_calls == ()
    assert response.content.strip()


@pytest.mark.slow
async def test_without_on_chunk_the_same_reply_comes_back(provider: LocalProvider) -> None:
    messages = [Message.user("What is the capital of France?")]
    streamed = await provider.chat(messages, on_chunk=lambda _c: None)
    plain = await provider.chat(messages)
    assert plain.content == streamed.content  # greedy decoding: the same answer


@pytest.mark.slow
async def test_max_tokens_stops_the_reply(tmp_path: Path) -> None:
    short = LocalProvider(max_tokens=5)
    response = await short.chat([Message.user("Write a long story about a dragon.")])
    assert response.stop_reason == "max_tokens"
    assert response.output_tokens == 5


@pytest.mark.slow
async def test_cancelling_stops_generation_promptly(provider: LocalProvider) -> None:
    first = asyncio.Event()

    def on_chunk(chunk: StreamChunk) -> None:
        if chunk.content:
            first.set()

    long = LocalProvider(max_tokens=2000)
    task = asyncio.create_task(
        long.chat([Message.user("Write a very long story about a dragon.")], on_chunk=on_chunk)
    )
    await asyncio.wait_for(first.wait(), 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await _threads_finish(), "the generation thread kept running after cancel"
    # The model is free again: a new request is served.
    response = await provider.chat([Message.user("Say yes.")])
    assert response.content


@pytest.mark.slow
async def test_concurrent_requests_share_the_model_safely(provider: LocalProvider) -> None:
    # The contract is isolation, not bit-exact numerics (which follow the SIMD path and
    # batch shapes of the llama.cpp build): each reply answers its own question, and
    # what streams to each caller is exactly its own reply, nothing of the other's.
    questions = {"What is 2 + 2?": "4", "What colour is the sky?": "blue"}
    streams: dict[str, list[str]] = {q: [] for q in questions}

    def ask(question: str) -> Any:
        def collect(chunk: StreamChunk) -> None:
            streams[question].append(chunk.content)

        return provider.chat([Message.user(question)], on_chunk=collect)

    replies = await asyncio.gather(*(ask(q) for q in questions))
    for (question, expected), reply in zip(questions.items(), replies, strict=True):
        assert expected in reply.content, (question, reply.content)
        assert "".join(streams[question]) == reply.content
        assert 0 < reply.output_tokens <= provider.max_tokens
    assert "sky" not in replies[0].content and "blue" not in replies[0].content


async def test_a_conversation_longer_than_the_context_is_a_provider_error() -> None:
    tiny = LocalProvider(n_ctx=256)
    with pytest.raises(ProviderError, match="does not fit") as caught:
        await tiny.chat([Message.user("word " * 400)])
    assert caught.value.code == "context_length_exceeded"


def test_capabilities_come_from_the_gguf_metadata(provider: LocalProvider) -> None:
    caps = provider.capabilities
    assert provider.model_context == 8192
    assert caps.context_window == 8192
    assert caps.supports_tools and not caps.supports_images and not caps.supports_thinking
    assert LocalProvider(n_ctx=2048).capabilities.context_window == 2048


def test_the_model_file_comes_from_the_argument_or_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "other.gguf"
    shutil.copyfile(default_model_path(), copy)
    monkeypatch.setenv("HERON_LOCAL_MODEL", str(copy))
    assert LocalProvider().model_path == copy.resolve()
    assert LocalProvider(default_model_path()).model_path == default_model_path().resolve()
    monkeypatch.delenv("HERON_LOCAL_MODEL")
    assert LocalProvider().model_path == default_model_path().resolve()


def test_loading_is_lazy_and_shared_per_file(provider: LocalProvider) -> None:
    other = LocalProvider()
    assert other._load() is provider._load()
    assert LocalProvider(n_ctx=1024)._load() is not provider._load()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_ctx": 10}, "n_ctx must be at least 256"),
        ({"threads": 0}, "threads must be at least 1"),
        ({"max_tokens": 0}, "max_tokens must be at least 1"),
        ({"think_effort": 1.5}, "think_effort must be between 0 and 1"),
    ],
)
def test_bad_options_are_refused(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(UserError, match=message):
        LocalProvider(**kwargs)  # type: ignore[arg-type]


def test_a_missing_or_bad_model_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="local model file not found"):
        LocalProvider(tmp_path / "missing.gguf")
    junk = tmp_path / "junk.gguf"
    junk.write_text("hello")
    with pytest.raises(UserError, match="not a GGUF model file"):
        LocalProvider(junk)


def test_think_limit_follows_think_effort() -> None:
    assert LocalProvider().think_limit() is None
    assert LocalProvider(think_effort=0).think_limit() == 0
    # Reasoning may take the budget up to a reserve left for the answer.
    assert LocalProvider(think_effort=1, max_tokens=512).think_limit() == 448
    assert LocalProvider(think_effort=1, max_tokens=80).think_limit() == 40


@pytest.mark.slow
async def test_a_routed_call_without_room_is_a_clear_error() -> None:
    small = LocalProvider(n_ctx=512)
    with pytest.raises(ProviderError) as caught:
        await small.chat([Message.user("word " * 274 + " what time is it?")], tools=[TIME])
    assert caught.value.code in ("context_length_exceeded", "truncated_tool_call")
    assert "llama_decode" not in str(caught.value)
    assert "context" in str(caught.value)


@pytest.mark.slow
async def test_cancelling_during_a_long_prompt_stops_within_a_slice() -> None:
    provider = LocalProvider()
    task = asyncio.create_task(provider.chat([Message.user("word " * 7000)]))
    # Cancel while the 7,000-token prompt is being read (about a minute in one go).
    done, _ = await asyncio.wait([task], timeout=0.5)
    assert not done, "the prompt was read faster than expected; the test proves nothing"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # A slice takes a few seconds here, many more when other test workers share the cores;
    # the whole prompt would take minutes, so the bound still tells the two apart.
    assert await _threads_finish(deadline=30.0), "prompt evaluation went on after cancel"


@pytest.mark.slow
async def test_a_cut_off_answer_ends_the_run_with_max_tokens() -> None:
    agent = SimpleAgent(provider=LocalProvider(max_tokens=5))
    result = await agent.run("Write a long story about a dragon.")
    assert result.stop_reason == "max_tokens"
    assert not result.stopped
    assert result.output_tokens == 5


@pytest.mark.slow
async def test_a_model_may_open_a_call_by_itself_when_routing_is_off() -> None:
    # An earlier exchange shows the model the format; it then calls on its own.
    history = [
        Message.user("What time is it in London?"),
        Message.assistant(
            "",
            tool_calls=[
                ToolCall(id="c1", name="get-current-time", arguments={"timezone": "Europe/London"})
            ],
        ),
        Message.tool(
            "2026-11-30T06:00:00+00:00 (Monday, Europe/London)",
            tool_call_id="c1",
            tool_name="get-current-time",
        ),
        Message.assistant("It is 06:00 in London."),
        Message.user("And what time is it in Berlin?"),
    ]
    provider = LocalProvider(route_tools=False, max_tokens=96)
    chunks: list[StreamChunk] = []
    response = await provider.chat(history, tools=[TIME], on_chunk=chunks.append)
    assert response.stop_reason == "tool_use"
    [call] = response.tool_calls
    assert (call.name, call.arguments) == ("get-current-time", {"timezone": "Europe/Berlin"})
    assert not any("<tool_call>" in c.content for c in chunks)


def test_loading_waits_for_the_first_request() -> None:
    from heron.providers import _local_model

    provider = LocalProvider(n_ctx=1536)
    key = (provider.model_path, 1536, None, provider.repack)
    assert key not in _local_model._models
    provider._load()
    assert key in _local_model._models


def test_routing_is_on_for_small_models_only(tmp_path: Path) -> None:
    assert LocalProvider().route_tools  # 135M parameters
    big = with_metadata(default_model_path(), tmp_path / "big.gguf", "general.size_label", "7B")
    assert not LocalProvider(big).route_tools
    assert LocalProvider(big, route_tools=True).route_tools


@pytest.mark.parametrize(
    ("tokens", "looping"),
    [
        ([1, 2, 3] * 16, True),  # a 3-token cycle over 48 tokens
        ([7] * 48, True),
        ([7] * 47, False),
        (list(range(40)) + list(range(40)) + list(range(40)), True),  # three 40-token lines
        (list(range(100)) * 2, False),  # only twice
        ([1, 2, 3] * 16 + [4], False),  # the loop broke
        ([], False),
    ],
)
def test_repeating_spots_token_loops(tokens: list[int], looping: bool) -> None:
    assert _repeating(tokens) is looping


@pytest.mark.slow
async def test_a_routed_model_answers_once_its_tool_has_answered(provider: LocalProvider) -> None:
    # Left to choose after a tool result, the tiny model calls again and again
    # until max_turns with this history (a question asked before and not
    # answered); routed, it is asked for the answer with no tools on offer.
    earlier = [
        Message.user("What time is it in UTC?"),
        Message.assistant("(The user cancelled this answer.)"),
    ]
    state = SimpleAgent(provider=provider).state()
    state["messages"] = state["messages_full"] = [m.to_dict() for m in earlier]
    agent = SimpleAgent(provider=provider, tools=[get_current_time], state=state, max_turns=4)
    result = await agent.run("What time is it in UTC?")
    assert (result.turns, len(result.tool_calls), result.stop_reason) == (2, 1, "end_turn")
    assert result.reply.strip()
