"""Tool execution over the Model Context Protocol: servers, clients, transports, storage.

Heron tools served by :class:`MCPServer` can be called by any MCP client, and
:class:`MCPClient` lets a Heron agent call the tools of any MCP server, over
an in-process link, a Unix socket, a WebSocket or a subprocess's stdio.
"""

from ..tools import IdGenerator, MemoryStorage, Storage, ToolContext
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
from ._errors import ComputerError, MCPConnectionError
from ._filter import FILTERED_OUTPUT, OutputFilter
from ._server import DEFAULT_ENV_ID, MCPServer
from ._storage import FileStorage, ScopedStorage

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
