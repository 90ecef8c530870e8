"""The seam between an agent's loop and wherever its tools run."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any

from .._core import ToolSchema, UserError
from ._context import IdGenerator, MemoryStorage, Storage, ToolContext
from ._result import ToolResult
from ._tool import Tool

__all__ = ["LocalToolClient", "ToolClient"]


class ToolClient(ABC):
    """How an agent lists and calls tools, wherever they run.

    :class:`LocalToolClient` runs them in this process; the MCP client runs
    them on Model Context Protocol servers. ``call_tool`` reports tool failures,
    unknown names and bad arguments as error results; it raises only when the
    tools cannot be reached at all. A client over some other transport::

        class HttpToolClient(ToolClient):
            async def list_tools(self) -> list[ToolSchema]:
                return [ToolSchema(**t) for t in await fetch_json("/tools")]

            async def call_tool(self, name, arguments) -> ToolResult:
                reply = await post_json(f"/tools/{name}", arguments)
                return ToolResult.of_text(reply["text"], is_error=reply["error"])

        agent = BaseAgent(provider=provider, tool_client=HttpToolClient())
    """

    @abstractmethod
    async def list_tools(self) -> list[ToolSchema]:
        """Every tool the client can call."""

    @abstractmethod
    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Call the tool ``name`` with ``arguments``."""


class LocalToolClient(ToolClient):
    """A :class:`ToolClient` running :class:`Tool` objects in this process."""

    def __init__(
        self,
        tools: Iterable[Tool] = (),
        *,
        env_id: str = "local",
        storage: Storage | None = None,
        ids: IdGenerator | None = None,
    ) -> None:
        self._tools: dict[str, Tool] = {}
        self.env_id = env_id
        """Environment id handed to every tool's context."""
        self.storage = storage if storage is not None else MemoryStorage()
        """Storage handed to every tool's context."""
        self.ids = ids if ids is not None else IdGenerator(self.storage, env_id)
        """Id generator handed to every tool's context."""
        self._context = ToolContext(env_id=env_id, storage=self.storage, ids=self.ids)
        for t in tools:
            self.register_tool(t)

    def register_tool(self, tool: Tool) -> None:
        """Add ``tool``; a different tool with the same name is a :class:`UserError`."""
        seen = self._tools.get(tool.name)
        if seen is not None and seen is not tool and not seen.same_definition(tool):
            raise UserError(f"a different tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool

    def get_tool(self, name: str) -> Tool | None:
        """The registered tool called ``name``, if any."""
        return self._tools.get(name)

    async def list_tools(self) -> list[ToolSchema]:
        """Schemas of the registered tools, in registration order."""
        return [t.schema for t in self._tools.values()]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run the tool ``name``; an unknown name is an error result listing the known ones."""
        found = self._tools.get(name)
        if found is None:
            return ToolResult.unknown_tool(name, self._tools)
        return await found.run(arguments, self._context)
