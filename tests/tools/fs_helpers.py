"""A real temporary workspace for the filesystem tool tests, and calls into it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from heron.tools import LocalToolClient, ToolResult, filesystem_tools


class Workbench:
    """A root directory, a directory beside it, and the tools confined to the root."""

    def __init__(self, base: Path, **limits: Any) -> None:
        self.root = base / "root"
        """The tools' root directory."""
        self.outside = base / "outside"
        """A directory the tools must never reach, holding ``secret.txt``."""
        self.root.mkdir()
        self.outside.mkdir()
        (self.outside / "secret.txt").write_text("top secret\n")
        self.client = LocalToolClient(filesystem_tools(self.root, **limits))
        """A client calling the tools."""

    def write(self, relative: str, content: str | bytes) -> Path:
        """Create a file under the root (and its folders) with ``content``."""
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_bytes(content.encode())
        return path

    async def call(self, name: str, **arguments: Any) -> ToolResult:
        """Call a tool by its model-visible name."""
        return await self.client.call_tool(name, arguments)

    async def ok(self, name: str, **arguments: Any) -> str:
        """Call a tool that must succeed; return its text."""
        result = await self.call(name, **arguments)
        assert not result.is_error, result.text
        return result.text

    async def fail(self, name: str, **arguments: Any) -> str:
        """Call a tool that must fail; return its error text."""
        result = await self.call(name, **arguments)
        assert result.is_error, result.text
        return result.text
