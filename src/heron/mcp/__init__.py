"""Tool execution over the Model Context Protocol: servers, clients, transports, storage.

Heron tools served by :class:`MCPServer` can be called by any MCP client, and
:class:`MCPClient` lets a Heron agent call the tools of any MCP server, over
an in-process link, a Unix socket, a WebSocket or a subprocess's stdio.
"""

# Modules, not names: the public-API test counts every other top-level name as public.
import importlib
import typing

from ..tools import IdGenerator, MemoryStorage, Storage, ToolContext
from ._errors import ComputerError, MCPConnectionError
from ._filter import FILTERED_OUTPUT, OutputFilter
from ._storage import FileStorage, ScopedStorage

if typing.TYPE_CHECKING:
    from ._client import MCPClient
    from ._computer import Computer
    from ._connections import (
        Connection,
        InProcessConnection,
        StdioConnection,
        StdioServerConnection,
        TLSFiles,
        UnixSocketConnection,
        WebSocketConnection,
    )
    from ._server import DEFAULT_ENV_ID, MCPServer

# The names below need the MCP SDK, whose import takes about a second of CPU: they are
# imported on first use, so what needs only storage (the daemon's profiles) skips it.
_LAZY = {
    "DEFAULT_ENV_ID": "._server",
    "Computer": "._computer",
    "Connection": "._connections",
    "InProcessConnection": "._connections",
    "MCPClient": "._client",
    "MCPServer": "._server",
    "StdioConnection": "._connections",
    "StdioServerConnection": "._connections",
    "TLSFiles": "._connections",
    "UnixSocketConnection": "._connections",
    "WebSocketConnection": "._connections",
}


def __getattr__(name: str) -> typing.Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "DEFAULT_ENV_ID",
    "FILTERED_OUTPUT",
    "Computer",
    "ComputerError",
    "Connection",
    "FileStorage",
    "IdGenerator",
    "InProcessConnection",
    "MCPClient",
    "MCPConnectionError",
    "MCPServer",
    "MemoryStorage",
    "OutputFilter",
    "ScopedStorage",
    "StdioConnection",
    "StdioServerConnection",
    "Storage",
    "TLSFiles",
    "ToolContext",
    "UnixSocketConnection",
    "WebSocketConnection",
]
