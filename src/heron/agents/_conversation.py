"""An agent's conversation: every message, the working context, memory and counters."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._core import ChatResponse, Message, Usage
from .._core.compaction import compaction_request
from .._core.result import RunResult
from .._core.tokens import estimate_message_tokens, estimate_tokens
from ..providers import Provider
from ._compaction import Compaction
from ._state import STATE_VERSION, AgentState

__all__ = ["Conversation"]

# Compacting costs a model call: folding less than 1/8 of the threshold buys too little.
_MIN_FOLD_DIVISOR = 8


class Conversation:
    """The history behind an agent.

    ``full`` only ever grows; ``working`` is what the model is sent, and
    restarts from ``memory`` after each compaction. ``context_tokens`` tracks
    the working context's size: the provider's own count after each response,
    an estimate for what was added since (or when a provider reports none).
    """

    def __init__(self, state: AgentState) -> None:
        self.full: list[Message] = state.full_messages()
        self.working: list[Message] = state.working_messages()
        self.memory: str | None = state.memory
        self.usage: Usage = state.usage
        self.context_tokens = state.context_tokens
        self.compactions = state.compactions
        self._prompt_at: int | None = None
        self.call_ids: set[str] = {c.id for m in self.full for c in m.tool_calls}
        """Every tool-call id in the history, so new ones never repeat them."""
        self._answer_interrupted_calls()

    def _answer_interrupted_calls(self) -> None:
        """Give calls left unanswered by a process that died mid-turn an error result.

        State saved between a model turn and its tool results (a checkpoint in
        ``on_tool_call``, say) would otherwise resume into a request every
        provider rejects: a tool call without its result.
        """
        tail = _latest_tool_turn(self.working) or self.working[-1:]
        if not tail or not tail[0].tool_calls:
            return
        answered = {m.tool_call_id for m in tail if m.role == "tool"}
        for call in tail[0].tool_calls:
            if call.id not in answered:
                message = Message.tool(
                    "tool call interrupted: the agent stopped before it finished",
                    tool_call_id=call.id,
                    tool_name=call.name,
                    is_error=True,
                )
                self.full.append(message)
                self.working.append(message)

    def append(self, message: Message, result: RunResult[Any]) -> None:
        """Add ``message`` to every view of the history."""
        self.full.append(message)
        self.working.append(message)
        result.messages.append(message)
        self.call_ids.update(c.id for c in message.tool_calls)
        if message.role != "assistant":  # assistant output is counted by account()
            self.context_tokens += estimate_message_tokens((message,))

    def account(
        self, response: ChatResponse, result: RunResult[Any], request: Sequence[Message]
    ) -> None:
        """Count a response's tokens into the run and the agent's life."""
        self.count(response, result)
        if response.input_tokens:
            self.context_tokens = response.input_tokens + response.output_tokens
        else:  # a provider that reports no usage must still trigger compaction
            answer = Message.assistant(response.content, tool_calls=response.tool_calls)
            self.context_tokens = estimate_message_tokens((*request, answer))

    def count(self, response: ChatResponse, result: RunResult[Any] | None) -> None:
        """Add one provider response's tokens to the run (if any) and the agent's life."""
        if result is not None:
            result.input_tokens += response.input_tokens
            result.output_tokens += response.output_tokens
        self.usage = self.usage + Usage(
            input_tokens=response.input_tokens, output_tokens=response.output_tokens, requests=1
        )

    def begin(self, prompt: Message, result: RunResult[Any]) -> None:
        """Append a run's prompt, remembering where it stands for compaction."""
        self.append(prompt, result)
        self._prompt_at = len(self.working) - 1

    async def compact(
        self,
        provider: Provider,
        *,
        threshold: int,
        result: RunResult[Any],
    ) -> bool:
        """Fold the working context into ``memory`` once it passes ``threshold``.

        The current prompt and what the model has not acted on yet (the latest
        tool calls and their results, or a request sent after its last answer)
        stay verbatim; the rest is summarised by ``provider``, unless it is too
        little to be worth a model call. Returns whether a compaction happened.
        """
        if self.context_tokens <= threshold:
            return False
        done = await self.fold(
            provider, result=result, minimum=threshold / _MIN_FOLD_DIVISOR, keep_prompt=True
        )
        return done.compacted

    async def fold(
        self,
        provider: Provider,
        *,
        result: RunResult[Any] | None = None,
        minimum: float = 0,
        keep_prompt: bool = False,
    ) -> Compaction:
        """Summarise the working context into ``memory`` now, whatever its size.

        What the model has not acted on yet stays verbatim, and the run's
        prompt too with ``keep_prompt``. Nothing happens when less than
        ``minimum`` tokens (or nothing at all) would be folded, or when the
        summary comes back empty.
        """
        before = max(self.context_tokens, 0)
        tail = _unanswered_tail(self.working)
        fold = self.working[: len(self.working) - len(tail)]
        # The run's prompt, if it is among what would be folded (by position:
        # the same Message object may stand in the history more than once).
        at = self._prompt_at if keep_prompt else None
        prompt = fold[at] if at is not None and at < len(fold) else None
        dropped = [m for i, m in enumerate(fold) if i != at]

        def unchanged(reason: str, response: ChatResponse | None = None) -> Compaction:
            return Compaction(
                compacted=False,
                reason=reason,
                kept=len(self.working),
                memory=self.memory,
                input_tokens=response.input_tokens if response else 0,
                output_tokens=response.output_tokens if response else 0,
                context_tokens_before=before,
                context_tokens_after=before,
            )

        if not dropped:
            return unchanged("nothing to fold: the model has not acted on the whole context yet")
        if estimate_message_tokens(dropped) < minimum:
            return unchanged("too little to fold to be worth a model call")
        response = await provider.chat(compaction_request(self.memory, fold))
        self.count(response, result)
        summary = response.content.strip()
        if not summary:
            # A model that summarises to nothing must not wipe the context.
            return unchanged("the summary came back empty", response)
        kept = [prompt] if prompt is not None else []
        self.context_tokens += (
            estimate_tokens(summary)
            - estimate_tokens(self.memory or "")
            - estimate_message_tokens(dropped)
        )
        self.memory = summary
        self.working = [*kept, *tail]
        self._prompt_at = 0 if kept else None
        self.compactions += 1
        return Compaction(
            compacted=True,
            folded=len(dropped),
            kept=len(self.working),
            memory=summary,
            input_tokens=response.input_tokens,
            output_tokens=response.output_tokens,
            context_tokens_before=before,
            context_tokens_after=max(self.context_tokens, 0),
        )

    def snapshot(self, name: str) -> AgentState:
        """The conversation as a versioned :class:`AgentState`."""
        return AgentState(
            version=STATE_VERSION,
            name=name,
            messages_full=[m.to_dict() for m in self.full],
            messages=[m.to_dict() for m in self.working],
            memory=self.memory,
            input_tokens=self.usage.input_tokens,
            output_tokens=self.usage.output_tokens,
            requests=self.usage.requests,
            context_tokens=max(self.context_tokens, 0),
            compactions=self.compactions,
        )


def _unanswered_tail(messages: Sequence[Message]) -> list[Message]:
    """The trailing messages the model has not answered yet.

    That is the latest tool turn (the assistant message that made the calls,
    and their results), or the user messages after its last answer.
    """
    tool_turn = _latest_tool_turn(messages)
    if tool_turn:
        return tool_turn
    i = len(messages)
    while i > 0 and messages[i - 1].role == "user":
        i -= 1
    return list(messages[i:])


def _latest_tool_turn(messages: Sequence[Message]) -> list[Message]:
    """The trailing assistant message that called tools and its results, if it ends the list."""
    i = len(messages)
    while i > 0 and messages[i - 1].role == "tool":
        i -= 1
    if i < len(messages) and i > 0 and messages[i - 1].tool_calls:
        return list(messages[i - 1 :])
    return []
