"""One run of the agent loop, split into its steps.

A run appends the prompt, then repeats *model turn* → *tool dispatch* until the
model answers without calling tools, a stop tool runs, or the turn limit is hit.
Memory compaction happens between turns. Every step leaves the history
consistent: an assistant message that made tool calls is always followed by a
result for each of them, even when the run is cancelled mid-dispatch.
"""

from __future__ import annotations

import asyncio
import time
import warnings
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, TypeAlias

from .._core import (
    ChatResponse,
    ChunkCallback,
    Message,
    OutputValidationError,
    Part,
    RunError,
    StreamChunk,
    TextPart,
    ToolCall,
    ToolSchema,
    emit,
)
from .._core.result import ProviderMetadata, RunResult, StopReason, ToolCallRecord
from ..providers import InvalidToolCall, Provider
from ..tools import ToolClient, ToolResult
from ._call_ids import CallIds
from ._compaction import memory_block
from ._conversation import Conversation
from ._output import InvalidOutput, OutputSpec
from ._roles import ImageDescriber
from ._team import CallScope, current_scope, ended

__all__ = ["LoopAgent", "Run", "ToolCallHook", "ToolResultHook"]

ToolCallHook: TypeAlias = Callable[[ToolCall], Awaitable[None] | None]
"""Called (sync or async) with each tool call before it runs."""
ToolResultHook: TypeAlias = Callable[[ToolCallRecord], Awaitable[None] | None]
"""Called (sync or async) with each finished tool call's record."""


class LoopAgent(Protocol):
    """What the loop needs of an agent (``BaseAgent`` provides it)."""

    name: str
    provider: Provider
    tool_client: ToolClient
    max_turns: int
    output_retries: int
    on_tool_call: ToolCallHook | None
    on_tool_result: ToolResultHook | None
    last_result: RunResult[Any] | None
    image_describer: ImageDescriber

    async def visible_tools(self) -> list[ToolSchema]:
        """The tools the model is offered."""
        ...


_Outcome: TypeAlias = tuple[ToolResult, ToolCallRecord]


def system_text(base_prompt: str, spec: OutputSpec | None, memory: str | None) -> str:
    """The system prompt: instruction and skills, output format, then memory."""
    parts = [base_prompt]
    if spec is not None:
        parts.append(spec.instructions())
    if memory:
        parts.append(memory_block(memory))
    return "\n\n".join(p for p in parts if p)


class Run:
    """The state of one ``agent.run()``; :meth:`execute` drives it to the end."""

    def __init__(
        self,
        agent: LoopAgent,
        conversation: Conversation,
        *,
        base_prompt: str,
        on_chunk: ChunkCallback | None,
        spec: OutputSpec | None,
        result: RunResult[Any],
    ) -> None:
        self.agent = agent
        self.conversation = conversation
        self.base_prompt = base_prompt
        self.on_chunk = on_chunk
        self.spec = spec
        self.result = result
        self._tools: list[ToolSchema] = []
        self._tool_names: frozenset[str] = frozenset()
        self._retries_left = agent.output_retries
        self._started = time.perf_counter()
        # The agents of this run's delegation tree by name, shared with its workers.
        parent = current_scope()
        self._names: dict[str, object] = parent.names if parent is not None else {}
        self._names_agent()

    def _names_agent(self) -> None:
        name, agent = self.agent.name, self.agent
        known = self._names.setdefault(name, agent)
        if known is not agent:
            # The same agent twice is fine; two agents under one name blur the record.
            warnings.warn(
                f"two different agents named {name!r} work in one run: their results "
                "and tokens_by_agent() cannot tell them apart; give each its own name=",
                UserWarning,
                stacklevel=2,
            )

    async def execute(self, prompt: Message) -> RunResult[Any]:
        """Run the loop for ``prompt``; the result is also left on ``agent.last_result``."""
        await self.start(prompt)
        try:
            while not await self.step():
                pass
        except BaseException as exc:
            self.fail(exc)
            raise
        finally:
            self.close()
        return self.result

    async def start(self, prompt: Message) -> None:
        """Begin the run: list the tools, then append and echo ``prompt``."""
        self._started = time.perf_counter()
        result = self.result
        provider = self.agent.provider
        result.provider, result.model = provider.name, provider.model
        try:
            self._tools = await self.agent.visible_tools()
            self._tool_names = frozenset(t.name for t in self._tools)
            self.conversation.begin(prompt, result)
            await self._echo(prompt)
        except BaseException as exc:
            self.fail(exc)
            self.close()
            raise

    async def add(self, message: Message) -> None:
        """Append a user ``message`` between turns: the model reads it next turn."""
        self.conversation.append(message, self.result)
        await self._echo(message)

    def fail(self, exc: BaseException) -> None:
        """Record that ``exc`` ended the run (cancelled, or failed with it)."""
        ended(self.result, exc)
        if isinstance(exc, RunError) and exc.result is None:
            exc.result = self.result

    def close(self) -> None:
        """Stamp the run's duration and leave its result on ``agent.last_result``."""
        self.result.duration = time.perf_counter() - self._started
        self.agent.last_result = self.result

    async def _echo(self, message: Message) -> None:
        if self.on_chunk is not None:
            await emit(self.on_chunk, StreamChunk(role="user", content=message.text, done=True))

    async def _replay(self, response: ChatResponse, calls: Sequence[ToolCall]) -> None:
        """Stream a turn whose provider did not: the same chunks, all at once."""
        assert self.on_chunk is not None
        chunks: list[StreamChunk] = []
        if response.thinking:
            chunks.append(StreamChunk(role="assistant", thinking=response.thinking))
        if response.content:
            chunks.append(StreamChunk(role="assistant", content=response.content))
        chunks += [StreamChunk(role="assistant", tool_calls=(c,)) for c in calls]
        chunks.append(StreamChunk(role="assistant", done=True))
        for chunk in chunks:
            await emit(self.on_chunk, chunk)

    async def step(self) -> bool:
        """One model turn and its tool calls; ``True`` when the run is over."""
        agent, result = self.agent, self.result
        if result.turns >= agent.max_turns:
            return self._finish("max_turns")
        conversation = self.conversation
        await conversation.compact(
            agent.provider,
            threshold=agent.provider.capabilities.compaction_threshold,
            result=result,
        )
        system = system_text(self.base_prompt, self.spec, conversation.memory)
        messages = (
            [Message.system(system), *conversation.working] if system else [*conversation.working]
        )
        ids = CallIds(conversation.call_ids)
        on_chunk = self.on_chunk
        if on_chunk is not None:
            on_chunk = ids.wrap(on_chunk)
        response = await agent.provider.chat(messages, tools=self._tools or None, on_chunk=on_chunk)
        conversation.account(response, result, messages)
        result.turns += 1
        metadata = ProviderMetadata.of(result.turns, response)
        if metadata is not None:
            result.provider_metadata.append(metadata)
        calls = ids.fix_all(response.tool_calls)
        if self.on_chunk is not None and not ids.streamed_any:
            await self._replay(response, calls)
        assistant = Message.assistant(
            response.content,
            tool_calls=calls,
            thinking=response.thinking,
            provider_thinking=response.provider_thinking,
        )
        conversation.append(assistant, result)
        if calls:
            if await self._dispatch(calls):
                return self._finish("tool_stop")
            return False
        return await self._answer(response)

    async def _answer(self, response: ChatResponse) -> bool:
        if self.spec is not None:
            try:
                self.result.output_value = self.spec.parse(response.content)
            except InvalidOutput as exc:
                if self._retries_left <= 0:
                    raise OutputValidationError(
                        f"structured output still invalid after "
                        f"{self.agent.output_retries} retries: {exc}",
                        errors=exc.errors,
                    ) from None
                self._retries_left -= 1
                retry = Message.user(self.spec.retry_prompt(str(exc)))
                self.conversation.append(retry, self.result)
                await self._echo(retry)
                return False
        # A structured answer that parsed is complete, whatever the provider said.
        cut_off = response.stop_reason == "max_tokens" and self.spec is None
        return self._finish("max_tokens" if cut_off else "end_turn")

    def _finish(self, reason: StopReason) -> bool:
        self.result.stop_reason = reason
        reply = final_reply(self.result.messages)
        if reply:
            self.result.output = [Message.assistant(reply)]
        if self.spec is not None and reason != "end_turn":
            # A typed output_value is a promise: a run that cannot keep it fails.
            raise RunError(f"the run ended ({reason}) before the model gave its structured answer")
        return True

    async def _dispatch(self, calls: Sequence[ToolCall]) -> bool:
        """Run every call of a turn concurrently; ``True`` if one asked to stop the run.

        Whatever happens (a hook raising, cancellation), every call gets a
        result in the history: the real one if the tool finished, else an error.
        """
        outcomes: dict[int, _Outcome] = {}
        scopes: dict[int, CallScope] = {}
        # Cancellations the caller requested and caught before this turn are not ours.
        baseline = _cancelling()
        try:
            for c in calls:
                await emit(self.agent.on_tool_call, c)
            if len(calls) == 1:
                # Most turns make one call: skip the task machinery.
                await self._call(0, calls[0], outcomes, scopes, baseline)
                if _cancelling() > baseline:
                    raise asyncio.CancelledError  # a tool swallowed our cancellation
            else:
                await self._call_all(calls, outcomes, scopes)
        finally:
            self._record(calls, outcomes, scopes)
        return any(res.stop_iteration for res, _ in outcomes.values())

    async def _call_all(
        self,
        calls: Sequence[ToolCall],
        outcomes: dict[int, _Outcome],
        scopes: dict[int, CallScope],
    ) -> None:
        tasks = [
            asyncio.ensure_future(self._call(i, c, outcomes, scopes, 0))
            for i, c in enumerate(calls)
        ]
        try:
            await asyncio.wait(tasks)
        except asyncio.CancelledError:
            for t in tasks:
                t.cancel()
            pending: set[asyncio.Task[None]] = set(tasks)
            while pending:
                # Let every tool wind down, however often we are cancelled meanwhile:
                # a call that finished is recorded as finished, and no hook fires late.
                try:
                    _, pending = await asyncio.wait(pending)
                except asyncio.CancelledError:
                    continue
            raise
        # Read every failure (so none is logged as unretrieved), then raise the first.
        failures = [t.exception() for t in tasks if not t.cancelled()]
        for exc in failures:
            if exc is not None:
                raise exc

    async def _call(
        self,
        index: int,
        call: ToolCall,
        outcomes: dict[int, _Outcome],
        scopes: dict[int, CallScope],
        baseline: int,
    ) -> None:
        started = time.perf_counter()
        # Other agents run by the call (workers, delegations) report to its scope.
        scope = scopes[index] = CallScope(self.agent.name, self.on_chunk, self._names, call)
        try:
            with scope.entered():
                res = await self._invoke(call, baseline)
        finally:
            await scope.close()
        if res.images:
            # The model gets images as text: described by the image provider, or dropped.
            res, responses = await self.agent.image_describer.describe(res, tool_name=call.name)
            for response in responses:
                self.conversation.count(response, self.result)
        record = ToolCallRecord(
            id=call.id,
            name=call.name,
            arguments=call.arguments,
            result=res.text,
            is_error=res.is_error,
            duration=time.perf_counter() - started,
            runs=tuple(scope.runs),
        )
        # Stored before any callback runs: a failing callback must not relabel a
        # call that really happened as one that did not.
        outcomes[index] = (res, record)
        if self.on_chunk is not None:
            await emit(
                self.on_chunk,
                StreamChunk(
                    role="tool",
                    content=res.text,
                    done=True,
                    tool_call_id=call.id,
                    tool_name=call.name,
                    is_error=res.is_error,
                ),
            )
        await emit(self.agent.on_tool_result, record)

    async def _invoke(self, call: ToolCall, baseline: int) -> ToolResult:
        if isinstance(call, InvalidToolCall):  # the model's JSON was broken: it may try again
            return ToolResult.error(call.complaint())
        if call.name not in self._tool_names:
            return ToolResult.unknown_tool(call.name, self._tool_names)
        try:
            return await self.agent.tool_client.call_tool(call.name, call.arguments)
        except asyncio.CancelledError:
            if _cancelling() > baseline:
                raise
            return ToolResult.error(f"tool {call.name!r} was cancelled from inside")
        except Exception as exc:  # transport faults: the model hears about them
            return ToolResult.error(f"tool {call.name!r} could not be run: {exc}")

    def _record(
        self,
        calls: Sequence[ToolCall],
        outcomes: dict[int, _Outcome],
        scopes: dict[int, CallScope],
    ) -> None:
        """Append one tool message per call, in call order, filling in unfinished ones.

        The tokens of other agents' runs made by a call are counted into this
        run's here, once, finished call or not.
        """
        for i, c in enumerate(calls):
            outcome = outcomes.get(i)
            if outcome is None:
                res = ToolResult.error("tool call cancelled: the run stopped before it finished")
                scope = scopes.get(i)
                record = ToolCallRecord(
                    id=c.id,
                    name=c.name,
                    arguments=c.arguments,
                    result=res.text,
                    is_error=True,
                    runs=tuple(scope.runs) if scope is not None else (),
                )
            else:
                res, record = outcome
            self.result.tool_calls.append(record)
            for sub in record.runs:
                self.result.input_tokens += sub.input_tokens
                self.result.output_tokens += sub.output_tokens
            content: str | tuple[Part, ...] = res.content
            if all(isinstance(p, TextPart) for p in content):
                content = res.text
            message = Message(
                role="tool",
                content=content,
                tool_call_id=c.id,
                tool_name=c.name,
                is_error=res.is_error,
            )
            self.conversation.append(message, self.result)


def final_reply(messages: Sequence[Message]) -> str:
    """A run's reply: the last turn's text, else its thinking, else the run's latest text.

    A model that answers only in its reasoning (some Ollama models do) still
    has a reply; a last turn that wrote nothing at all (it only called a stop
    tool, say) falls back to the most recent text of the same run.
    """
    turns = [m for m in messages if m.role == "assistant"]
    if not turns:
        return ""
    last = turns[-1]
    if last.text or last.thinking:
        return last.text or last.thinking or ""
    return next((m.text for m in reversed(turns) if m.text), "")


def _cancelling() -> int:
    """How many cancellation requests the current task has pending."""
    task = asyncio.current_task()
    return task.cancelling() if task is not None else 0
