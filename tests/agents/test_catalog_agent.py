"""An agent built from the catalog plans with the todo tools, edits a file and presents it."""

import zipfile
from collections.abc import Sequence
from pathlib import Path

from heron import Message, SimpleAgent, ToolCall, ToolContext
from heron.mcp import FileStorage
from heron.skills import planner, present
from heron.testing import ScriptedProvider, call
from heron.tools.fs import filesystem_tools
from heron.tools.todo import load_todos


def project(root: Path) -> Path:
    root.mkdir()
    (root / "app.py").write_text("GREETING = 'hello'\nprint(GREETING)\n")
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "app.cpython-311.pyc").write_bytes(b"\x00bytecode")
    (root / ".venv" / "bin").mkdir(parents=True)
    (root / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    return root


def complete_the_item_just_started(messages: Sequence[Message]) -> ToolCall:
    """Like a model would: take the id from the todo tool's last answer, not from the script."""
    started = next(
        m.text for m in reversed(messages) if m.role == "tool" and m.text.startswith("Updated ")
    )
    return call("todo-complete", id=started.removeprefix("Updated ").split(".")[0])


async def test_plan_edit_and_present(tmp_path: Path) -> None:
    root = project(tmp_path / "work")
    state = tmp_path / "state"
    provider = ScriptedProvider(
        [
            [
                call("todo-add", title="Change the greeting", notes="app.py"),
                call("todo-add", title="Hand the project back"),
            ],
            call("todo-update", id="todo-1", status="in_progress"),
            call("fs-read-file", path="app.py"),
            call("fs-edit-file", path="app.py", old_text="'hello'", new_text="'hello, world'"),
            complete_the_item_just_started,
            call("present-zip", name="greeting.zip"),
            call("todo-complete", id="todo-2"),
            call("todo-list"),
            "The greeting now says hello, world; greeting.zip holds the project.",
        ]
    )
    agent = SimpleAgent(
        provider=provider,
        name="builder",
        instruction="You change small Python projects.",
        tools=filesystem_tools(root),
        skills=[planner(), present(root)],
        storage=FileStorage(state),
    )
    result = await agent.run("Make the greeting say 'hello, world' and send me the project.")

    assert result.reply == "The greeting now says hello, world; greeting.zip holds the project."
    assert [r.name for r in result.tool_calls if r.is_error] == []
    assert provider.remaining == 0

    # The model was told about both skills and offered every tool once.
    first = provider.requests[0]
    assert "planner - Use for any large" in first.messages[0].text
    assert "present - Use when a job's output is files" in first.messages[0].text
    assert sorted(first.tool_names) == sorted(
        [
            *(t.name for t in filesystem_tools(root)),
            "todo-add",
            "todo-update",
            "todo-complete",
            "todo-list",
            "present-files",
            "present-zip",
        ]
    )

    # The edit happened on disk, and the archive holds the edited file and nothing else.
    assert (root / "app.py").read_text() == "GREETING = 'hello, world'\nprint(GREETING)\n"
    with zipfile.ZipFile(root / "greeting.zip") as archive:
        assert archive.namelist() == ["app.py"]
        assert archive.read("app.py") == (root / "app.py").read_bytes()
    present_call = next(r for r in result.tool_calls if r.name == "present-zip")
    assert "__pycache__/ (build artifact or cache)" in present_call.result
    assert ".venv/ (build artifact or cache)" in present_call.result

    # The plan is finished, and it is kept in the storage, not in the conversation.
    assert result.tool_calls[-1].result.splitlines() == [
        "2 items: 2 completed",
        "[x] todo-1: Change the greeting",
        "      app.py",
        "[x] todo-2: Hand the project back",
    ]
    kept = await load_todos(ToolContext(env_id="builder", storage=FileStorage(state)))
    assert [(i.id, i.status) for i in kept] == [("todo-1", "completed"), ("todo-2", "completed")]
