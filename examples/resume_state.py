"""Resuming an agent: save ``agent.state()`` after a run, pass it back as ``state=``.

``agent.state()`` is a plain, JSON-serialisable snapshot of the conversation,
memory and token counters. This script loads it from ``STATE_FILE`` when the
file exists, runs one prompt and saves the new state, so each invocation
continues the conversation of the one before, even in a new process::

    python examples/resume_state.py state.json "My name is Ada."
    python examples/resume_state.py state.json "What is my name?"
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from heron import Message, SimpleAgent
from heron.testing import ScriptedProvider


def recall(messages: Sequence[Message]) -> str:
    """The scripted model's turn: answer from everything the user has said so far."""
    said = [m.text for m in messages if m.role == "user"]
    earlier = ", ".join(repr(text) for text in said[:-1]) or "nothing yet"
    return f"This is message {len(said)} of our conversation. Earlier you said: {earlier}"


def main(state_file: Path, prompt: str) -> None:
    saved = json.loads(state_file.read_text(encoding="utf-8")) if state_file.exists() else None

    # ScriptedProvider stands in for the model with a single turn that reads
    # the history it is sent. A real provider drops in at the same place.
    agent = SimpleAgent(
        provider=ScriptedProvider([recall]),
        instruction="You are a helpful assistant.",
        state=saved,
    )
    result = agent.run_sync(prompt)  # the blocking twin of `await agent.run(prompt)`
    print(result.reply)

    state_file.write_text(json.dumps(agent.state(), indent=2), encoding="utf-8")
    print(f"saved {len(agent.messages_full)} messages to {state_file}")
    print(f"model requests over the agent's life: {agent.usage.requests}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Run one prompt, resuming saved state.")
    parser.add_argument("state_file", type=Path, help="JSON file to resume from and save to")
    parser.add_argument("prompt", help="what to say to the agent")
    args = parser.parse_args()
    main(args.state_file, args.prompt)
