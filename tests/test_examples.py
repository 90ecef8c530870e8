"""The examples, run the way users run them: ``python examples/NAME.py`` in a new process.

Those runs are marked ``slow``: ``pytest -m "not slow"`` skips them, CI runs them.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from heron import ToolContext
from heron.tools import filesystem_tools

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
NAMES = [
    "base_agent",
    "custom_skill",
    "first_agent",
    "research_team",
    "resume_state",
    "socket_tools",
    "streaming_consumer",
    "structured_output",
]
DIM = "\x1b[2m"
RESET = "\x1b[0m"
TIMESTAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d"


def run_example(name: str, *args: str | Path, cwd: Path) -> str:
    """Run ``examples/NAME.py`` with warnings as errors; return its stdout."""
    env = {**os.environ, "PYTHONUTF8": "1"}
    env.pop("PYTHONWARNINGS", None)
    proc = subprocess.run(
        [sys.executable, "-W", "error", str(EXAMPLES / f"{name}.py"), *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, f"{name} exited {proc.returncode}:\n{proc.stderr}"
    assert proc.stderr == ""
    return proc.stdout


def test_every_example_is_tested() -> None:
    assert sorted(p.stem for p in EXAMPLES.glob("*.py")) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_example_is_documented(name: str) -> None:
    source = (EXAMPLES / f"{name}.py").read_text(encoding="utf-8")
    docstring = ast.get_docstring(ast.parse(source))
    assert docstring, f"{name}.py has no module docstring"
    assert f"python examples/{name}.py" in docstring
    assert "ScriptedProvider stands in for the model" in source
    assert "A real provider drops in at the same place" in " ".join(
        line.strip(" #") for line in source.splitlines()
    )
    readme = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    assert f"[`{name}.py`]({name}.py)" in readme


@pytest.mark.slow
def test_first_agent(tmp_path: Path) -> None:
    out = run_example("first_agent", cwd=tmp_path)
    streamed, final, calls = out.splitlines()
    match = re.fullmatch(rf"final reply: It is ({TIMESTAMP}) in Paris right now\.", final)
    assert match, final
    # What streamed through on_chunk is exactly the final reply.
    assert streamed == final.removeprefix("final reply: ")
    assert calls == "tool calls: ['get-current-time']"

    # The tool really ran: the reply carries the current time in Paris.
    reported = datetime.fromisoformat(match.group(1))
    now = datetime.now(ZoneInfo("Europe/Paris"))
    assert reported.utcoffset() == now.utcoffset()
    assert abs(now - reported) < timedelta(minutes=2)


@pytest.mark.slow
def test_streaming_consumer(tmp_path: Path) -> None:
    out = run_example("streaming_consumer", cwd=tmp_path)

    # Thinking is dimmed, all of it, and nothing else is.
    thinking = "The user wants the time, so I should ask the clock."
    dimmed = re.findall(re.escape(DIM) + r"(.*?)" + re.escape(RESET), out)
    assert "".join(dimmed) == thinking
    assert out.index(DIM) < out.index("Let me check.")
    plain = out.replace(DIM, "").replace(RESET, "")

    transcript = re.fullmatch(
        r"user: What is the current time\?\n\n"
        rf"assistant: {re.escape(thinking)}\n"
        r"Let me check\.\n"
        r"decided to call: get-current-time \{\} \(id call_1\)\n\n"
        rf"tool: ({TIMESTAMP})\n"
        r"  \[tool_call_id=call_1 tool_name=get-current-time\]\n\n"
        rf"assistant: It is ({TIMESTAMP}) \(UTC\)\.\n\n",
        plain,
    )
    assert transcript, plain
    tool_result, answer_time = transcript.groups()
    assert tool_result == answer_time
    assert tool_result.endswith("+00:00")


@pytest.mark.slow
@pytest.mark.parametrize("given_directory", [True, False], ids=["directory", "temporary"])
def test_custom_skill(tmp_path: Path, given_directory: bool) -> None:
    workspace = tmp_path / "workspace"
    args = [workspace] if given_directory else []
    out = run_example("custom_skill", *args, cwd=tmp_path)

    skills, _, rest = out.partition("\n\nreply: ")
    assert skills.startswith("SKILLS:\n\nmath-helper - Use this skill whenever")
    assert "- Always use the math-sum tool for addition" in skills
    assert "You are a helpful assistant." not in skills
    assert rest.splitlines() == [
        "The sum is 60.5; I saved it (created total.txt (4 bytes)).",
        "total.txt contains: 60.5",
    ]
    if given_directory:
        assert [p.name for p in workspace.iterdir()] == ["total.txt"]
        assert (workspace / "total.txt").read_text(encoding="utf-8") == "60.5"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["workspace"]
    else:
        assert list(tmp_path.iterdir()) == []  # the temporary directory is gone


async def test_custom_skill_uses_herons_own_file_tool(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("custom_skill", EXAMPLES / "custom_skill.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    skill = module.math_helper(workspace)
    write_file = next(t for t in skill.tools if t.name == "fs-write-file")
    # Not a re-implementation: the very tool filesystem_tools() includes.
    assert write_file.same_definition(filesystem_tools(workspace)[1])

    escaped = await write_file.run({"path": "../escaped.txt", "content": "x"}, ToolContext())
    assert escaped.is_error
    assert "outside" in escaped.text
    assert not (tmp_path / "escaped.txt").exists()

    inside = await write_file.run({"path": "notes/a.txt", "content": "hi"}, ToolContext())
    assert not inside.is_error
    assert (workspace / "notes" / "a.txt").read_text(encoding="utf-8") == "hi"


@pytest.mark.slow
def test_resume_state(tmp_path: Path) -> None:
    state_file = tmp_path / "state.json"

    first = run_example("resume_state", state_file, "My name is Ada.", cwd=tmp_path)
    assert first.splitlines() == [
        "This is message 1 of our conversation. Earlier you said: nothing yet",
        f"saved 2 messages to {state_file}",
        "model requests over the agent's life: 1",
    ]
    saved = json.loads(state_file.read_text(encoding="utf-8"))
    assert saved["version"] == 1
    assert [m["role"] for m in saved["messages_full"]] == ["user", "assistant"]

    second = run_example("resume_state", state_file, "What is my name?", cwd=tmp_path)
    assert second.splitlines() == [
        "This is message 2 of our conversation. Earlier you said: 'My name is Ada.'",
        f"saved 4 messages to {state_file}",
        "model requests over the agent's life: 2",
    ]
    saved = json.loads(state_file.read_text(encoding="utf-8"))
    assert [(m["role"], m["content"]) for m in saved["messages_full"]] == [
        ("user", "My name is Ada."),
        ("assistant", "This is message 1 of our conversation. Earlier you said: nothing yet"),
        ("user", "What is my name?"),
        ("assistant", "This is message 2 of our conversation. Earlier you said: 'My name is Ada.'"),
    ]
    assert saved["requests"] == 2


@pytest.mark.slow
def test_base_agent(tmp_path: Path) -> None:
    lines = run_example("base_agent", cwd=tmp_path).splitlines()
    assert lines[:3] == [
        "client has: ['add-note', 'list-notes', 'delete-all-notes']",
        "model sees: ['add-note', 'list-notes']",
        "ok: add-note -> saved note 1",
    ]
    # The model asked for the hidden tool anyway: refused, not run.
    assert lines[3].startswith("error: delete-all-notes -> ")
    assert "delete-all-notes" in lines[3].removeprefix("error: delete-all-notes -> ")
    assert lines[4:] == [
        'ok: list-notes -> ["Buy milk"]',
        "reply: Your notes: Buy milk.",
        "notes kept: ['Buy milk']",
    ]


@pytest.mark.slow
def test_structured_output(tmp_path: Path) -> None:
    lines = run_example("structured_output", cwd=tmp_path).splitlines()
    sent_back = [line for line in lines if line.startswith("sent back: ")]
    assert len(sent_back) == 1
    assert "day:" in sent_back[0]
    assert "attendees: Field required" in sent_back[0]
    assert "turns: 2" in lines
    assert (
        "output_value: Meeting(title='Design review', day=datetime.date(2025, 3, 4), "
        "attendees=['Ana', 'Ben'])"
    ) in lines
    (as_json,) = (line for line in lines if line.startswith("as JSON: "))
    assert json.loads(as_json.removeprefix("as JSON: ")) == {
        "title": "Design review",
        "day": "2025-03-04",
        "attendees": ["Ana", "Ben"],
    }


@pytest.mark.slow
def test_research_team(tmp_path: Path) -> None:
    out = run_example("research_team", cwd=tmp_path)
    log, reply, runs, split = out.split("\n\n")
    lines = log.splitlines()

    # The two researchers ran at once: both started before either reported back.
    started = [lines.index("[habitat] task: Where do grey herons live?")]
    started.append(lines.index("[diet] task: What do grey herons eat?"))
    answered = [i for i, line in enumerate(lines) if re.match(r"\[lead\] (habitat|diet) -> ", line)]
    assert len(answered) == 2 and max(started) < min(answered)
    assert lines[0] == "[lead] task: Write a short piece on grey herons."
    assert lines[-1].startswith("[editor] task: Grey herons live by lakes")
    assert reply == (
        "reply: Grey herons: they live by lakes, rivers and coasts across Europe and Asia. "
        "Grey herons eat mostly fish, and also frogs, voles and young birds."
    )

    # Who did what: the delegation tree with each run's tokens...
    pattern = (
        r"( *)(\w+)(?: \(for (\w+)\))?: (\d+) in / (\d+) out, own (\d+) / (\d+), end_turn, "
        r"on ([\w-]+)"
    )
    tree = [re.fullmatch(pattern, line) for line in runs.splitlines()]
    assert [(m[1], m[2], m[3], m[8]) if m else None for m in tree] == [
        ("", "lead", None, "large-model"),
        ("  ", "habitat", "lead", "small-model"),
        ("  ", "diet", "lead", "small-model"),
        ("  ", "writer", "lead", "large-model"),
        ("", "editor", None, "small-model"),
    ]
    counts = [[int(n) for n in m.groups()[3:7]] for m in tree if m]
    lead, *workers, editor = counts
    assert lead[0] == lead[2] + sum(w[0] for w in workers)  # rolled up, counted once
    assert lead[1] == lead[3] + sum(w[1] for w in workers)

    # ...and the team's total split by agent, exactly.
    *per_agent, total = split.splitlines()
    shares = [re.fullmatch(r"(\w+): (\d+) in / (\d+) out", line) for line in per_agent]
    assert [(m[1], int(m[2]), int(m[3])) if m else None for m in shares] == [
        ("lead", lead[2], lead[3]),
        *(
            (name, w[2], w[3])
            for name, w in zip(("habitat", "diet", "writer"), workers, strict=True)
        ),
        ("editor", editor[2], editor[3]),
    ]
    assert total == f"team: {lead[0] + editor[0]} in / {lead[1] + editor[1]} out in 2 steps"


@pytest.mark.slow
def test_socket_tools(tmp_path: Path) -> None:
    lines = run_example("socket_tools", cwd=tmp_path).splitlines()
    assert lines == [
        "alice: add-note -> saved note 1",
        "alice: word-count -> 2",
        'alice: list-notes -> ["Buy milk"]',
        "reply: Saved. Your notes: Buy milk.",
        "tools ran in another process: True",
        # Same server, another env_id: none of alice's notes.
        "bob: list-notes -> []",
    ]
    assert list(tmp_path.iterdir()) == []  # no state or socket left in the working folder
