"""Writing a custom skill: instructions bundled with the tools they rely on.

``math_helper`` bundles two tools, ``math-sum`` and ``fs-write-file``, with
instructions for using them. Giving the skill to an agent registers both tools
and folds the instructions into the system prompt's ``SKILLS:`` block, printed
below. The agent then adds some numbers and saves the total to a file.

``fs-write-file`` is Heron's own, made alone by ``fs_write_file_tool(root)``
(the same tool ``filesystem_tools(root)`` includes): it writes atomically and
only inside the directory it was made for, so a model cannot reach anything
else on disk. Run it with ``python examples/custom_skill.py [DIRECTORY]``
(default: a temporary directory).
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from heron import Message, SimpleAgent, Skill, ToolCall, tool
from heron.testing import ScriptedProvider, call
from heron.tools import fs_write_file_tool


@tool(name="math-sum")
def math_sum(numbers: list[float]) -> float:
    """Add numbers exactly.

    Args:
        numbers: The numbers to add.
    """
    return sum(numbers)


def math_helper(workspace: Path) -> Skill:
    """The skill: when to use it, how, and the tools it needs."""
    return Skill(
        name="math-helper",
        description=(
            "Use this skill whenever the user asks for arithmetic that should be computed "
            "exactly rather than estimated - sums, running totals, or anything written to "
            "a file afterward."
        ),
        instructions=(
            "- Always use the math-sum tool for addition instead of computing it yourself.\n"
            "- If asked to save a result, write it with fs-write-file and confirm the path."
        ),
        tools=[math_sum, fs_write_file_tool(workspace)],
    )


def save_the_sum(messages: Sequence[Message]) -> ToolCall:
    """Scripted turn 2: write the sum that math-sum returned to total.txt."""
    return call("fs-write-file", path="total.txt", content=messages[-1].text)


def confirm(messages: Sequence[Message]) -> str:
    """Scripted turn 3: report the sum and what fs-write-file said."""
    total = next(m.text for m in messages if m.tool_name == "math-sum")
    return f"The sum is {total}; I saved it ({messages[-1].text})."


async def main(workspace: Path) -> None:
    # ScriptedProvider stands in for the model, playing back three turns: sum,
    # save, confirm. A real provider drops in at the same place.
    provider = ScriptedProvider([call("math-sum", numbers=[12, 30, 18.5]), save_the_sum, confirm])
    agent = SimpleAgent(
        provider=provider,
        instruction="You are a helpful assistant.",
        skills=[math_helper(workspace)],
    )
    prompt = agent.system_prompt()
    print(prompt[prompt.index("SKILLS:") :])
    print()

    result = await agent.run("Add 12, 30 and 18.5 and save the total to total.txt.")
    print(f"reply: {result.reply}")
    saved = workspace / "total.txt"
    print(f"{saved.name} contains: {saved.read_text(encoding='utf-8')}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        given = Path(sys.argv[1])
        given.mkdir(parents=True, exist_ok=True)  # the file tool's root must exist
        asyncio.run(main(given))
    else:
        with tempfile.TemporaryDirectory() as directory:
            asyncio.run(main(Path(directory)))
