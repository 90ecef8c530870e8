"""The question-answer skill: its prompt entry and its stopping tool."""

from heron import SimpleAgent
from heron.skills import question_answer
from heron.testing import ScriptedProvider, call


async def test_renders_into_the_system_prompt_and_stops_the_turn() -> None:
    provider = ScriptedProvider([call("ask-questions", questions=[{"question": "Which city?"}])])
    agent = SimpleAgent(provider=provider, skills=[question_answer(), question_answer()])
    result = await agent.run("book me a hotel")

    request = provider.requests[0]
    assert request.tool_names == ["ask-questions"]
    system = request.messages[0].text
    assert "question-answer - Use when you need information, a decision" in system
    assert "ONE ask-questions call" in system
    assert result.stop_reason == "tool_stop"
    assert result.tool_calls[0].result == ("I need an answer before I can go on:\n\n1. Which city?")


def test_each_call_is_a_fresh_skill() -> None:
    first = question_answer()
    assert first is not question_answer()
    assert first.name == "question-answer"
    assert [t.name for t in first.tools] == ["ask-questions"]
    assert first.tools[0].stop_iteration_after_use
