"""The todo tools: a checklist the model keeps in its tool storage.

The list lives in the calling client's :class:`~heron.tools.Storage`, not in
the conversation, so it survives compaction and, with a persistent storage
(:class:`heron.mcp.FileStorage`), a restart::

    agent = SimpleAgent(provider=provider, tools=todo_tools(), storage=FileStorage("state"))
"""

from __future__ import annotations

import asyncio
import json
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal, get_args

from .._core import TextPart, ToolError
from ._context import Storage, ToolContext
from ._result import ToolResult
from ._tool import FunctionTool, Tool

__all__ = ["TodoItem", "TodoStatus", "load_todos", "todo_tools"]

TodoStatus = Literal["pending", "in_progress", "completed", "cancelled"]
"""Where an item stands: not started, being worked on, done, or dropped."""

_STATUSES: tuple[str, ...] = get_args(TodoStatus)
_MARKS = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]", "cancelled": "[-]"}
_KEY = "heron.todo"
# Bumped if the stored document ever changes shape, so old data is recognised.
_VERSION = 1
_MAX_TITLE = 500
_MAX_NOTES = 10_000


@dataclass(frozen=True, kw_only=True, slots=True)
class TodoItem:
    """One entry of the todo list."""

    id: str
    """Stable id (``todo-1``, ``todo-2``, ...), never reused within an environment."""
    title: str
    """What is to be done, in one line."""
    notes: str = ""
    """Details, findings or the reason for the status."""
    status: TodoStatus = "pending"
    """Where the item stands."""


@dataclass(kw_only=True, slots=True)
class _Todos:
    items: list[TodoItem]
    last_id: int

    def find(self, item_id: str) -> int:
        wanted = item_id.strip()
        for index, item in enumerate(self.items):
            if item.id == wanted:
                return index
        known = ", ".join(i.id for i in self.items) or "none (the list is empty)"
        raise ToolError(f"unknown todo id {item_id!r}; known ids: {known}")


def _storage_key(context: ToolContext) -> str:
    return context.scoped_key(_KEY)


def _decode(raw: str | None) -> _Todos:
    if raw is None:
        return _Todos(items=[], last_id=0)
    try:
        data = json.loads(raw)
        if data.get("version") != _VERSION:
            raise ValueError(f"unknown version {data.get('version')!r}")
        items = [TodoItem(**item) for item in data["items"]]
        return _Todos(items=items, last_id=int(data["last_id"]))
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        # Refuse rather than start afresh: overwriting would lose the stored list.
        raise ToolError(
            f"the stored todo list is unreadable ({exc}); it was left as it is"
        ) from None


def _encode(todos: _Todos) -> str:
    items = [asdict(i) for i in todos.items]
    return json.dumps({"version": _VERSION, "last_id": todos.last_id, "items": items})


async def load_todos(context: ToolContext) -> list[TodoItem]:
    """The todo list stored for ``context``'s environment (empty if none yet).

    For applications showing the model's progress: pass the agent's tool
    context, or one built on the same storage and environment id.
    """
    return _decode(await context.storage.get(_storage_key(context))).items


# One lock per storage and key: parallel calls of one turn must not interleave
# their read-modify-write. Weak keys, so a dropped storage takes its locks along.
_locks: weakref.WeakKeyDictionary[
    Storage, dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Lock]]
] = weakref.WeakKeyDictionary()


@asynccontextmanager
async def _editing(context: ToolContext) -> AsyncIterator[_Todos]:
    key = _storage_key(context)
    loop = asyncio.get_running_loop()
    locks = _locks.setdefault(context.storage, {})
    found = locks.get(key)
    if found is None or found[0] is not loop:  # asyncio locks cannot cross event loops
        found = locks[key] = (loop, asyncio.Lock())
    lock = found[1]
    async with lock:
        todos = _decode(await context.storage.get(key))
        before = _encode(todos)
        yield todos
        if _encode(todos) != before:
            await context.storage.set(key, _encode(todos))


def _clean_title(title: str) -> str:
    cleaned = " ".join(title.split())
    if not cleaned:
        raise ToolError("a todo title must not be empty")
    if len(cleaned) > _MAX_TITLE:
        raise ToolError(f"a todo title is one line of at most {_MAX_TITLE} characters")
    return cleaned


def _clean_notes(notes: str) -> str:
    cleaned = notes.strip()
    if len(cleaned) > _MAX_NOTES:
        raise ToolError(f"todo notes are at most {_MAX_NOTES} characters")
    return cleaned


def _line(item: TodoItem) -> str:
    line = f"{_MARKS[item.status]} {item.id}: {item.title}"
    if item.notes:
        line += "\n" + "\n".join(f"      {n}" for n in item.notes.splitlines())
    return line


def _summary(items: list[TodoItem]) -> str:
    counts = {s: sum(1 for i in items if i.status == s) for s in _STATUSES}
    parts = [f"{n} {s.replace('_', ' ')}" for s, n in counts.items() if n]
    return f"{len(items)} item{'s' if len(items) != 1 else ''}: " + ", ".join(parts)


def _with_list(headline: str, items: list[TodoItem], changed: TodoItem | None) -> ToolResult:
    """The model's view after a change: what happened, then the whole list."""
    lines = [
        headline,
        "",
        _summary(items) if items else "The todo list is empty.",
        *map(_line, items),
    ]
    structured: dict[str, Any] = {"items": [asdict(i) for i in items]}
    if changed is not None:
        structured["item"] = asdict(changed)
    return _result("\n".join(lines), structured)


def _result(text: str, structured: dict[str, Any]) -> ToolResult:
    return ToolResult(content=(TextPart(text=text),), structured=structured)


async def _todo_add(title: str, context: ToolContext, notes: str = "") -> ToolResult:
    """Add a step to your persistent todo list; returns the whole list with every id.

    Args:
        title: What is to be done, in one line.
        notes: Optional details: acceptance criteria, files involved, open questions.
    """
    clean_title, clean_notes = _clean_title(title), _clean_notes(notes)
    async with _editing(context) as todos:
        todos.last_id += 1
        item = TodoItem(id=f"todo-{todos.last_id}", title=clean_title, notes=clean_notes)
        todos.items.append(item)
    return _with_list(f"Added {item.id}.", todos.items, item)


async def _todo_update(
    id: str,
    context: ToolContext,
    title: str | None = None,
    notes: str | None = None,
    status: TodoStatus | None = None,
) -> ToolResult:
    """Change an item's title, notes or status and return the whole list.

    Args:
        id: The item's id, such as todo-3.
        title: A new title.
        notes: New notes, replacing the old ones ("" clears them).
        status: pending, in_progress, completed or cancelled.
    """
    if title is None and notes is None and status is None:
        raise ToolError("nothing to update: give a new title, notes or status")
    changes: dict[str, Any] = {}
    if title is not None:
        changes["title"] = _clean_title(title)
    if notes is not None:
        changes["notes"] = _clean_notes(notes)
    if status is not None:
        changes["status"] = status
    async with _editing(context) as todos:
        index = todos.find(id)
        item = todos.items[index] = replace(todos.items[index], **changes)
    return _with_list(f"Updated {item.id}.", todos.items, item)


async def _todo_complete(id: str, context: ToolContext) -> ToolResult:
    """Mark an item completed and return the whole list.

    Args:
        id: The item's id, such as todo-3.
    """
    async with _editing(context) as todos:
        index = todos.find(id)
        was = todos.items[index]
        item = todos.items[index] = replace(was, status="completed")
    headline = (
        f"{item.id} was already completed."
        if was.status == "completed"
        else f"Completed {item.id}."
    )
    remaining = sum(1 for i in todos.items if i.status in ("pending", "in_progress"))
    headline += f" {remaining} item{'s' if remaining != 1 else ''} still open."
    return _with_list(headline, todos.items, item)


async def _todo_list(context: ToolContext, status: TodoStatus | None = None) -> ToolResult:
    """Show the todo list: every item with its id, status and notes.

    Args:
        status: Show only items with this status.
    """
    items = await load_todos(context)
    shown = [i for i in items if status is None or i.status == status]
    if not items:
        text = "The todo list is empty."
    elif not shown:
        text = f"No {status} items. " + _summary(items)
    else:
        text = "\n".join([_summary(items), *map(_line, shown)])
    return _result(text, {"items": [asdict(i) for i in shown]})


def todo_tools() -> list[Tool]:
    """``todo-add``, ``todo-update``, ``todo-complete`` and ``todo-list``.

    Items get stable ids (``todo-1``, ...) and live in the calling client's
    storage under its environment id: each agent keeps its own list, and a
    persistent storage keeps it across restarts. Calls within one process are
    serialised; two processes sharing one storage folder may race.
    """
    return [
        FunctionTool(_todo_add, name="todo-add"),
        FunctionTool(_todo_update, name="todo-update"),
        FunctionTool(_todo_complete, name="todo-complete"),
        FunctionTool(_todo_list, name="todo-list"),
    ]
