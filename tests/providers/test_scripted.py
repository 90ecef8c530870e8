"""The scripted provider: every kind of step, streaming like a real provider, bookkeeping."""

import asyncio
import itertools
from collections.abc import Sequence

import pytest

from heron import (
    Capabilities,
    ChatResponse,
    ChunkCallback,
    Message,
    ScriptExhaustedError,
    StreamChunk,
    ToolCall,
    ToolSchema,
    UserError,
)
from heron.providers import Provider
from heron.testing import Reply, ScriptedProvider, Step, call

HELLO = [Message.user("Hello")]
ADD = ToolSchema(
    name="add",
    description="Add two integers.",
    input_schema={"type": "object", "properties": {"a": {"type": "integer"}}},
)


def kind(chunk: StreamChunk) -> str:
    """What one assistant chunk carries."""
    if chunk.done:
        return "done"
    if chunk.tool_calls:
        return "call"
    if chunk.thinking is not None:
        return "thinking"
    return "content"


async def play(step: Step, messages: Sequence[Message] = HELLO) -> ChatResponse:
    return await ScriptedProvider([step]).chat(messages)


class TestSteps:
    async def test_str_is_the_answer(self) -> None:
        response = await play("Hello there.")
        assert response.content == "Hello there."
        assert response.tool_calls == ()
        assert response.thinking is None
        assert response.stop_reason == "end_turn"

    async def test_one_call(self) -> None:
        response = await play(call("add", a=1, b=2))
        assert response.content == ""
        assert response.tool_calls == (
            ToolCall(id="call_1", name="add", arguments={"a": 1, "b": 2}),
        )
        assert response.stop_reason == "tool_use"

    def test_call_merges_a_dict_and_keywords(self) -> None:
        assert call("add", {"a": 1, "b": 1}, b=2).arguments == {"a": 1, "b": 2}
        assert call("now").arguments == {}

    async def test_a_list_of_calls_is_one_turn(self) -> None:
        response = await play([call("add", a=1, b=2), call("now")])
        assert [(c.id, c.name) for c in response.tool_calls] == [
            ("call_1", "add"),
            ("call_2", "now"),
        ]
        assert response.stop_reason == "tool_use"

    async def test_reply_spells_out_a_whole_turn(self) -> None:
        response = await play(
            Reply(text="Let me add.", tool_calls=[call("add", a=1, b=2)], thinking="Use add.")
        )
        assert response.content == "Let me add."
        assert response.thinking == "Use add."
        assert [c.name for c in response.tool_calls] == ["add"]
        assert response.stop_reason == "tool_use"

    async def test_an_exception_instance_is_raised(self) -> None:
        error = ConnectionError("the model is down")
        provider = ScriptedProvider([error, "recovered"])
        with pytest.raises(ConnectionError) as raised:
            await provider.chat(HELLO)
        assert raised.value is error
        # The failed turn used its step: the script goes on from the next one.
        assert (await provider.chat(HELLO)).content == "recovered"

    async def test_a_sync_callable_receives_the_messages(self) -> None:
        seen: list[Sequence[Message]] = []

        def step(messages: Sequence[Message]) -> Step:
            seen.append(messages)
            return f"You said {messages[-1].text!r} in {len(messages)} messages."

        history = [Message.system("Be kind."), Message.user("Hi")]
        response = await play(step, history)
        assert response.content == "You said 'Hi' in 2 messages."
        assert list(seen[0]) == history

    async def test_an_async_callable_is_awaited(self) -> None:
        async def step(messages: Sequence[Message]) -> Step:
            await asyncio.sleep(0)
            return call("echo", text=messages[-1].text)

        response = await play(step)
        assert response.tool_calls[0].arguments == {"text": "Hello"}

    async def test_a_callable_may_return_a_callable(self) -> None:
        def outer(messages: Sequence[Message]) -> Step:
            async def inner(messages: Sequence[Message]) -> Step:
                return Reply(text=f"{len(messages)} deep", thinking="nested")

            return inner

        response = await play(outer)
        assert (response.content, response.thinking) == ("1 deep", "nested")

    async def test_a_callable_may_return_an_exception(self) -> None:
        with pytest.raises(TimeoutError, match="slow"):
            await play(lambda messages: TimeoutError("slow"))

    async def test_a_callable_may_raise(self) -> None:
        def step(messages: Sequence[Message]) -> Step:
            raise KeyError("missing")

        with pytest.raises(KeyError, match="missing"):
            await play(step)

    async def test_anything_else_is_not_a_step(self) -> None:
        with pytest.raises(TypeError, match="not a script step: 42"):
            await play(42)  # type: ignore[arg-type]

    async def test_explicit_ids_are_kept_and_others_numbered_by_position(self) -> None:
        response = await play([ToolCall(id="mine", name="a"), call("b")])
        assert [c.id for c in response.tool_calls] == ["mine", "call_2"]


async def test_ids_are_unique_across_turns_shrinking_history_and_resumes() -> None:
    provider = ScriptedProvider([[call("a"), call("b")], call("c"), call("d")])
    first = await provider.chat(HELLO)
    assert [c.id for c in first.tool_calls] == ["call_1", "call_2"]
    # Even when the history it is shown no longer holds them (compaction).
    second = await provider.chat(HELLO)
    assert [c.id for c in second.tool_calls] == ["call_3"]
    # A new provider resuming a saved conversation numbers on from what it is shown.
    history = [*HELLO, Message.assistant(tool_calls=[*first.tool_calls, *second.tool_calls])]
    resumed = await ScriptedProvider([call("e")]).chat(history)
    assert [c.id for c in resumed.tool_calls] == ["call_4"]


async def test_ids_start_over_per_provider() -> None:
    first = await ScriptedProvider([call("a")]).chat(HELLO)
    second = await ScriptedProvider([call("a")]).chat(HELLO)
    assert first.tool_calls[0].id == second.tool_calls[0].id == "call_1"


class TestStreaming:
    async def test_thinking_then_text_then_calls_then_done(self) -> None:
        provider = ScriptedProvider(
            [
                Reply(
                    thinking="The user wants two sums. Use the tool twice.",
                    text="Adding both pairs now.",
                    tool_calls=[call("add", a=1, b=2), call("add", a=3, b=4)],
                )
            ]
        )
        chunks: list[StreamChunk] = []
        response = await provider.chat(HELLO, on_chunk=chunks.append)

        kinds = [kind(c) for c in chunks]
        assert [k for k, _ in itertools.groupby(kinds)] == ["thinking", "content", "call", "done"]
        assert kinds.count("thinking") > 1  # incremental, not one block
        assert kinds.count("content") > 1
        assert kinds.count("call") == 2
        assert all(c.role == "assistant" for c in chunks)

        thinking = "".join(c.thinking or "" for c in chunks if kind(c) == "thinking")
        content = "".join(c.content for c in chunks if kind(c) == "content")
        assert thinking == response.thinking
        assert content == response.content

        calls = [c.tool_calls for c in chunks if kind(c) == "call"]
        assert all(len(one) == 1 for one in calls)
        assert tuple(one[0] for one in calls) == response.tool_calls

    async def test_the_done_chunk_is_last_and_carries_nothing(self) -> None:
        provider = ScriptedProvider([Reply(thinking="hmm", text="ok", tool_calls=[call("x")])])
        chunks: list[StreamChunk] = []
        await provider.chat(HELLO, on_chunk=chunks.append)
        assert [c.done for c in chunks] == [False] * (len(chunks) - 1) + [True]
        assert chunks[-1] == StreamChunk(role="assistant", done=True)

    async def test_a_chunk_carries_thinking_or_content_never_both(self) -> None:
        provider = ScriptedProvider([Reply(thinking="a b c", text="d e f")])
        chunks: list[StreamChunk] = []
        await provider.chat(HELLO, on_chunk=chunks.append)
        for c in chunks:
            assert not (c.thinking and c.content)
            assert not (c.thinking and c.tool_calls)
            if c.done:
                assert c.thinking is None
        thinking_chunks = [c for c in chunks if c.thinking]
        assert all(c.content == "" for c in thinking_chunks)

    @pytest.mark.parametrize(
        "text",
        [
            "word",
            "Two  spaces and a tab\there.",
            "  leading and trailing  ",
            "Lines\n\nand more lines\n",
            "\n",
            "unicode — café ☕ 漢字",
        ],
    )
    async def test_text_deltas_concatenate_back_exactly(self, text: str) -> None:
        chunks: list[StreamChunk] = []
        await ScriptedProvider([text]).chat(HELLO, on_chunk=chunks.append)
        deltas = [c.content for c in chunks if not c.done]
        assert all(deltas)
        assert "".join(deltas) == text

    async def test_an_empty_answer_streams_only_done(self) -> None:
        chunks: list[StreamChunk] = []
        await ScriptedProvider([""]).chat(HELLO, on_chunk=chunks.append)
        assert chunks == [StreamChunk(role="assistant", done=True)]

    async def test_a_call_only_turn_streams_calls_then_done(self) -> None:
        chunks: list[StreamChunk] = []
        await ScriptedProvider([call("now")]).chat(HELLO, on_chunk=chunks.append)
        assert [kind(c) for c in chunks] == ["call", "done"]
        assert chunks[0].content == ""

    async def test_an_async_callback_is_awaited_in_order(self) -> None:
        seen: list[str] = []

        async def on_chunk(chunk: StreamChunk) -> None:
            await asyncio.sleep(0)
            seen.append(kind(chunk))

        await ScriptedProvider([Reply(thinking="x y", text="a b")]).chat(HELLO, on_chunk=on_chunk)
        assert seen == ["thinking", "thinking", "content", "content", "done"]

    async def test_without_a_callback_the_response_is_the_same(self) -> None:
        script: list[Step] = [
            Reply(thinking="think", text="Answer text.", tool_calls=[call("a", x=1)]),
            "Plain.",
        ]
        streamed, quiet = ScriptedProvider(script), ScriptedProvider(script)
        for _ in script:
            chunks: list[StreamChunk] = []
            with_stream = await streamed.chat(HELLO, on_chunk=chunks.append)
            without = await quiet.chat(HELLO)
            assert chunks
            assert with_stream == without

    async def test_a_raising_step_streams_nothing(self) -> None:
        chunks: list[StreamChunk] = []
        with pytest.raises(RuntimeError):
            await ScriptedProvider([RuntimeError("no")]).chat(HELLO, on_chunk=chunks.append)
        assert chunks == []


class TestTokens:
    async def test_counts_are_positive(self) -> None:
        response = await play("")
        assert response.input_tokens > 0
        assert response.output_tokens > 0

    async def test_input_grows_with_the_history(self) -> None:
        provider = ScriptedProvider(["a", "b"])
        short = await provider.chat(HELLO)
        longer = await provider.chat([*HELLO, Message.assistant("a"), Message.user("more words")])
        assert longer.input_tokens > short.input_tokens

    async def test_input_counts_the_tools(self) -> None:
        provider = ScriptedProvider(["a", "b"])
        bare = await provider.chat(HELLO)
        with_tools = await provider.chat(HELLO, tools=[ADD])
        assert with_tools.input_tokens > bare.input_tokens

    async def test_output_grows_with_the_reply(self) -> None:
        provider = ScriptedProvider(
            ["Short.", "A much longer answer, with many more words in it.", call("add", a=1)]
        )
        short, longer, calling = [await provider.chat(HELLO) for _ in range(3)]
        assert longer.output_tokens > short.output_tokens
        assert calling.output_tokens > 1

    async def test_output_counts_thinking(self) -> None:
        provider = ScriptedProvider(["ok", Reply(text="ok", thinking="first this, then that")])
        plain = await provider.chat(HELLO)
        thoughtful = await provider.chat(HELLO)
        assert thoughtful.output_tokens > plain.output_tokens


class TestBookkeeping:
    async def test_requests_record_messages_and_tools(self) -> None:
        provider = ScriptedProvider(["one", "two"])
        await provider.chat(HELLO, tools=[ADD])
        history = [*HELLO, Message.assistant("one"), Message.user("again")]
        await provider.chat(history)
        first, second = provider.requests
        assert first.messages == tuple(HELLO)
        assert first.tools == (ADD,)
        assert first.tool_names == ["add"]
        assert second.messages == tuple(history)
        assert second.tools == ()

    async def test_requests_are_a_snapshot_of_the_history(self) -> None:
        history = list(HELLO)
        provider = ScriptedProvider(["x"])
        await provider.chat(history)
        history.append(Message.user("later"))
        assert len(provider.requests[0].messages) == 1

    async def test_remaining_counts_down(self) -> None:
        provider = ScriptedProvider(["a", call("b"), ValueError("c")])
        assert provider.remaining == 3
        await provider.chat(HELLO)
        await provider.chat(HELLO)
        assert provider.remaining == 1
        with pytest.raises(ValueError):
            await provider.chat(HELLO)
        assert provider.remaining == 0

    async def test_running_out_of_steps(self) -> None:
        provider = ScriptedProvider(["only"])
        await provider.chat(HELLO)
        with pytest.raises(ScriptExhaustedError) as raised:
            await provider.chat(HELLO)
        assert str(raised.value) == (
            "ScriptedProvider ran out of steps: the script has 1, and request 2 asked for another"
        )
        assert isinstance(raised.value, UserError)
        assert len(provider.requests) == 2  # the failed request is still recorded
        assert provider.remaining == 0

    async def test_an_empty_script_fails_at_once(self) -> None:
        with pytest.raises(ScriptExhaustedError, match="the script has 0, and request 1"):
            await ScriptedProvider([]).chat(HELLO)

    def test_default_capabilities(self) -> None:
        caps = ScriptedProvider([]).capabilities
        assert (caps.supports_tools, caps.supports_images, caps.supports_thinking) == (
            True,
            True,
            True,
        )

    def test_given_capabilities(self) -> None:
        caps = Capabilities(supports_images=False, context_window=1000)
        assert ScriptedProvider([], capabilities=caps).capabilities is caps

    def test_is_a_provider(self) -> None:
        provider = ScriptedProvider([])
        assert isinstance(provider, Provider)
        assert provider.name == "scripted"

    def test_the_script_is_copied(self) -> None:
        script: list[Step] = ["a"]
        provider = ScriptedProvider(script)
        script.append("b")
        assert provider.remaining == 1


class TestDelay:
    async def test_a_delayed_reply_still_answers(self) -> None:
        response = await play(Reply(text="late", delay=0.001))
        assert response.content == "late"

    async def test_the_delay_is_cancellable(self) -> None:
        reached = asyncio.Event()

        def step(messages: Sequence[Message]) -> Step:
            reached.set()
            return Reply(text="never", delay=60)

        chunks: list[StreamChunk] = []
        task = asyncio.create_task(ScriptedProvider([step]).chat(HELLO, on_chunk=chunks.append))
        await asyncio.wait_for(reached.wait(), timeout=5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, timeout=5)
        assert task.cancelled()
        assert chunks == []


def test_provider_is_abstract() -> None:
    with pytest.raises(TypeError):
        Provider()  # type: ignore[abstract]


async def test_a_minimal_custom_provider() -> None:
    class Echo(Provider):
        @property
        def capabilities(self) -> Capabilities:
            return Capabilities(context_window=10)

        async def chat(
            self,
            messages: Sequence[Message],
            *,
            tools: Sequence[ToolSchema] | None = None,
            on_chunk: ChunkCallback | None = None,
        ) -> ChatResponse:
            return ChatResponse(content=messages[-1].text)

    echo = Echo()
    assert (await echo.chat(HELLO)).content == "Hello"
    assert echo.name == "provider"
    assert echo.capabilities.compaction_threshold == 5


async def test_an_exception_class_step_is_raised() -> None:
    provider = ScriptedProvider([TimeoutError])
    with pytest.raises(TimeoutError):
        await provider.chat([Message.user("hi")])


async def test_id_less_calls_number_past_ids_given_in_the_same_turn() -> None:
    provider = ScriptedProvider([[call("a"), ToolCall(id="call_1", name="b")]])
    response = await provider.chat(HELLO)
    assert [c.id for c in response.tool_calls] == ["call_2", "call_1"]


async def test_a_callable_step_may_return_an_exception_class() -> None:
    provider = ScriptedProvider([lambda messages: PermissionError])
    with pytest.raises(PermissionError):
        await provider.chat(HELLO)


async def test_by_history_picks_the_step_from_the_conversation_not_the_call_count() -> None:
    provider = ScriptedProvider(["first", "second", "third"], by_history=True)
    fresh = await provider.chat([Message.user("hi")])
    resumed = await provider.chat(
        [Message.user("hi"), Message.assistant("first"), Message.user("more")]
    )
    again = await provider.chat([Message.user("another conversation")])
    assert [fresh.content, resumed.content, again.content] == ["first", "second", "first"]
    with pytest.raises(ScriptExhaustedError, match="request 4 asked"):
        await provider.chat([Message.user("x")] + [Message.assistant("a")] * 3)
