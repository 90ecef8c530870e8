"""A node's memory tools: ``memory-search``, ``memory-read`` (``memory:read``) and
``memory-write`` (``memory:write``: write, move or delete), each write keyed on its call."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ... import api
from ..._core import ToolError
from ...tools import Tool, ToolContext
from ..nodes import call_key
from ..server import ApiError
from ._paths import normal_path, normal_tags, slug_of
from ._service import body_of, title_of
from ._types import Written

if TYPE_CHECKING:
    from ._service import Memory

__all__ = ["memory_tools"]


_PATH = {
    "type": "string",
    "description": "The entry's path: segments of letters, digits, _ . - joined by /.",
}
_TAGS = {
    "type": "array",
    "items": {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$"},
    "maxItems": 32,
    "description": "Short labels (letters, digits, _ . : -), matched case-insensitively.",
}
_BROWSE = 50
"""Entries ``memory-search`` lists when given no query."""


def memory_tools(
    memory: Memory, node_id: str, profile: str, run: int, wanted: Callable[[str], bool]
) -> list[Tool]:
    """The memory tools ``wanted`` admits, for a node of ``profile`` in its run ``run``
    (made only when admitted: making a tool checks its schema, which costs)."""
    tools: list[Tool] = []
    if wanted(MemorySearchTool.name):
        tools.append(MemorySearchTool(memory, profile))
    if wanted(MemoryReadTool.name):
        tools.append(MemoryReadTool(memory, profile))
    if wanted(MemoryWriteTool.name):
        tools.append(MemoryWriteTool(memory, profile, node_id, run))
    return tools


def _refused(exc: ApiError) -> ToolError:
    return ToolError(exc.message)


class MemorySearchTool(Tool):
    """``memory-search``: full-text search of the profile's memory, best match first."""

    name = "memory-search"
    description = (
        "Search your long-term memory (notes kept by path). `query`: words (all must "
        'match), "a phrase", -word to exclude, or between alternatives. Optional `prefix` '
        "(only entries under that path) and `tags` (entries carrying all of them). Returns "
        "the best matches with their paths and an excerpt; read one with memory-read. "
        "Without a `query`, lists the entries (under `prefix`) by path."
    )

    def __init__(self, memory: Memory, profile: str) -> None:
        super().__init__(
            input_schema={
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "maxLength": 1000,
                        "description": "What to look for; leave out to list entries.",
                    },
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": 50,
                        "description": "At most this many results (default 10).",
                    },
                    "prefix": {
                        "type": "string",
                        "description": "Only entries at this path or under it (e.g. projects).",
                    },
                    "tags": _TAGS,
                },
                "additionalProperties": False,
            }
        )
        self._memory = memory
        self._profile = profile

    async def execute(self, arguments: dict[str, Any], context: ToolContext) -> str:
        if not (arguments.get("query") or "").strip():
            return await self._browse(arguments)
        # A lone surrogate (a model can send one) is no word to look for.
        query = arguments["query"].encode("utf-8", "replace").decode("utf-8")
        try:
            request = api.MemorySearchRequest(
                profile=self._profile, **{**arguments, "query": query}
            )
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()
            )
            raise ToolError(f"memory-search: {problems}") from None
        try:
            hits = await self._memory.search(request)
        except ApiError as exc:
            raise _refused(exc) from None
        if not hits:
            return (
                f"No memory entry matches {query!r}. Try fewer or other words,"
                " or call memory-search without a query to list the entries."
            )
        lines = [f"{len(hits)} match{'es' if len(hits) > 1 else ''}, best first:"]
        for hit in hits:
            title = f" — {hit.entry.title}" if hit.entry.title else ""
            lines.append(f"\n{hit.entry.path}{title} (score {hit.score:.3g})\n  {hit.snippet}")
        return "\n".join(lines)

    async def _browse(self, arguments: dict[str, Any]) -> str:
        """The entries under ``prefix`` (carrying ``tags``) by path: for a model that
        wants to see what its memory holds before it knows what to search for."""
        prefix, tags = arguments.get("prefix"), arguments.get("tags")
        limit = arguments.get("limit", _BROWSE)
        try:
            page = await self._memory.page(
                self._profile, prefix=prefix, limit=limit, cursor=None, tags=tags
            )
        except ApiError as exc:
            raise _refused(exc) from None
        items = page.items
        where = f" under {prefix}" if prefix else ""
        if not items:
            return f"Your memory holds no entries{where} yet."
        lines = [f"Entries{where} by path (read one with memory-read):"]
        for e in items:
            title = f" — {e.title}" if e.title else ""
            labels = f" [{', '.join(e.tags)}]" if e.tags else ""
            lines.append(f"{e.path}{title}{labels}")
        if page.next_cursor is not None:
            lines.append("… and more: narrow with `prefix`, or search with a `query`.")
        return "\n".join(lines)


class MemoryReadTool(Tool):
    """``memory-read``: one entry of the profile's memory, by path."""

    name = "memory-read"
    description = (
        "Read one entry of your memory by its `path` (as memory-search lists it; its "
        "last segment alone works when no other entry shares it). Returns its title, "
        "tags, version and full Markdown body."
    )

    def __init__(self, memory: Memory, profile: str) -> None:
        super().__init__(
            input_schema={
                "type": "object",
                "properties": {"path": _PATH},
                "required": ["path"],
                "additionalProperties": False,
            }
        )
        self._memory = memory
        self._profile = profile

    async def execute(self, arguments: dict[str, Any], context: ToolContext) -> str:
        path = arguments["path"]
        try:
            entry = await self._memory.resolve(self._profile, path=path, slug=None)
        except ApiError as exc:
            if exc.code != "memory_not_found" or "/" in path.strip().strip("/"):
                raise _refused(exc) from None
            entry = await self._by_slug(path)
        head = [f"path: {entry.path}", f"version: {entry.version}"]
        if entry.title:
            head.insert(0, f"title: {entry.title}")
        if entry.tags:
            head.append(f"tags: {', '.join(entry.tags)}")
        return "\n".join(head) + "\n\n" + entry.body

    async def _by_slug(self, slug: str) -> api.MemoryEntry:
        """The one entry whose last segment is ``slug``, else an error saying what to do."""
        try:
            return await self._memory.resolve(self._profile, path=None, slug=slug)
        except ApiError as exc:
            if exc.code == "ambiguous_slug":
                paths = ", ".join(exc.details["paths"])
                raise ToolError(f"several entries end in {slug!r}: read one of {paths}") from None
            if exc.code == "memory_not_found":
                raise ToolError(
                    f"no memory entry at {slug!r}: find entries with memory-search"
                    " (without a query it lists them)"
                ) from None
            raise _refused(exc) from None


_ACTIONS = ("write", "move", "delete")


class MemoryWriteTool(Tool):
    """``memory-write``: create or update an entry by path, move one, or delete one."""

    name = "memory-write"
    description = (
        "Change your long-term memory. action `write` (default): create the entry at "
        "`path`, or update the one there (`body` Markdown; optional `title`, `tags`; "
        "fields left out keep their value). action `move`: give the entry at `path` the "
        "path `new_path`. action `delete`: delete the entry at `path` (its history is kept)."
    )

    def __init__(self, memory: Memory, profile: str, node_id: str, run: int) -> None:
        super().__init__(
            input_schema={
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": list(_ACTIONS)},
                    "path": _PATH,
                    "body": {"type": "string", "maxLength": api.MAX_MEMORY_BODY},
                    "title": {"type": "string", "maxLength": 512},
                    "tags": _TAGS,
                    "new_path": _PATH,
                },
                "required": ["path"],
                "additionalProperties": False,
            }
        )
        self._memory = memory
        self._profile = profile
        self._node_id = node_id
        self._run = run

    async def execute(self, arguments: dict[str, Any], context: ToolContext) -> str:
        action = arguments.get("action", "write")
        # Hashed: the key holds the model's call id, which may be long.
        key = hashlib.sha256(f"{self._node_id}:{call_key(self._run)}".encode()).hexdigest()
        try:
            return await self._act(action, arguments, key)
        except ApiError as exc:
            raise _refused(exc) from None

    async def _act(self, action: str, arguments: dict[str, Any], key: str) -> str:
        memory, store = self._memory, self._memory.store
        await memory.profile(self._profile)
        written = await store.memory_by_call(key)  # this call made its change before a crash
        if written is None:
            written = await self._write(action, arguments, key)
        _, version = written
        if version["call_key"] != key:  # nothing to change: the entry's last version came back
            return f"Memory {version['path']} is unchanged (version {version['version']})."
        verb = {"create": "Created", "update": "Updated", "move": "Moved", "delete": "Deleted"}
        return f"{verb[version['op']]} memory {version['path']} (version {version['version']})."

    async def _write(self, action: str, arguments: dict[str, Any], key: str) -> Written:
        store = self._memory.store
        path = normal_path(arguments["path"])
        found = await store.memory_at(self._profile, path)
        if action == "write":
            values = _values(arguments)
            if not values:
                raise ToolError("memory-write needs a `body` (or a `title` or `tags` to change)")
            if "body" not in values and found is None:
                raise ToolError(f"no entry at {path!r} yet: give a `body` to create it")
            return await store.memory_put(
                self._profile, path, values, author=self._node_id, call_key=key
            )
        if found is None:
            raise ToolError(f"no memory entry at {path!r}")
        values = {}
        if action == "move":
            if "new_path" not in arguments:
                raise ToolError("action `move` needs `new_path`")
            target = normal_path(arguments["new_path"])
            values = {"path": target, "slug": slug_of(target)}
        return await store.memory_change(
            found["entry_id"], self._profile, action, values, author=self._node_id, call_key=key
        )


def _values(arguments: dict[str, Any]) -> dict[str, Any]:
    """The columns a ``write`` sets (checked as the API checks them)."""
    values: dict[str, Any] = {}
    if "body" in arguments:
        values["body"] = body_of(arguments["body"])
    if "title" in arguments:
        values["title"] = title_of(arguments["title"])
    if "tags" in arguments:
        values["tags"] = " ".join(normal_tags(arguments["tags"]))
    return values
