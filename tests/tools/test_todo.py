"""The todo tools: stable ids, edits, clear errors, and a list that outlives its client."""

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from heron import SimpleAgent, ToolContext, ToolResult
from heron.mcp import FileStorage, InProcessConnection, MCPClient, MCPServer
from heron.testing import ScriptedProvider, call
from heron.tools import LocalToolClient, MemoryStorage, TodoItem, load_todos, todo_tools


class Todos:
    """A client over the todo tools, calling them as the model would."""

    def __init__(self, storage: Any = None, env_id: str = "local") -> None:
        self.client = LocalToolClient(todo_tools(), storage=storage, env_id=env_id)

    async def __call__(self, name: str, **arguments: Any) -> ToolResult:
        return await self.client.call_tool(f"todo-{name}", arguments)

    async def ok(self, name: str, **arguments: Any) -> ToolResult:
        result = await self(name, **arguments)
        assert not result.is_error, result.text
        return result

    async def items(self) -> list[TodoItem]:
        context = ToolContext(env_id=self.client.env_id, storage=self.client.storage)
        return await load_todos(context)


async def test_the_four_tools_have_their_agreed_names() -> None:
    assert [t.name for t in todo_tools()] == [
        "todo-add",
        "todo-update",
        "todo-complete",
        "todo-list",
    ]


async def test_add_gives_stable_sequential_ids_and_returns_the_whole_list() -> None:
    todos = Todos()
    first = await todos.ok("add", title="Write the schema", notes="tables: users, orders")
    second = await todos.ok("add", title="  Write   the\nhandlers ")

    assert first.structured["item"] == {
        "id": "todo-1",
        "title": "Write the schema",
        "notes": "tables: users, orders",
        "status": "pending",
    }
    assert second.structured["item"]["id"] == "todo-2"
    assert second.structured["item"]["title"] == "Write the handlers"  # one line
    assert second.text.splitlines() == [
        "Added todo-2.",
        "",
        "2 items: 2 pending",
        "[ ] todo-1: Write the schema",
        "      tables: users, orders",
        "[ ] todo-2: Write the handlers",
    ]


async def test_update_changes_only_what_is_given() -> None:
    todos = Todos()
    await todos.ok("add", title="Draft", notes="keep")
    result = await todos.ok("update", id="todo-1", status="in_progress")
    assert result.structured["item"] == {
        "id": "todo-1",
        "title": "Draft",
        "notes": "keep",
        "status": "in_progress",
    }
    await todos.ok("update", id=" todo-1 ", title="Final draft", notes="")
    assert await todos.items() == [
        TodoItem(id="todo-1", title="Final draft", notes="", status="in_progress")
    ]


async def test_complete_and_list_with_a_status_filter() -> None:
    todos = Todos()
    for title in ["a", "b", "c"]:
        await todos.ok("add", title=title)
    done = await todos.ok("complete", id="todo-2")
    assert done.text.startswith("Completed todo-2. 2 items still open.")
    again = await todos.ok("complete", id="todo-2")
    assert again.text.startswith("todo-2 was already completed.")
    await todos.ok("update", id="todo-3", status="cancelled", notes="not needed")

    listed = await todos.ok("list")
    assert listed.text.splitlines() == [
        "3 items: 1 pending, 1 completed, 1 cancelled",
        "[ ] todo-1: a",
        "[x] todo-2: b",
        "[-] todo-3: c",
        "      not needed",
    ]
    pending = await todos.ok("list", status="pending")
    assert [i["id"] for i in pending.structured["items"]] == ["todo-1"]
    progress = await todos.ok("list", status="in_progress")
    assert progress.structured["items"] == []
    assert progress.text.startswith("No in_progress items.")
    assert (await Todos().ok("list")).text == "The todo list is empty."


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("update", {"id": "todo-9", "status": "completed"}, "unknown todo id 'todo-9'"),
        ("complete", {"id": "todo-9"}, "known ids: todo-1"),
        ("update", {"id": "todo-1"}, "nothing to update"),
        ("update", {"id": "todo-1", "status": "finished"}, "status"),
        ("add", {"title": "   "}, "must not be empty"),
        ("add", {"title": "x" * 501}, "at most 500"),
        ("add", {"notes": "no title"}, "title"),
    ],
)
async def test_bad_calls_are_clear_errors_that_change_nothing(
    tool: str, arguments: dict[str, Any], message: str
) -> None:
    todos = Todos()
    await todos.ok("add", title="only item")
    before = await todos.items()
    result = await todos(tool, **arguments)
    assert result.is_error
    assert message in result.text
    assert await todos.items() == before


async def test_unknown_id_on_an_empty_list_says_so() -> None:
    result = await Todos()("complete", id="todo-1")
    assert result.is_error
    assert "none (the list is empty)" in result.text


async def test_ids_are_never_reused_after_a_cancel() -> None:
    todos = Todos()
    await todos.ok("add", title="a")
    await todos.ok("update", id="todo-1", status="cancelled")
    added = await todos.ok("add", title="b")
    assert added.structured["item"]["id"] == "todo-2"


async def test_parallel_adds_of_one_turn_lose_nothing(tmp_path: Path) -> None:
    # File storage does its I/O in threads, so unguarded calls would interleave.
    todos = Todos(FileStorage(tmp_path))
    results = await asyncio.gather(*(todos.ok("add", title=f"step {n}") for n in range(20)))
    ids = sorted(r.structured["item"]["id"] for r in results)
    assert ids == sorted(f"todo-{n}" for n in range(1, 21))
    assert len(await todos.items()) == 20


async def test_the_list_survives_a_restart_on_file_storage(tmp_path: Path) -> None:
    first = Todos(FileStorage(tmp_path), env_id="builder")
    await first.ok("add", title="Set up the project")
    await first.ok("add", title="Write tests")
    await first.ok("complete", id="todo-1")

    # A new client on a new storage object over the same folder: a restarted process.
    second = Todos(FileStorage(tmp_path), env_id="builder")
    listed = await second.ok("list")
    assert listed.text.splitlines()[1:] == [
        "[x] todo-1: Set up the project",
        "[ ] todo-2: Write tests",
    ]
    added = await second.ok("add", title="Ship it")
    assert added.structured["item"]["id"] == "todo-3"

    # Another environment on the same folder has its own list.
    other = Todos(FileStorage(tmp_path), env_id="reviewer")
    assert (await other.ok("list")).text == "The todo list is empty."


async def test_an_agent_resumes_its_plan_after_a_restart(tmp_path: Path) -> None:
    """The list lives in storage, not in the conversation: a fresh agent finds it."""
    planning = ScriptedProvider(
        [[call("todo-add", title="Parse input"), call("todo-add", title="Print report")], "ok"]
    )
    await SimpleAgent(
        provider=planning, name="worker", tools=todo_tools(), storage=FileStorage(tmp_path)
    ).run("plan it")

    resuming = ScriptedProvider([call("todo-list"), "resuming"])
    restarted = SimpleAgent(
        provider=resuming, name="worker", tools=todo_tools(), storage=FileStorage(tmp_path)
    )
    result = await restarted.run("carry on")
    assert "[ ] todo-1: Parse input" in result.tool_calls[0].result
    assert "[ ] todo-2: Print report" in result.tool_calls[0].result


async def test_an_unreadable_stored_list_is_an_error_and_is_kept() -> None:
    storage = MemoryStorage()
    await storage.set("local/heron.todo", "{not json")
    result = await Todos(storage)("add", title="x")
    assert result.is_error
    assert "unreadable" in result.text
    assert await storage.get("local/heron.todo") == "{not json"


async def test_the_stored_document_is_versioned_json() -> None:
    storage = MemoryStorage()
    await Todos(storage).ok("add", title="x")
    stored = json.loads(await storage.get("local/heron.todo") or "")
    assert stored == {
        "version": 1,
        "last_id": 1,
        "items": [{"id": "todo-1", "title": "x", "notes": "", "status": "pending"}],
    }


async def test_served_over_mcp_the_list_outlives_the_server(tmp_path: Path) -> None:
    """Tool state lives in the server's storage, per client environment."""

    async def serve_and_call(name: str, arguments: dict[str, Any]) -> ToolResult:
        connection = InProcessConnection()
        async with MCPServer(connection, FileStorage(tmp_path)) as server:
            for made in todo_tools():
                server.register_tool(made)
            async with MCPClient("planner-env", connection, MemoryStorage()) as client:
                return await client.call_tool(name, arguments)

    await serve_and_call("todo-add", {"title": "Survive a restart"})
    # A second server process would build all of this afresh over the same folder.
    listed = await serve_and_call("todo-list", {})
    assert not listed.is_error, listed.text
    assert listed.text.splitlines()[1:] == ["[ ] todo-1: Survive a restart"]
