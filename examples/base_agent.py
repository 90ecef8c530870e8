"""BaseAgent: an explicit tool client, with ``allowed_tools`` limiting what the model sees.

``SimpleAgent`` builds its tool client for you. ``BaseAgent`` takes one you
built: here a ``LocalToolClient`` holding three note-taking tools, one of which
(``delete-all-notes``) this agent should never use. ``allowed_tools`` narrows
what the model is offered, and a call to anything else is refused with an error
result instead of being run, even if the model asks for it by name.

Run it with ``python examples/base_agent.py``.
"""

from __future__ import annotations

import asyncio

from heron import BaseAgent, LocalToolClient, tool
from heron.testing import ScriptedProvider, call

notes: list[str] = []


@tool(name="add-note")
def add_note(text: str) -> str:
    """Save a note.

    Args:
        text: The note.
    """
    notes.append(text)
    return f"saved note {len(notes)}"


@tool(name="list-notes")
def list_notes() -> list[str]:
    """List every saved note."""
    return notes


@tool(name="delete-all-notes")
def delete_all_notes() -> str:
    """Delete every saved note."""
    notes.clear()
    return "deleted all notes"


async def main() -> None:
    client = LocalToolClient([add_note, list_notes, delete_all_notes], env_id="notes")

    # ScriptedProvider stands in for the model. Its first turn saves a note and
    # also tries the tool it was not offered; the second lists the notes. A
    # real provider drops in at the same place.
    provider = ScriptedProvider(
        [
            [call("add-note", text="Buy milk"), call("delete-all-notes")],
            call("list-notes"),
            "Your notes: Buy milk.",
        ]
    )
    agent = BaseAgent(
        provider=provider,
        tool_client=client,
        instruction="You keep the user's notes. Never delete them.",
        allowed_tools=["add-note", "list-notes"],
    )
    print(f"client has: {[t.name for t in await client.list_tools()]}")
    print(f"model sees: {[t.name for t in await agent.visible_tools()]}")

    result = await agent.run("Note that I need to buy milk, then show my notes.")
    for record in result.tool_calls:
        status = "error" if record.is_error else "ok"
        print(f"{status}: {record.name} -> {record.result}")
    print(f"reply: {result.reply}")
    print(f"notes kept: {notes}")


if __name__ == "__main__":
    asyncio.run(main())
