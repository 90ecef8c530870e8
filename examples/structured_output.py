"""Structured output: ask for a pydantic model and get a validated instance back.

``agent.run(prompt, output_type=Meeting)`` adds the model's JSON schema to the
system prompt and validates the final answer against it. An answer that does
not validate is sent back to the model with the reasons, up to
``output_retries`` times (2 by default); the valid value ends up on
``result.output_value``.

Run it with ``python examples/structured_output.py``.
"""

from __future__ import annotations

import asyncio
from datetime import date

from pydantic import BaseModel, Field

from heron import SimpleAgent
from heron.testing import ScriptedProvider


class Meeting(BaseModel):
    """A meeting pulled out of free text."""

    title: str
    day: date
    attendees: list[str] = Field(min_length=1)


async def main() -> None:
    # ScriptedProvider stands in for the model. Its first answer is invalid (a
    # day that is not a date, no attendees); its second is valid. A real
    # provider drops in at the same place.
    provider = ScriptedProvider(
        [
            '{"title": "Design review", "day": "next Tuesday"}',
            '{"title": "Design review", "day": "2025-03-04", "attendees": ["Ana", "Ben"]}',
        ]
    )
    agent = SimpleAgent(provider=provider, instruction="You extract meetings from notes.")

    result = await agent.run(
        "Ana and Ben: design review on 4 March 2025.",
        output_type=Meeting,
    )
    retries = [m.text for m in result.messages[1:] if m.role == "user"]
    for complaint in retries:
        print(f"sent back: {complaint}")
    meeting = result.output_value  # typed as Meeting by output_type
    print(f"turns: {result.turns}")
    print(f"output_value: {meeting!r}")
    print(f"as JSON: {meeting.model_dump_json()}")


if __name__ == "__main__":
    asyncio.run(main())
