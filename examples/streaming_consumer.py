"""A minimal streaming consumer: print every kind of chunk a run produces.

``on_chunk`` receives each :class:`heron.StreamChunk` of a run as it happens:

- one ``user`` chunk echoing the prompt;
- per model turn, ``assistant`` chunks: ``thinking`` deltas first, then
  ``content`` deltas, one chunk per tool call the moment the model has decided
  on it (``tool_calls`` holds that one call), then a ``done`` chunk;
- one ``tool`` chunk per tool result, with ``tool_call_id`` and ``tool_name``.

The printer below shows a header whenever the role changes, dims the thinking
(ANSI ``2m``) so it stands apart from the answer, and leaves a blank line after
each finished message. Run it with ``python examples/streaming_consumer.py``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Sequence
from datetime import UTC, datetime

from heron import Message, SimpleAgent, StreamChunk, tool
from heron.testing import Reply, ScriptedProvider, call

DIM = "\x1b[2m"
RESET = "\x1b[0m"


@tool(name="get-current-time")
def get_current_time() -> str:
    """Get the current UTC date and time as an ISO 8601 timestamp."""
    return datetime.now(UTC).isoformat(timespec="seconds")


class ConsolePrinter:
    """An ``on_chunk`` callback that prints a run as a chat transcript."""

    def __init__(self) -> None:
        self.role: str | None = None
        self.thinking = False

    def __call__(self, chunk: StreamChunk) -> None:
        if chunk.role != self.role:
            self.write(f"{chunk.role}: ")
            self.role = chunk.role

        if chunk.thinking:
            self.write(f"{DIM}{chunk.thinking}{RESET}")
            self.thinking = True
        elif chunk.content:
            if self.thinking:  # the answer starts on its own line
                self.write("\n")
                self.thinking = False
            self.write(chunk.content)

        if chunk.tool_calls:
            decided = chunk.tool_calls[0]
            self.write(
                f"\ndecided to call: {decided.name} {json.dumps(decided.arguments)} "
                f"(id {decided.id})"
            )
        if chunk.role == "tool":
            self.write(f"\n  [tool_call_id={chunk.tool_call_id} tool_name={chunk.tool_name}]")

        if chunk.done:
            self.write("\n\n")
            self.role = None
            self.thinking = False

    @staticmethod
    def write(text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()  # show each delta now, not when the buffer fills


def answer_with_the_time(messages: Sequence[Message]) -> str:
    """The scripted model's second turn: answer from the tool's result."""
    return f"It is {messages[-1].text} (UTC)."


async def main() -> None:
    # ScriptedProvider stands in for the model. Its first turn thinks, says a
    # few words and calls a tool, so every kind of chunk shows up; the second
    # answers from the tool's result. A real provider drops in at the same place.
    provider = ScriptedProvider(
        [
            Reply(
                thinking="The user wants the time, so I should ask the clock.",
                text="Let me check.",
                tool_calls=[call("get-current-time")],
            ),
            answer_with_the_time,
        ]
    )
    agent = SimpleAgent(
        provider=provider,
        instruction="You are a helpful assistant.",
        tools=[get_current_time],
    )
    await agent.run("What is the current time?", on_chunk=ConsolePrinter())


if __name__ == "__main__":
    asyncio.run(main())
