"""Memory compaction with a small context window."""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Callable, Sequence

import pytest

from heron import (
    Capabilities,
    ChatResponse,
    ChunkCallback,
    Message,
    Provider,
    SimpleAgent,
    ToolSchema,
    tool,
)
from heron._core.tokens import estimate_message_tokens
from heron.testing import ScriptedProvider, call, is_compaction_request

SUMMARY_MARKER = "long-term memory"


def is_compaction(messages: Sequence[Message]) -> bool:
    return bool(messages) and messages[0].role == "system" and SUMMARY_MARKER in messages[0].text


def model(messages: Sequence[Message]) -> str:
    """A stand-in model that can only use what is in its context."""
    context = "\n".join(m.text for m in messages)
    if is_compaction(messages):
        facts = sorted(set(re.findall(r"locker code is \d+|name is \w+", context)))
        return "Facts: " + "; ".join(facts) + "."
    question = messages[-1].text
    if "locker code?" in question:
        found = re.search(r"locker code is (\d+)", context)
        return f"Your locker code is {found.group(1)}." if found else "I don't know."
    return "Noted. " + "ok " * 10


def small_window() -> Capabilities:
    return Capabilities(context_window=240, safe_usage_ratio=0.5)


async def test_compaction_folds_context_into_memory_and_keeps_facts() -> None:
    provider = ScriptedProvider([model] * 40, capabilities=small_window())
    agent = SimpleAgent(provider=provider, instruction="You are helpful.")

    await agent.run("Remember this: my name is Ada and my locker code is 4471.")
    for i in range(6):
        await agent.run(f"Here is some unrelated chatter number {i}, just keep listening please.")
    assert agent.compactions >= 1
    assert agent.memory is not None and "4471" in agent.memory

    # The original message has left the working context but is kept in full.
    assert all("4471" not in m.text for m in agent.messages)
    assert any("4471" in m.text for m in agent.messages_full)
    assert len(agent.messages_full) > len(agent.messages)

    result = await agent.run("What is my locker code?")
    assert result.reply == "Your locker code is 4471."
    # The memory travelled in the system prompt of that request.
    assert "4471" in provider.requests[-1].messages[0].text
    assert "MEMORY" in provider.requests[-1].messages[0].text


async def test_compaction_calls_are_counted_in_tokens() -> None:
    provider = ScriptedProvider([model] * 40, capabilities=small_window())
    agent = SimpleAgent(provider=provider)
    results = [await agent.run(f"message {i} " + "padding " * 20) for i in range(5)]

    compaction_requests = [r for r in provider.requests if is_compaction(r.messages)]
    assert compaction_requests, "expected at least one compaction"
    assert agent.usage.requests == len(provider.requests)
    assert agent.usage.input_tokens == sum(r.input_tokens for r in results)
    assert agent.usage.output_tokens == sum(r.output_tokens for r in results)
    # A run that compacted spent more than its own turns' input.
    assert sum(r.turns for r in results) == len(provider.requests) - len(compaction_requests)


async def test_compaction_mid_run_keeps_the_task_and_tool_pairs_consistent() -> None:
    @tool
    def fetch(page: int) -> str:
        """Fetch a page of a long document."""
        return f"page {page}: " + "lorem ipsum " * 15

    def step(messages: Sequence[Message]) -> object:
        if is_compaction(messages):
            pages = sorted(set(re.findall(r"page \d+", "\n".join(m.text for m in messages))))
            return "Task: read pages. Read so far: " + ", ".join(pages)
        seen = "\n".join(m.text for m in messages)
        read = len(set(re.findall(r"page (\d+)", seen)))
        return call("fetch", page=read + 1) if read < 6 else "Read six pages."

    provider = ScriptedProvider([step] * 30, capabilities=small_window())
    agent = SimpleAgent(provider=provider, tools=[fetch])
    result = await agent.run("Read the document page by page until you have six pages.")

    assert result.reply == "Read six pages."
    assert agent.compactions >= 1
    # After compaction the working context restarts from the current prompt.
    assert agent.messages[0].text.startswith("Read the document")
    # No tool result without its call, no call without its result.
    call_ids = [c.id for m in agent.messages for c in m.tool_calls]
    result_ids = [m.tool_call_id for m in agent.messages if m.role == "tool"]
    assert call_ids == result_ids
    assert [r.arguments["page"] for r in result.tool_calls] == [1, 2, 3, 4, 5, 6]


async def test_an_empty_summary_does_not_wipe_the_context() -> None:
    def step(messages: Sequence[Message]) -> str:
        return "" if is_compaction(messages) else "answer " * 60

    provider = ScriptedProvider([step] * 10, capabilities=small_window())
    agent = SimpleAgent(provider=provider)
    await agent.run("first " * 30)
    await agent.run("second")
    asked = [r for r in provider.requests if is_compaction(r.messages)]
    assert asked, "the test must reach a compaction for the guard to matter"
    assert agent.compactions == 0
    assert agent.memory is None
    assert [m.text.split()[0] for m in agent.messages] == ["first", "answer", "second", "answer"]


def reply(messages: Sequence[Message]) -> str:
    return "SUMMARY" if is_compaction(messages) else "a short answer"


@pytest.mark.parametrize(("slack", "compacts"), [(0, False), (-1, True)])
async def test_compaction_starts_just_past_the_threshold(slack: int, compacts: bool) -> None:
    probe = SimpleAgent(provider=ScriptedProvider([reply]))
    await probe.run("the first question, with a few words in it")
    second = "and a second question"
    size = probe.state()["context_tokens"] + estimate_message_tokens([Message.user(second)])
    caps = Capabilities(context_window=size + slack, safe_usage_ratio=1.0)

    agent = SimpleAgent(provider=ScriptedProvider([reply] * 3, capabilities=caps))
    await agent.run("the first question, with a few words in it")
    await agent.run(second)
    assert agent.compactions == (1 if compacts else 0)


async def test_a_fold_too_small_to_pay_for_a_model_call_is_skipped() -> None:
    provider = ScriptedProvider([reply] * 3, capabilities=Capabilities(context_window=400))
    agent = SimpleAgent(provider=provider)
    await agent.run("hi")
    await agent.run("word " * 300)  # far past the threshold, but only "hi" could be folded
    assert not any(is_compaction(r.messages) for r in provider.requests)
    assert agent.compactions == 0


async def test_cjk_text_fills_the_window_and_is_compacted() -> None:
    paragraph = "東京は日本の首都で、多くの人が暮らしています。" * 10

    def model(messages: Sequence[Message]) -> str:
        if is_compaction(messages):
            return "ユーザーは東京について話した。"
        return "はい、わかりました。" * 5

    provider = ScriptedProvider([model] * 10, capabilities=Capabilities(context_window=600))
    agent = SimpleAgent(provider=provider)
    for _ in range(3):
        await agent.run(paragraph)
    assert agent.compactions >= 1
    assert agent.memory == "ユーザーは東京について話した。"


class Unmetered(Provider):
    """Answers with a function of the messages and, like some APIs, reports no token usage."""

    name = "unmetered"

    def __init__(self, answer: Callable[[Sequence[Message]], str], window: int) -> None:
        self.answer = answer
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
        return ChatResponse(content=self.answer(messages))


async def test_a_provider_reporting_no_usage_still_triggers_compaction() -> None:
    def answer(messages: Sequence[Message]) -> str:
        if is_compaction(messages):
            return "The user talked at length."
        return "ok " * 100

    agent = SimpleAgent(provider=Unmetered(answer, window=400))
    for i in range(3):  # short prompts, long answers: only the answers fill the window
        await agent.run(f"message {i}")
    assert agent.compactions >= 1
    assert agent.memory == "The user talked at length."
    assert agent.usage.input_tokens == 0


async def test_compaction_mid_run_keeps_the_latest_tool_results_verbatim(
    assert_consistent: Callable[[Sequence[Message]], None],
) -> None:
    @tool
    def lookup(key: str) -> str:
        """Look a value up."""
        return f"value-of-{key} " + "filler " * 30

    def model(messages: Sequence[Message]) -> object:
        if is_compaction(messages):
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


async def test_compaction_keeps_a_pending_structured_output_retry() -> None:
    def model(messages: Sequence[Message]) -> str:
        if is_compaction(messages):
            return "The user wants a number."
        if "did not match the required output format" in messages[-1].text:
            return "7"
        return "seven " * 80

    provider = ScriptedProvider([model] * 5, capabilities=Capabilities(context_window=200))
    result = await SimpleAgent(provider=provider).run("give me a number", output_type=int)
    assert result.output_value == 7


async def test_compaction_requests_can_be_told_apart() -> None:
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


async def test_a_reused_prompt_message_is_not_sent_twice_after_compaction() -> None:
    again = Message.user("continue")

    def model(messages: Sequence[Message]) -> str:
        return "summary" if is_compaction_request(messages) else "more " * 80

    provider = ScriptedProvider([model] * 8, capabilities=Capabilities(context_window=300))
    agent = SimpleAgent(provider=provider)
    for _ in range(3):
        await agent.run(again)  # the very same Message object each time
    assert agent.compactions >= 1
    for request in provider.requests:
        roles = [m.role for m in request.messages]
        assert ("user", "user") not in itertools.pairwise(roles), roles


async def test_compact_on_demand_folds_the_context_with_the_same_summariser() -> None:
    # A large window: nothing would ever compact by itself.
    provider = ScriptedProvider([model] * 10)
    agent = SimpleAgent(provider=provider, instruction="You are helpful.")
    await agent.run("Remember this: my name is Ada and my locker code is 4471.")
    await agent.run("Some chatter.")
    assert agent.compactions == 0
    before_usage, full = agent.usage, agent.messages_full

    done = await agent.compact()

    assert done.compacted and done.reason is None
    assert (done.folded, done.kept) == (4, 0)
    assert done.memory == agent.memory == "Facts: locker code is 4471; name is Ada."
    assert is_compaction_request(provider.requests[-1].messages)  # the automatic summariser
    assert done.input_tokens > 0 and done.output_tokens > 0
    assert agent.usage.requests == before_usage.requests + 1
    assert agent.usage.input_tokens == before_usage.input_tokens + done.input_tokens
    assert agent.compactions == 1
    assert agent.messages == [] and agent.messages_full == full
    assert done.context_tokens_after < done.context_tokens_before
    # The memory carries on into the next run, and into saved state.
    result = await agent.run("What is my locker code?")
    assert result.reply == "Your locker code is 4471."
    assert "4471" in provider.requests[-1].messages[0].text
    resumed = SimpleAgent(provider=ScriptedProvider([]), state=agent.state())
    assert resumed.memory == agent.memory and resumed.compactions == 1


async def test_compact_with_nothing_to_fold_asks_no_model() -> None:
    provider = ScriptedProvider([])
    agent = SimpleAgent(provider=provider)
    done = await agent.compact()
    assert not done.compacted
    assert done.reason is not None and "nothing to fold" in done.reason
    assert (done.folded, done.input_tokens) == (0, 0)
    assert provider.requests == [] and agent.compactions == 0


async def test_compact_keeps_a_context_whose_summary_comes_back_empty() -> None:
    def step(messages: Sequence[Message]) -> str:
        return "" if is_compaction(messages) else "an answer"

    agent = SimpleAgent(provider=ScriptedProvider([step] * 3))
    await agent.run("a question")
    done = await agent.compact()
    assert not done.compacted and done.reason == "the summary came back empty"
    assert done.output_tokens > 0  # the request was made and paid for
    assert [m.text for m in agent.messages] == ["a question", "an answer"]
    assert agent.memory is None


async def test_compact_from_inside_the_agents_own_run_is_refused() -> None:
    agent: SimpleAgent

    @tool
    async def squeeze() -> str:
        """Compact the agent's own memory."""
        await agent.compact()
        return "done"

    agent = SimpleAgent(provider=ScriptedProvider([call("squeeze"), "ok"]), tools=[squeeze])
    result = await agent.run("go")
    record = result.tool_calls[0]
    assert record.is_error and "compact from inside its own run" in record.result
    assert agent.compactions == 0


async def test_compact_waits_for_a_run_in_progress() -> None:
    started, release = asyncio.Event(), asyncio.Event()

    @tool
    async def slow() -> str:
        """Take a while."""
        started.set()
        await release.wait()
        return "slow result"

    provider = ScriptedProvider([call("slow"), "finished", lambda m: "Memory: slow ran."])
    agent = SimpleAgent(provider=provider, tools=[slow])
    run = asyncio.ensure_future(agent.run("go"))
    await started.wait()
    compacting = asyncio.ensure_future(agent.compact())
    for _ in range(10):  # give it every chance to (wrongly) go ahead
        await asyncio.sleep(0)
    assert not compacting.done()  # it queues behind the run
    release.set()
    result = await run
    done = await compacting
    assert result.reply == "finished"
    # It folded the whole finished run, the answer included.
    assert done.compacted and done.folded == 4 and agent.memory == "Memory: slow ran."
