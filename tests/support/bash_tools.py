"""The bash tools' tests' helpers (``tests/tools``): processes, and calls that must succeed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from heron.tools import (
    LocalToolClient,
    ToolResult,
)

from .polling import eventually_async


def alive(pid: int) -> bool:
    """Whether ``pid`` is a running process (a zombie nobody reaped does not count)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):  # gone, or going while read
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


async def ends(pid: int, seconds: float = 5.0) -> bool:
    """Whether ``pid`` stops running within ``seconds`` (polled)."""
    try:
        await eventually_async(lambda: not alive(pid), timeout=seconds, interval=0.01)
    except AssertionError:
        return False
    return True


async def ok(client: LocalToolClient, name: str, **arguments: Any) -> ToolResult:
    """Call the tool; its result, asserting it is no error."""
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.text
    return result
