"""The compaction request: the messages an agent sends to have its memory summarised.

Written here, below the agent loop, because the providers' scripted models and the daemon
recognise it too (:func:`is_compaction_request`), and a provider must not import the loop.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from .messages import Message

__all__ = ["compaction_request", "is_compaction_request"]


# A single huge tool output must not make the summary request itself overflow.
_MAX_CHARS_PER_MESSAGE = 4_000

_SYSTEM = (
    "You maintain the long-term memory of an AI agent whose conversation has grown too "
    "long for its context window. Write a new memory that replaces the old one and the "
    "transcript below. Keep every fact the agent may need later: what the user wants "
    "(including the task in progress and what remains of it), names, numbers, decisions, "
    "file paths, tool results that matter, and what has already been done. Leave out "
    "pleasantries and repetition. Write plain text, concise but complete."
)


def _render(message: Message) -> str:
    text = message.text
    if len(text) > _MAX_CHARS_PER_MESSAGE:
        text = text[:_MAX_CHARS_PER_MESSAGE] + " [...truncated]"
    if message.role == "tool":
        state = "failed" if message.is_error else "result"
        return f"TOOL {message.tool_name} {state}: {text}"
    line = f"{message.role.upper()}: {text}"
    for call in message.tool_calls:
        line += f"\n  [called {call.name} {json.dumps(call.arguments)}]"
    if message.images:
        line += f"\n  [{len(message.images)} image(s)]"
    return line


def compaction_request(memory: str | None, messages: Sequence[Message]) -> list[Message]:
    """The messages asking a provider to merge ``memory`` and ``messages`` into a new memory."""
    transcript = "\n".join(_render(m) for m in messages)
    previous = memory.strip() if memory else "(none yet)"
    return [
        Message.system(_SYSTEM),
        Message.user(
            f"CURRENT MEMORY:\n{previous}\n\nTRANSCRIPT SINCE THEN:\n{transcript}\n\n"
            "Write the new memory now."
        ),
    ]


def is_compaction_request(messages: Sequence[Message]) -> bool:
    """Whether ``messages`` is an agent asking its provider to summarise its memory.

    Scripted models use it to answer compaction requests apart from turns::

        def model(messages):
            if is_compaction_request(messages):
                return "Summary: ..."
            return "An answer."
    """
    return bool(messages) and messages[0].role == "system" and messages[0].text == _SYSTEM
