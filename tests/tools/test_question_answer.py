"""``ask-questions``: one batched request, a stopped turn, the answer as the next prompt."""

from typing import Any

import pytest

from heron import SimpleAgent, ToolResult
from heron.testing import Reply, ScriptedProvider, call
from heron.tools import LocalToolClient, Question, asked_questions, question_answer_tool

DB = {
    "question": "Which database should the service use?",
    "context": "It stores orders; about 1,000 a day.",
    "choices": ["PostgreSQL (recommended)", "SQLite"],
}
DEPLOY = {"question": "Where will it be deployed?"}
FEATURES = {
    "question": "Which  optional features\n do you want?",
    "choices": ["CSV export", "Email alerts", "Dark mode"],
    "multiple": True,
}


async def ask(**arguments: Any) -> ToolResult:
    return await LocalToolClient([question_answer_tool()]).call_tool("ask-questions", arguments)


async def test_every_question_is_formatted_in_one_request() -> None:
    result = await ask(questions=[DB, DEPLOY, FEATURES])
    assert not result.is_error, result.text
    assert result.stop_iteration
    assert result.text.splitlines() == [
        "I need answers to 3 questions before I can go on:",
        "",
        "1. Which database should the service use?",
        "   It stores orders; about 1,000 a day.",
        "   Options (pick one, or answer in your own words):",
        "   a) PostgreSQL (recommended)",
        "   b) SQLite",
        "2. Where will it be deployed?",
        "3. Which optional features do you want?",
        "   Options (pick any, or answer in your own words):",
        "   a) CSV export",
        "   b) Email alerts",
        "   c) Dark mode",
        "",
        "Please answer by number, all in one reply.",
    ]
    assert result.structured["questions"][0] == {**DB, "multiple": False}
    assert result.structured["questions"][1] == {
        "question": "Where will it be deployed?",
        "context": "",
        "choices": [],
        "multiple": False,
    }


async def test_a_single_question_reads_as_one() -> None:
    result = await ask(questions=[DEPLOY])
    assert result.text == "I need an answer before I can go on:\n\n1. Where will it be deployed?"


@pytest.mark.parametrize(
    ("questions", "message"),
    [
        ([], "questions"),
        ([{"question": "  "}], "question 1 is empty"),
        ([DEPLOY, {"question": "where will it be DEPLOYED?"}], "question 2 repeats question 1"),
        ([{"question": "Pick", "choices": ["a", "A"]}], "same choice twice"),
        ([{"question": "Pick", "choices": ["a", " "]}], "empty choice"),
        ([{"question": "Pick", "choices": ["a"], "multiple": True}], "fewer than two"),
        ([{"question": "Pick", "colour": "red"}], "colour"),
        ([{"question": f"q{n}"} for n in range(21)], "questions"),
    ],
)
async def test_bad_questions_are_errors_that_do_not_stop_the_turn(
    questions: list[dict[str, Any]], message: str
) -> None:
    result = await ask(questions=questions)
    assert result.is_error
    assert message in result.text
    # The model gets to fix its call: the run goes on.
    assert not result.stop_iteration


async def test_the_run_stops_after_asking_and_the_answer_continues_it() -> None:
    provider = ScriptedProvider(
        [
            Reply(
                text="Before I start:", tool_calls=[call("ask-questions", questions=[DB, DEPLOY])]
            ),
            "Using SQLite on a Raspberry Pi: done.",
        ]
    )
    agent = SimpleAgent(provider=provider, tools=[question_answer_tool()])

    first = await agent.run("Set up the order service.")
    assert first.stop_reason == "tool_stop"
    assert first.reply == "Before I start:"
    assert len(provider.requests) == 1  # the model was not called again after asking
    assert first.tool_calls[0].result.startswith("I need answers to 2 questions")
    assert asked_questions(first) == (
        Question(
            question=DB["question"],
            context=DB["context"],
            choices=("PostgreSQL (recommended)", "SQLite"),
        ),
        Question(question=DEPLOY["question"]),
    )

    second = await agent.run("1. SQLite 2. A Raspberry Pi")
    assert second.reply == "Using SQLite on a Raspberry Pi: done."
    assert second.stop_reason != "tool_stop"
    assert asked_questions(second) == ()
    # The model saw its questions, their formatted result, then the human's answers.
    history = provider.requests[-1].messages
    tool_message = next(m for m in history if m.role == "tool")
    assert "1. Which database should the service use?" in tool_message.text
    assert history[-1].role == "user"
    assert history[-1].text == "1. SQLite 2. A Raspberry Pi"


async def test_a_failed_ask_lets_the_model_retry_in_the_same_run() -> None:
    provider = ScriptedProvider(
        [
            call("ask-questions", questions=[{"question": ""}]),
            call("ask-questions", questions=[DEPLOY]),
        ]
    )
    agent = SimpleAgent(provider=provider, tools=[question_answer_tool()])
    result = await agent.run("deploy it")
    assert result.stop_reason == "tool_stop"
    assert [r.is_error for r in result.tool_calls] == [True, False]
    assert asked_questions(result) == (Question(question=DEPLOY["question"]),)


async def test_two_instances_register_as_one_tool() -> None:
    provider = ScriptedProvider(["hi"])
    agent = SimpleAgent(provider=provider, tools=[question_answer_tool(), question_answer_tool()])
    await agent.run("hello")
    assert provider.requests[0].tool_names == ["ask-questions"]
