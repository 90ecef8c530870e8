"""Transports between MCP clients and servers."""

from ._base import Connection, DirectCall, DirectServer, SessionHandler, SessionStreams
from ._inprocess import InProcessConnection
from ._stdio import StdioConnection, StdioServerConnection
from ._unix import UnixSocketConnection
from ._websocket import TLSFiles, WebSocketConnection, is_loopback

__all__ = [
    "Connection",
    "DirectCall",
    "DirectServer",
    "InProcessConnection",
    "SessionHandler",
    "SessionStreams",
    "StdioConnection",
    "StdioServerConnection",
    "TLSFiles",
    "UnixSocketConnection",
    "WebSocketConnection",
    "is_loopback",
]
