"""The loop under stress: cancellation, failing callbacks, odd providers, misuse."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from pydantic import BaseModel

from heron import (
    BaseAgent,
    Capabilities,
    ChatResponse,
    ChunkCallback,
    ImagePart,
    LocalToolClient,
    Message,
    Provider,
    RunError,
    SimpleAgent,
    Skill,
    StreamChunk,
    Tool,
    ToolCall,
    ToolContext,
    ToolSchema,
    UserError,
    tool,
)
from heron.testing import Reply, ScriptedProvider, call


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def assert_consistent(messages: Sequence[Message]) -> None:
    """Every tool call is answered, in order, right after the message that made it."""
    pending: list[str] = []
    for m in messages:
        if m.role == "tool":
            assert pending and m.tool_call_id == pending.pop(0), "result without its call"
        else:
            assert not pending, f"calls left unanswered: {pending}"
            pending = [c.id for c in m.tool_calls]
    assert not pending, f"calls left unanswered: {pending}"


class RecordingProvider(Provider):
    """A provider that answers from a list and reports no token usage, like some APIs."""

    name = "recording"

    def __init__(
        self,
        replies: list[ChatResponse] | Callable[[Sequence[Message]], ChatResponse],
        window: int = 128_000,
    ) -> None:
        self.replies = replies
        self.tools_args: list[object] = []
        self.requests: list[list[Message]] = []
        self._caps = Capabilities(context_window=window)

    @property
    def capabilities(self) -> Capabilities:
        return self._caps

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] | None = None,
        on_chunk: ChunkCallback | None = None,
    ) -> ChatResponse:
        self.tools_args.append(tools)
        self.requests.append(list(messages))
        if callable(self.replies):
            return self.replies(messages)
        return self.replies.pop(0)


# -- cancellation ------------------------------------------------------------


async def test_cancelling_a_one_call_turn_whose_tool_swallows_it_still_cancels() -> None:
    entered = asyncio.Event()

    @tool
    async def stubborn() -> str:
        """Cleans up and returns even when cancelled."""
        entered.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            return "cleaned up"
        return "finished"

    agent = SimpleAgent(provider=ScriptedProvider([call("stubborn"), "done"]), tools=[stubborn])
    task = asyncio.create_task(agent.run("go"))
    await asyncio.wait_for(entered.wait(), timeout=5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, timeout=5)
    assert agent.last_result is not None and agent.last_result.stop_reason == "cancelled"
    assert_consistent(agent.messages)
    assert agent.messages[-1].text == "cleaned up"  # what really happened is kept


@pytest.mark.parametrize("calls", [1, 2])
async def test_a_cancelled_error_from_inside_a_tool_is_that_tools_failure(calls: int) -> None:
    @tool
    async def flaky() -> str:
        """Its own sub-request was cancelled."""
        raise asyncio.CancelledError

    script = [[call("flaky")] * calls, "recovered"]
    agent = SimpleAgent(provider=ScriptedProvider(script), tools=[flaky])
    result = await asyncio.wait_for(agent.run("go"), timeout=5)
    assert result.reply == "recovered"
    assert all(r.is_error and "cancel" in r.result for r in result.tool_calls)


# -- failing callbacks -------------------------------------------------------


@pytest.mark.parametrize("calls", [1, 2])
async def test_a_failing_on_tool_call_hook_leaves_every_call_answered(calls: int) -> None:
    def hook(call: ToolCall) -> None:
        raise RuntimeError("hook broke")

    agent = SimpleAgent(
        provider=ScriptedProvider([[call("add", a=1, b=1)] * calls]),
        tools=[add],
        on_tool_call=hook,
    )
    with pytest.raises(RuntimeError, match="hook broke"):
        await agent.run("go")
    assert_consistent(agent.messages)
    assert [m.role for m in agent.messages].count("tool") == calls


@pytest.mark.parametrize("calls", [1, 2])
async def test_a_failing_callback_after_a_tool_ran_keeps_its_real_result(calls: int) -> None:
    side_effects: list[int] = []

    @tool
    async def transfer(amount: int) -> str:
        """Moves money."""
        side_effects.append(amount)
        return f"sent {amount}"

    def on_result(record: object) -> None:
        raise RuntimeError("logger down")

    agent = SimpleAgent(
        provider=ScriptedProvider([[call("transfer", amount=100)] * calls]),
        tools=[transfer],
        on_tool_result=on_result,
    )
    with pytest.raises(RuntimeError, match="logger down"):
        await agent.run("pay")
    assert side_effects == [100] * calls
    tool_messages = [m for m in agent.messages if m.role == "tool"]
    assert [(m.text, m.is_error) for m in tool_messages] == [("sent 100", False)] * calls
    assert agent.last_result is not None
    assert all(r.duration is not None for r in agent.last_result.tool_calls)


# -- what providers send -----------------------------------------------------


async def test_missing_and_repeated_call_ids_get_unique_ones() -> None:
    calls = [
        ToolCall(id="", name="add", arguments={"a": 1, "b": 1}),
        ToolCall(id="dup", name="add", arguments={"a": 2, "b": 2}),
        ToolCall(id="dup", name="add", arguments={"a": 50, "b": 50}),
    ]
    provider = ScriptedProvider([Reply(tool_calls=calls), "ok"])
    agent = SimpleAgent(provider=provider, tools=[add])
    result = await agent.run("go")

    ids = [r.id for r in result.tool_calls]
    assert len(set(ids)) == 3 and "" not in ids and ids[1] == "dup"
    assert [r.result for r in result.tool_calls] == ["2", "4", "100"]
    assert_consistent(agent.messages)


async def test_an_agent_without_tools_offers_none_rather_than_an_empty_list() -> None:
    provider = RecordingProvider([ChatResponse(content="hi")])
    await SimpleAgent(provider=provider).run("hello")
    assert provider.tools_args == [None]


async def test_a_provider_reporting_no_usage_still_triggers_compaction() -> None:
    def answer(messages: Sequence[Message]) -> ChatResponse:
        if "long-term memory" in messages[0].text:
            return ChatResponse(content="The user talked at length.")
        return ChatResponse(content="ok " * 100)  # and no token counts at all

    provider = RecordingProvider(answer, window=400)
    agent = SimpleAgent(provider=provider)
    for i in range(3):  # short prompts, long answers: only the answers fill the window
        await agent.run(f"message {i}")
    assert agent.compactions >= 1
    assert agent.memory == "The user talked at length."
    assert agent.usage.input_tokens == 0


async def test_provider_thinking_is_replayed_and_survives_state() -> None:
    block = {"type": "thinking", "thinking": "hmm", "signature": "sig=="}
    provider = ScriptedProvider(
        [Reply(thinking="hmm", provider_thinking=[block], tool_calls=[call("add", a=1, b=2)]), "3"]
    )
    agent = SimpleAgent(provider=provider, tools=[add])
    await agent.run("1+2")
    replayed = provider.requests[1].messages[1]
    assert replayed.provider_thinking == (block,)
    resumed = SimpleAgent(
        provider=ScriptedProvider([]), state=json.loads(json.dumps(agent.state()))
    )
    assert resumed.messages[1].provider_thinking == (block,)
    assert resumed.messages[1].thinking == "hmm"


async def test_images_survive_state() -> None:
    png = b"\x89PNG\r\n\x1a\n fake"
    agent = SimpleAgent(provider=ScriptedProvider(["a cat"]))
    await agent.run(Message.user("What is this?", ImagePart(data=png)))
    resumed = SimpleAgent(
        provider=ScriptedProvider([]), state=json.loads(json.dumps(agent.state()))
    )
    assert resumed.messages[0].images == (ImagePart(data=png),)


# -- compaction keeps what the model has not acted on ------------------------


async def test_compaction_mid_run_keeps_the_latest_tool_results_verbatim() -> None:
    @tool
    def lookup(key: str) -> str:
        """Look a value up."""
        return f"value-of-{key} " + "filler " * 30

    def model(messages: Sequence[Message]) -> object:
        if "long-term memory" in messages[0].text:
            return "Memory: the user wants three lookups."
        results = [m for m in messages if m.role == "tool"]
        if results:
            # The result of the call just made is always visible.
            assert results[-1].text.startswith("value-of-")
        done = len(re.findall(r"value-of-", "\n".join(m.text for m in messages)))
        asked = sum(1 for m in messages for _ in m.tool_calls)
        if asked >= 1 and done == 0:
            raise AssertionError("the model lost the result it asked for")
        count = int(re.findall(r"\d+", messages[-1].text)[0]) if results else 0
        return call("lookup", key=f"k{count + 1}") if count < 3 else "all three done"

    provider = ScriptedProvider([model] * 20, capabilities=Capabilities(context_window=300))
    agent = SimpleAgent(provider=provider, tools=[lookup])
    result = await agent.run("Look up three keys, one at a time.")
    assert result.reply == "all three done"
    assert agent.compactions >= 1
    assert_consistent(agent.messages)


# -- structured output is a promise ------------------------------------------


async def test_a_run_with_output_type_that_hits_max_turns_raises() -> None:
    class City(BaseModel):
        name: str

    agent = SimpleAgent(provider=ScriptedProvider(["not json"]), max_turns=1)
    with pytest.raises(RunError, match="max_turns") as info:
        await agent.run("City?", output_type=City)
    assert info.value.result is not None
    assert info.value.result.output_value is None


async def test_the_retry_request_is_streamed_as_a_user_chunk() -> None:
    chunks: list[StreamChunk] = []
    provider = ScriptedProvider(["nope", "[1]"])
    await SimpleAgent(provider=provider).run("list?", chunks.append, output_type=list[int])
    users = [c.content for c in chunks if c.role == "user"]
    assert users[0] == "list?"
    assert len(users) == 2 and "not valid JSON" in users[1]


# -- shared mutable data -----------------------------------------------------


async def test_a_tool_mutating_its_arguments_does_not_rewrite_history() -> None:
    class Popper(Tool):
        name = "popper"
        input_schema = {"type": "object", "properties": {"k": {"type": "string"}}}  # noqa: RUF012

        async def execute(self, arguments: dict[str, Any], context: ToolContext) -> str:
            return str(arguments.pop("k"))

    agent = SimpleAgent(provider=ScriptedProvider([call("popper", k="v"), "ok"]), tools=[Popper()])
    result = await agent.run("go")
    assert agent.messages[1].tool_calls[0].arguments == {"k": "v"}
    assert result.tool_calls[0].arguments == {"k": "v"}


def test_tools_do_not_share_schema_dicts() -> None:
    class Ping(Tool):
        name = "ping"

        async def execute(self, arguments: dict[str, Any], context: ToolContext) -> str:
            return "ping"

    class Pong(Ping):
        name = "pong"

    ping, pong = Ping(), Pong()
    ping.input_schema["properties"]["x"] = {"type": "string"}
    ping.schema.input_schema["properties"]["y"] = {"type": "string"}
    assert pong.input_schema == {"type": "object", "properties": {}}
    assert "y" not in ping.input_schema["properties"]


# -- threads, loops, re-entrancy ---------------------------------------------


def test_a_second_thread_running_the_same_agent_is_refused() -> None:
    started, release = threading.Event(), threading.Event()

    def slow(messages: Sequence[Message]) -> str:
        started.set()
        release.wait(10)
        return "first"

    agent = SimpleAgent(provider=ScriptedProvider([slow, "second"]))
    outcome: list[str] = []
    worker = threading.Thread(target=lambda: outcome.append(agent.run_sync("a").reply))
    worker.start()
    try:
        assert started.wait(10)
        with pytest.raises(UserError, match="another event loop or thread"):
            agent.run_sync("b")
    finally:
        release.set()
        worker.join(10)
    assert outcome == ["first"]
    assert agent.run_sync("c").reply == "second"  # free again afterwards


def test_ids_keep_working_across_run_sync_loops() -> None:
    @tool
    async def ref(context: ToolContext) -> str:
        """Hand out a ref id."""
        assert context.ids is not None
        return await context.ids.next()

    agent = SimpleAgent(
        provider=ScriptedProvider([call("ref"), "a", call("ref"), "b"]), tools=[ref]
    )
    first = agent.run_sync("one")
    second = agent.run_sync("two")
    assert [first.tool_calls[0].result, second.tool_calls[0].result] == ["ref-1", "ref-2"]


async def test_an_agent_running_itself_from_a_tool_fails_clearly() -> None:
    agent: SimpleAgent

    @tool
    async def recurse() -> str:
        """Calls its own agent."""
        return (await agent.run("again")).reply

    agent = SimpleAgent(provider=ScriptedProvider([call("recurse"), "ok"]), tools=[recurse])
    result = await asyncio.wait_for(agent.run("go"), timeout=5)
    assert result.tool_calls[0].is_error
    assert "inside its own run" in result.tool_calls[0].result


async def test_breaking_out_of_a_stream_without_async_with_cancels_the_run() -> None:
    ran: list[str] = []

    @tool
    async def launch() -> str:
        """Irreversible."""
        ran.append("launched")
        return "launched"

    agent = SimpleAgent(provider=ScriptedProvider([call("launch"), "x"]), tools=[launch])
    stream = agent.run_stream("go")
    async for chunk in stream:
        if chunk.tool_calls:
            break
    with pytest.raises(RunError, match="cancelled"):
        await asyncio.wait_for(stream.result(), timeout=5)
    assert ran == []
    assert_consistent(agent.messages)


# -- misuse gets a clear error ------------------------------------------------


@pytest.mark.parametrize("prompt", [None, 123, ["hi"], b"bytes"])
async def test_a_prompt_that_is_not_text_or_a_message_is_refused(prompt: Any) -> None:
    agent = SimpleAgent(provider=ScriptedProvider(["x"]))
    with pytest.raises(UserError, match="a prompt must be a str or a Message"):
        await agent.run(prompt)
    assert agent.messages == []
    json.dumps(agent.state())


def test_misconfigured_agents_fail_at_construction() -> None:
    def plain(x: int) -> int:
        return x

    provider = ScriptedProvider([])
    with pytest.raises(UserError, match=r"not a Tool.*@tool"):
        SimpleAgent(provider=provider, tools=[plain])  # type: ignore[list-item]
    with pytest.raises(UserError, match="lists"):
        SimpleAgent(provider=provider, tools=add)  # type: ignore[arg-type]
    with pytest.raises(UserError, match="max_turns"):
        SimpleAgent(provider=provider, max_turns="5")  # type: ignore[typeddict-item]
    with pytest.raises(UserError, match="skills"):
        SimpleAgent(provider=provider, skills=[add])  # type: ignore[list-item]


async def test_a_base_agent_whose_client_lacks_a_skills_tools_is_refused() -> None:
    skill = Skill(name="math", description="Maths.", instructions="Use add.", tools=[add])
    agent = BaseAgent(
        provider=ScriptedProvider(["x"]), tool_client=LocalToolClient(), skills=[skill]
    )
    with pytest.raises(UserError, match="add"):
        await agent.run("hi")


def test_skills_hold_their_tools_as_a_tuple() -> None:
    tools = [add]
    skill = Skill(name="math", description="Maths.", instructions="Use add.", tools=tools)
    tools.clear()
    assert skill.tools == (add,)
    assert hash(skill) == hash(skill)


def test_positional_only_tool_parameters_are_refused_at_decoration() -> None:
    def f(x: int, /) -> int:
        return x

    with pytest.raises(UserError, match="positional-only"):
        tool(f)


def test_a_tool_subclass_that_skips_super_init_still_validates() -> None:
    class Lazy(Tool):
        name = "lazy"
        input_schema = {"type": "object", "properties": {"n": {"type": "integer"}}}  # noqa: RUF012

        def __init__(self) -> None:
            pass

        async def execute(self, arguments: dict[str, Any], context: ToolContext) -> int:
            return int(arguments["n"]) + 1

    result = asyncio.run(Lazy().run({"n": 1}, ToolContext()))
    assert result.text == "2"


def test_broken_saved_state_is_refused_clearly() -> None:
    provider = ScriptedProvider([])
    with pytest.raises(UserError, match=r"messages_full\[0\]: missing 'role'"):
        SimpleAgent(provider=provider, state={"version": 1, "messages_full": [{"content": "x"}]})
    bad_image = {"role": "user", "content": [{"type": "image", "data": "%%%"}]}
    with pytest.raises(UserError, match=r"messages\[0\]"):
        SimpleAgent(provider=provider, state={"version": 1, "messages": [bad_image]})


def test_the_saved_name_is_restored() -> None:
    agent = SimpleAgent(provider=ScriptedProvider([]), name="calc")
    assert SimpleAgent(provider=ScriptedProvider([]), state=agent.state()).name == "calc"
    assert SimpleAgent(provider=ScriptedProvider([]), state=agent.state(), name="x").name == "x"


async def test_on_chunk_can_be_passed_positionally_like_the_seed() -> None:
    chunks: list[StreamChunk] = []
    await SimpleAgent(provider=ScriptedProvider(["hi"])).run("hello", chunks.append)
    assert chunks[0].content == "hello"


# -- second review round -------------------------------------------------------


async def test_a_cancellation_caught_earlier_does_not_cancel_later_runs() -> None:
    # A chat loop that stops one run and carries on with the next, in one task.
    provider = ScriptedProvider([Reply(text="slow", delay=30), call("add", a=1, b=2), "3"])
    agent = SimpleAgent(provider=provider, tools=[add])
    me = asyncio.current_task()
    assert me is not None
    asyncio.get_running_loop().call_later(0.01, me.cancel)
    with pytest.raises(asyncio.CancelledError):
        await agent.run("stop me")
    assert me.cancelling() == 1  # caught, not forgotten: exactly the stale state
    result = await agent.run("what is 1+2?")
    assert result.stop_reason == "end_turn"
    assert result.tool_calls[0].result == "3" and not result.tool_calls[0].is_error
    me.uncancel()


async def test_a_second_cancel_still_waits_for_tools_winding_down() -> None:
    started = asyncio.Event()
    hooked: list[str] = []

    @tool
    async def careful(n: int) -> str:
        """Finishes its write even when cancelled."""
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            await asyncio.sleep(0.05)  # wind down
            return f"sent {n}"
        return "never"

    agent = SimpleAgent(
        provider=ScriptedProvider([[call("careful", n=1), call("careful", n=2)]]),
        tools=[careful],
        on_tool_result=lambda r: hooked.append(r.result),
    )
    task = asyncio.create_task(agent.run("go"))
    await asyncio.wait_for(started.wait(), timeout=5)
    task.cancel()
    await asyncio.sleep(0.01)
    task.cancel()  # impatient: cancel again while the tools wind down
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, timeout=5)
    assert sorted(hooked) == ["sent 1", "sent 2"]  # nothing fires after run() returned
    assert [m.text for m in agent.messages if m.role == "tool"] == ["sent 1", "sent 2"]


async def test_ids_are_unique_across_the_conversation_and_streamed_as_stored() -> None:
    same = ToolCall(id="call_0", name="add", arguments={"a": 1, "b": 1})
    chunks: list[StreamChunk] = []
    provider = ScriptedProvider([Reply(tool_calls=[same]), Reply(tool_calls=[same]), "done"])
    agent = SimpleAgent(provider=provider, tools=[add])
    result = await agent.run("go", chunks.append)
    ids = [r.id for r in result.tool_calls]
    assert ids[0] == "call_0" and len(set(ids)) == 2
    streamed = [c.tool_calls[0].id for c in chunks if c.tool_calls]
    executed = [c.tool_call_id for c in chunks if c.role == "tool"]
    assert streamed == executed == ids


async def test_state_saved_between_a_call_and_its_result_resumes_cleanly() -> None:
    saved: list[dict[str, Any]] = []
    agent: SimpleAgent

    def checkpoint(call: ToolCall) -> None:
        saved.append(json.loads(json.dumps(agent.state())))

    agent = SimpleAgent(
        provider=ScriptedProvider([call("add", a=1, b=2), "3"]),
        tools=[add],
        on_tool_call=checkpoint,
    )
    await agent.run("1+2")
    # The process "died" after the checkpoint: resume from it.
    provider = ScriptedProvider(["Sorry, that was interrupted."])
    resumed = SimpleAgent(provider=provider, state=saved[0], tools=[add])
    assert_consistent(resumed.messages)
    assert resumed.messages[-1].is_error and "interrupted" in resumed.messages[-1].text
    await resumed.run("go on")
    assert_consistent(provider.requests[0].messages[1:])


async def test_compaction_keeps_a_pending_structured_output_retry() -> None:
    def model(messages: Sequence[Message]) -> str:
        if "long-term memory" in messages[0].text:
            return "The user wants a number."
        if "did not match the required output format" in messages[-1].text:
            return "7"
        return "seven " * 80

    provider = ScriptedProvider([model] * 5, capabilities=Capabilities(context_window=200))
    result = await SimpleAgent(provider=provider).run("give me a number", output_type=int)
    assert result.output_value == 7


async def test_a_resumed_simple_agent_keeps_its_tool_environment() -> None:
    @tool
    async def ticket(context: ToolContext) -> str:
        """Open a ticket."""
        assert context.ids is not None
        return f"{context.env_id}: {await context.ids.next('ticket')}"

    from heron import MemoryStorage

    storage = MemoryStorage()
    first = SimpleAgent(
        provider=ScriptedProvider([call("ticket"), "ok"]),
        tools=[ticket],
        name="support",
        storage=storage,
    )
    await first.run("open one")
    second = SimpleAgent(
        provider=ScriptedProvider([call("ticket"), "ok"]),
        tools=[ticket],
        state=first.state(),
        storage=storage,
    )
    result = await second.run("open another")
    assert result.tool_calls[0].result == "support: ticket-2"


def test_an_agent_whose_loop_died_mid_run_can_run_again() -> None:
    agent = SimpleAgent(provider=ScriptedProvider([Reply(text="never", delay=30), "again"]))
    loop = asyncio.new_event_loop()
    task = loop.create_task(agent.run("hang"))
    loop.run_until_complete(asyncio.sleep(0.01))
    loop.close()  # the run never finished
    assert not task.done()
    assert agent.run_sync("hello").reply == "again"


async def test_none_for_optional_lists_is_accepted_and_bad_state_types_are_refused() -> None:
    agent = SimpleAgent(provider=ScriptedProvider(["hi"]), tools=None, skills=None)  # type: ignore[arg-type]
    assert (await agent.run("hello")).reply == "hi"
    with pytest.raises(UserError, match=r"json\.loads it first"):
        SimpleAgent(provider=ScriptedProvider([]), state='{"version": 1}')  # type: ignore[typeddict-item]
    from heron import AgentState

    bad = AgentState(messages=[{"role": "nobody", "content": "x"}])
    with pytest.raises(UserError, match=r"messages\[0\]"):
        SimpleAgent(provider=ScriptedProvider([]), state=bad)


async def test_tool_chunks_say_whether_the_call_failed() -> None:
    chunks: list[StreamChunk] = []
    agent = SimpleAgent(
        provider=ScriptedProvider([[call("add", a=1, b=1), call("add", a="x", b=1)], "ok"]),
        tools=[add],
    )
    await agent.run("go", chunks.append)
    assert sorted((c.content, c.is_error) for c in chunks if c.role == "tool")[0] == ("2", False)
    assert [c.is_error for c in chunks if c.role == "tool"].count(True) == 1


# -- a newcomer's first tries ---------------------------------------------------


def test_a_provider_with_a_sync_chat_is_refused() -> None:
    class Blocking(Provider):
        @property
        def capabilities(self) -> Capabilities:
            return Capabilities()

        def chat(self, messages: Any, *, tools: Any = None, on_chunk: Any = None) -> Any:  # type: ignore[override]
            return ChatResponse(content="x")

    with pytest.raises(UserError, match="must be `async def`"):
        SimpleAgent(provider=Blocking())


async def test_a_provider_that_does_not_stream_is_streamed_for_it() -> None:
    calls = [ToolCall(id="c1", name="add", arguments={"a": 1, "b": 2})]
    provider = RecordingProvider(
        [
            ChatResponse(content="Adding.", thinking="Use add.", tool_calls=tuple(calls)),
            ChatResponse(content="3"),
        ]
    )
    chunks: list[StreamChunk] = []
    await SimpleAgent(provider=provider, tools=[add]).run("1+2", chunks.append)
    picture = [
        (
            "user"
            if c.role == "user"
            else "tool"
            if c.role == "tool"
            else "call"
            if c.tool_calls
            else "thinking"
            if c.thinking
            else "done"
            if c.done
            else "text"
        )
        for c in chunks
    ]
    assert picture == ["user", "thinking", "text", "call", "done", "tool", "text", "done"]


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


def test_a_dict_that_is_not_saved_state_is_named_as_such() -> None:
    with pytest.raises(UserError, match="no 'version'"):
        SimpleAgent(provider=ScriptedProvider([]), state={"foo": 1})


async def test_to_json_can_keep_the_messages() -> None:
    from heron import RunResult

    result = await SimpleAgent(provider=ScriptedProvider(["hi"])).run("hello")
    restored = RunResult.from_dict(json.loads(result.to_json(messages=True)))
    assert restored.messages == result.messages
    assert "messages" not in json.loads(result.to_json())


async def test_compaction_requests_can_be_told_apart() -> None:
    from heron.testing import is_compaction_request

    seen: list[bool] = []

    def model(messages: Sequence[Message]) -> str:
        seen.append(is_compaction_request(messages))
        return "summary" if seen[-1] else "answer " * 80

    agent = SimpleAgent(
        provider=ScriptedProvider([model] * 6, capabilities=Capabilities(context_window=300))
    )
    for i in range(3):
        await agent.run(f"question {i}")
    assert True in seen and False in seen
    assert agent.memory == "summary"
