"""The ``ask-questions`` tool: put every open question to the human at once, then stop.

The tool ends the agent's run (``stop_iteration_after_use``); the human's
answers arrive as the prompt of the next ``run()``, and the model finds its
questions right before them in the conversation::

    agent = SimpleAgent(provider=provider, tools=[question_answer_tool()])
    result = await agent.run("Set up the database.")
    while questions := asked_questions(result):
        for number, q in enumerate(questions, start=1):
            print(f"{number}. {q.question}", *(f"   - {c}" for c in q.choices), sep="\n")
        result = await agent.run(input("> "))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._core import TextPart, ToolError
from .._core.result import RunResult
from ._context import ToolContext
from ._result import ToolResult
from ._tool import Tool

__all__ = ["Question", "QuestionAnswerTool", "asked_questions", "question_answer_tool"]

_NAME = "ask-questions"
_MAX_QUESTIONS = 20
_MAX_CHOICES = 20
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


@dataclass(frozen=True, kw_only=True, slots=True)
class Question:
    """One question put to the human."""

    question: str
    """The question itself."""
    context: str = ""
    """Why it is asked or what depends on it, to help the human answer."""
    choices: tuple[str, ...] = ()
    """Suggested answers; the human may still answer in their own words."""
    multiple: bool = False
    """Whether several of the choices may be picked."""


_QUESTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "question": {"type": "string", "description": "The question, complete on its own."},
        "context": {
            "type": "string",
            "description": "Why you ask, what you already know, what depends on the answer.",
        },
        "choices": {
            "type": "array",
            "items": {"type": "string"},
            "maxItems": _MAX_CHOICES,
            "description": "Suggested answers, when the likely options are known.",
        },
        "multiple": {
            "type": "boolean",
            "description": "True when several choices may be picked together.",
        },
    },
    "required": ["question"],
    "additionalProperties": False,
}


_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "questions": {
            "type": "array",
            "items": _QUESTION_SCHEMA,
            "minItems": 1,
            "maxItems": _MAX_QUESTIONS,
            "description": "Every question you need answered, at once.",
        },
    },
    "required": ["questions"],
    "additionalProperties": False,
}


class QuestionAnswerTool(Tool):
    """``ask-questions``: batch the open questions for the human and end the turn.

    Returns the formatted request as text (``structured`` holds the questions);
    the run stops after a successful call.
    """

    name = _NAME
    description = (
        "Ask the human every question you need answered before you can go on: missing "
        "information, a decision between options, or a confirmation before something hard "
        "to undo. Put ALL pending questions in this one call; your turn ends right after it "
        "and the human's answers arrive as their next message."
    )
    input_schema: dict[str, Any] = _INPUT_SCHEMA
    stop_iteration_after_use = True

    async def execute(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Check the questions and format them as one request to the human."""
        questions = _parse(arguments["questions"])
        structured = {
            "questions": [
                {
                    "question": q.question,
                    "context": q.context,
                    "choices": list(q.choices),
                    "multiple": q.multiple,
                }
                for q in questions
            ]
        }
        return ToolResult(content=(TextPart(text=_format(questions)),), structured=structured)

    def same_definition(self, other: Tool) -> bool:
        """Every instance behaves alike: any two are interchangeable."""
        return type(other) is type(self) and other.name == self.name


def question_answer_tool() -> Tool:
    """The ``ask-questions`` tool (a :class:`QuestionAnswerTool`)."""
    return QuestionAnswerTool()


def _parse(raw: list[dict[str, Any]]) -> list[Question]:
    questions: list[Question] = []
    seen: dict[str, int] = {}
    for number, entry in enumerate(raw, start=1):
        text = " ".join(entry["question"].split())
        if not text:
            raise ToolError(f"question {number} is empty")
        earlier = seen.setdefault(text.casefold(), number)
        if earlier != number:
            raise ToolError(f"question {number} repeats question {earlier}: ask it once")
        choices = tuple(" ".join(c.split()) for c in entry.get("choices", ()))
        if any(not c for c in choices):
            raise ToolError(f"question {number} has an empty choice")
        if len({c.casefold() for c in choices}) != len(choices):
            raise ToolError(f"question {number} lists the same choice twice")
        multiple = bool(entry.get("multiple", False))
        if multiple and len(choices) < 2:
            raise ToolError(f"question {number} allows several choices but lists fewer than two")
        context = entry.get("context", "").strip()
        questions.append(
            Question(question=text, context=context, choices=choices, multiple=multiple)
        )
    return questions


def _format(questions: list[Question]) -> str:
    # What the human reads: numbered questions, their context and choices.
    if len(questions) == 1:
        lines = ["I need an answer before I can go on:", ""]
    else:
        lines = [f"I need answers to {len(questions)} questions before I can go on:", ""]
    for number, q in enumerate(questions, start=1):
        lines.append(f"{number}. {q.question}")
        if q.context:
            lines.extend(f"   {line}" for line in q.context.splitlines())
        if q.choices:
            pick = "pick any" if q.multiple else "pick one"
            lines.append(f"   Options ({pick}, or answer in your own words):")
            lines.extend(f"   {_label(i)}) {c}" for i, c in enumerate(q.choices))
    if len(questions) > 1:
        lines += ["", "Please answer by number, all in one reply."]
    return "\n".join(lines)


def _label(index: int) -> str:
    return _LETTERS[index] if index < len(_LETTERS) else str(index + 1)


def asked_questions(result: RunResult[Any]) -> tuple[Question, ...]:
    """The questions a run stopped to ask, or ``()`` when it did not stop on ``ask-questions``.

    For an application deciding whether to show questions and wait for the
    human before the next ``run()``.
    """
    if result.stop_reason != "tool_stop":
        return ()
    for record in reversed(result.tool_calls):
        if record.name == _NAME and not record.is_error:
            # The call succeeded, so its arguments passed these very checks.
            return tuple(_parse(record.arguments["questions"]))
    return ()
