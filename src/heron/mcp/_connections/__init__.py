"""Transports between MCP clients and servers."""

from ._base import Connection, SessionHandler, SessionStreams
from ._inprocess import InProcessConnection
from ._stdio import StdioConnection, StdioServerConnection
from ._unix import UnixSocketConnection
from ._websocket import TLSFiles, WebSocketConnection

__all__ = [
    "Connection",
    "InProcessConnection",
    "SessionHandler",
    "SessionStreams",
    "StdioConnection",
    "StdioServerConnection",
    "TLSFiles",
    "UnixSocketConnection",
    "WebSocketConnection",
]
