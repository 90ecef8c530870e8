"""Tools that the tests' server processes load: ``python -m heron.mcp serve served_tools.py:TOOLS``.

Not a test module (pytest collects ``test_*.py`` only); the tests import it by path too.
"""

from __future__ import annotations

import asyncio
import base64
import os
import subprocess
from pathlib import Path

from heron import ImagePart, Tool, ToolContext, tool

# The smallest valid PNG: one transparent pixel.
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)


@tool
def echo(text: str) -> str:
    """Repeat the text.

    Args:
        text: What to repeat.
    """
    return text


@tool
def add(a: int, b: int) -> dict[str, int]:
    """Add two integers and report the sum as data."""
    return {"sum": a + b}


@tool
def pixel() -> list[object]:
    """Return a caption and a one-pixel image."""
    return ["a pixel", ImagePart(data=PIXEL, media_type="image/png")]


@tool
async def remember(fact: str, context: ToolContext) -> str:
    """Store a fact for this environment and list the facts so far."""
    facts = await context.storage.get("facts")
    joined = fact if facts is None else f"{facts},{fact}"
    await context.storage.set("facts", joined)
    assert context.ids is not None
    return f"{context.env_id} {await context.ids.next()}: {joined}"


@tool(name="read-file")
def read_file(path: str) -> str:
    """Read a text file."""
    return Path(path).read_text()


@tool(name="write-file")
def write_file(path: str, text: str) -> str:
    """Write a text file."""
    Path(path).write_text(text)
    return f"wrote {len(text)} characters"


@tool
def getenv(name: str) -> str:
    """An environment variable of the server process, or <unset>."""
    return os.environ.get(name, "<unset>")


@tool
def noisy(text: str) -> str:
    """Print to stdout three ways (Python, a child process, the raw fd), then return text."""
    print("print from a tool")
    subprocess.run(["echo", "echo from a child"], check=True)
    os.write(1, b"write to fd 1\n")
    return text


@tool
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@tool
async def hang() -> str:
    """Never return (until the server dies)."""
    await asyncio.Event().wait()
    return "unreachable"


TOOLS: list[Tool] = [echo, add, pixel, remember, read_file, write_file, getenv, noisy, pid, hang]
