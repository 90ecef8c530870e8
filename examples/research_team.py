"""A small research team: a lead with researchers and a writer as tools, then an editor.

The lead's model calls two researcher agents at once (``agent.as_tool()``): they
run concurrently, each looking things up with its own tool, and their answers
come back as tool results. The lead then hands the facts to a writer agent, and
a ``Pipeline`` passes the lead's article on to an editor. Every agent's chunks
reach one ``on_chunk``, tagged with the agent's name, and the end of the run
prints who did what and at what cost: the delegation tree with each run's
tokens, and the split of the team's total by agent.

Run it with ``python examples/research_team.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from heron import Message, Pipeline, RunResult, SimpleAgent, StreamChunk, tool
from heron.testing import Reply, ScriptedProvider, call

NOTES = {
    "habitat": "Grey herons live by lakes, rivers and coasts across Europe and Asia.",
    "diet": "Grey herons eat mostly fish, and also frogs, voles and young birds.",
}


@tool
async def search_notes(topic: str) -> str:
    """Look a topic up in the field notes.

    Args:
        topic: One of "habitat" or "diet".
    """
    return NOTES.get(topic, f"no notes on {topic!r}")


def from_tool_result(messages: Sequence[Message]) -> str:
    """A researcher's answer: what its tool found."""
    return f"Found: {messages[-1].text}"


def article(messages: Sequence[Message]) -> str:
    """The writer's answer, built from the task it was given."""
    facts = messages[-1].text.removeprefix("Write two sentences from these facts: ")
    return facts.replace("Found: ", "")


def final_answer(messages: Sequence[Message]) -> str:
    """The lead's last turn: pass the writer's article on."""
    return messages[-1].text


def edited(messages: Sequence[Message]) -> str:
    """The editor's answer: the article, tidied."""
    return "Grey herons: " + messages[-1].text.replace("Grey herons ", "they ", 1)


def researcher(name: str, topic: str) -> SimpleAgent:
    # ScriptedProvider stands in for the model: each agent plays back its own
    # turns so the example runs offline, the first one taking a moment like a
    # real model. A real provider drops in at the same place.
    first_turn = Reply(tool_calls=[call("search_notes", topic=topic)], delay=0.05)
    return SimpleAgent(
        provider=ScriptedProvider([first_turn, from_tool_result], model="small-model"),
        name=name,
        instruction=f"You research the {topic} of birds. Use the field notes.",
        tools=[search_notes],
    )


def show(chunk: StreamChunk) -> None:
    """Print each agent's task and tool results (a pipeline tags every step's chunks)."""
    if chunk.role == "user":
        print(f"[{chunk.agent}] task: {chunk.content}")
    elif chunk.role == "tool":
        print(f"[{chunk.agent}] {chunk.tool_name} -> {chunk.content}")


def tree(run: RunResult, depth: int = 0) -> None:
    """Print a run and its sub-runs: who, for whom, on which model, and at what cost."""
    by = f" (for {run.delegated_by})" if run.delegated_by else ""
    print(
        f"{'  ' * depth}{run.agent_name}{by}: {run.input_tokens} in / {run.output_tokens} out, "
        f"own {run.own_input_tokens} / {run.own_output_tokens}, {run.stop_reason}, "
        f"on {run.model or run.provider}"
    )
    for sub in run.sub_runs:
        tree(sub, depth + 1)


async def main() -> None:
    habitat, diet = researcher("habitat", "habitat"), researcher("diet", "diet")
    writer = SimpleAgent(
        provider=ScriptedProvider([article], model="large-model"),
        name="writer",
        instruction="You write short, clear articles.",
    )
    lead = SimpleAgent(
        provider=ScriptedProvider(
            [
                # Both researchers in one turn: they run at the same time.
                [
                    call("habitat", task="Where do grey herons live?"),
                    call("diet", task="What do grey herons eat?"),
                ],
                lambda messages: call(
                    "writer",
                    task="Write two sentences from these facts: "
                    + " ".join(m.text for m in messages[-2:]),
                ),
                final_answer,
            ],
            model="large-model",
        ),
        name="lead",
        instruction="You lead a research team. Ask the researchers, then the writer.",
        tools=[habitat.as_tool(), diet.as_tool(), writer.as_tool()],
    )
    editor = SimpleAgent(provider=ScriptedProvider([edited], model="small-model"), name="editor")

    team = await Pipeline([lead, editor], name="research-team").run(
        "Write a short piece on grey herons.", on_chunk=show
    )

    print(f"\nreply: {team.reply}\n")
    for step in team.steps:
        tree(step)
    print()
    for name, (tokens_in, tokens_out) in team.tokens_by_agent().items():
        print(f"{name}: {tokens_in} in / {tokens_out} out")
    print(f"team: {team.input_tokens} in / {team.output_tokens} out in {len(team.steps)} steps")


if __name__ == "__main__":
    asyncio.run(main())
