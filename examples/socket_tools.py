"""Tools served from another process over a Unix socket, with state kept per user.

The script plays both parts. It starts itself again as a tool server
(``python examples/socket_tools.py serve SOCKET``), an ``MCPServer`` listening
on a Unix socket, then runs an agent whose ``MCPClient`` calls those tools
across the socket over the Model Context Protocol. Two clients with different
``env_id`` values share the server, and each sees only its own notes. A cheap
tool registered on the client itself runs right here, with no round trip.

Run it with ``python examples/socket_tools.py``.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

from heron import BaseAgent, ToolContext, tool
from heron.mcp import FileStorage, MCPClient, MCPServer, MemoryStorage, UnixSocketConnection
from heron.testing import ScriptedProvider, call


@tool(name="add-note")
async def add_note(text: str, context: ToolContext) -> str:
    """Save a note for the current user.

    Args:
        text: The note.
    """
    # The server hands each calling client its own share of storage.
    notes = json.loads(await context.storage.get("notes") or "[]")
    notes.append(text)
    await context.storage.set("notes", json.dumps(notes))
    return f"saved note {len(notes)}"


@tool(name="list-notes")
async def list_notes(context: ToolContext) -> list[str]:
    """List the current user's notes."""
    notes: list[str] = json.loads(await context.storage.get("notes") or "[]")
    return notes


@tool(name="server-pid")
def server_pid() -> int:
    """The process id of the tool server."""
    return os.getpid()


@tool(name="word-count")
def word_count(text: str) -> int:
    """Count the words of a text (cheap and harmless: runs in the agent's process)."""
    return len(text.split())


async def serve(socket_path: str) -> None:
    """The tool-server side: serve the note tools until stopped."""
    # State on disk, next to the socket: it would survive a server restart.
    storage = FileStorage(Path(socket_path).parent / "state")
    connection = UnixSocketConnection(mode="server", path=socket_path)
    async with MCPServer(connection, storage) as server:
        for t in (add_note, list_notes, server_pid):
            server.register_tool(t)
        # SIGTERM closes the server cleanly, removing its socket file.
        asyncio.get_running_loop().add_signal_handler(
            signal.SIGTERM, lambda: asyncio.create_task(server.close())
        )
        print("listening", file=sys.stderr, flush=True)
        await server.serve_forever()


async def agent_side(socket_path: str) -> None:
    """The agent side: two users' clients calling the server's tools."""
    connection = UnixSocketConnection(mode="client", path=socket_path)
    async with MCPClient("alice", connection, MemoryStorage()) as alice:
        alice.register_tool(word_count)
        # ScriptedProvider stands in for the model. A real provider drops in at
        # the same place.
        provider = ScriptedProvider(
            [
                [call("add-note", text="Buy milk"), call("word-count", text="Buy milk")],
                call("list-notes"),
                "Saved. Your notes: Buy milk.",
            ]
        )
        agent = BaseAgent(provider=provider, tool_client=alice, instruction="Keep notes.")
        result = await agent.run("Note that I need to buy milk.")
        for record in result.tool_calls:
            print(f"alice: {record.name} -> {record.result}")
        print(f"reply: {result.reply}")
        pid = (await alice.call_tool("server-pid", {})).structured
        print(f"tools ran in another process: {pid != os.getpid()}")

    async with MCPClient("bob", connection, MemoryStorage()) as bob:
        print(f"bob: list-notes -> {(await bob.call_tool('list-notes', {})).text}")


async def main() -> None:
    """Start the tool server as a subprocess, run the agent side, stop the server."""
    folder = Path(tempfile.mkdtemp(prefix="heron-example-"))
    socket_path = str(folder / "tools.sock")
    server = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        "serve",
        socket_path,
        stdin=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert server.stderr is not None
        if (await server.stderr.readline()).strip() != b"listening":  # ready once it says so
            error = (await server.stderr.read()).decode()
            raise SystemExit(f"the tool server did not start:\n{error}")
        await agent_side(socket_path)
    finally:
        if server.returncode is None:
            server.terminate()
        await server.wait()
        shutil.rmtree(folder)


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        asyncio.run(serve(sys.argv[2]))
    else:
        asyncio.run(main())
