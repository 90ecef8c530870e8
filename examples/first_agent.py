"""Your first agent: a SimpleAgent with one tool, streamed to the terminal.

The agent gets an instruction and a ``get-current-time`` tool written with
``@tool``: its schema comes from the type hints and its description from the
docstring. The run is streamed through ``on_chunk`` (the model's text appears as
it is generated) and the final reply is read off the returned ``RunResult``.

Run it with ``python examples/first_agent.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from heron import Message, SimpleAgent, StreamChunk, ToolError, tool
from heron.testing import ScriptedProvider, call


@tool(name="get-current-time")
def get_current_time(timezone: str = "UTC") -> str:
    """Get the current date and time as an ISO 8601 timestamp.

    Args:
        timezone: An IANA time zone name, such as "Europe/Paris".
    """
    try:
        zone = ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        # A ToolError reaches the model as an error result it can correct.
        raise ToolError(f"unknown time zone {timezone!r}; use an IANA name") from None
    return datetime.now(zone).isoformat(timespec="seconds")


def answer_with_the_time(messages: Sequence[Message]) -> str:
    """The scripted model's second turn: read the tool's result and answer."""
    return f"It is {messages[-1].text} in Paris right now."


def print_text(chunk: StreamChunk) -> None:
    """Print the model's text deltas as they arrive."""
    if chunk.role == "assistant":
        print(chunk.content, end="", flush=True)


async def main() -> None:
    # ScriptedProvider stands in for the model: it plays back these turns (a
    # tool call, then an answer built from the tool's result) so the example
    # runs offline. A real provider drops in at the same place.
    provider = ScriptedProvider(
        [call("get-current-time", timezone="Europe/Paris"), answer_with_the_time]
    )
    agent = SimpleAgent(
        provider=provider,
        instruction="You are a helpful assistant.",
        tools=[get_current_time],
    )
    result = await agent.run("What time is it in Paris?", on_chunk=print_text)
    print()
    print(f"final reply: {result.reply}")
    print(f"tool calls: {[c.name for c in result.tool_calls]}")


if __name__ == "__main__":
    asyncio.run(main())
