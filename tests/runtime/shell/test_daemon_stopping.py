"""``Commands`` (``/v1/bash``) when the daemon stops while a command is starting."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from heron import api
from heron.runtime import RuntimeConfig
from heron.runtime.server._errors import ApiError
from heron.runtime.shell._service import Commands


async def test_a_command_starting_as_the_daemon_stops_is_killed(tmp_path: Path) -> None:
    """``aclose`` kills the running commands; one still starting then is killed too,
    not left to run out its timeout."""
    # (the only part of the kernel Commands uses: its configuration; no sandbox here)
    engine: Any = SimpleNamespace(config=RuntimeConfig(home=tmp_path, sandbox="off"))
    commands = Commands(engine)
    request = api.BashRequest(command="sleep 600", cwd=str(tmp_path), timeout=5)
    began = time.monotonic()
    running = asyncio.ensure_future(commands.run(request))
    await asyncio.sleep(0)  # the run is now inside ShellProcess.start
    await commands.aclose()
    with pytest.raises(ApiError) as stopped:
        await asyncio.wait_for(running, 30)
    assert stopped.value.status == 503 and stopped.value.code == "daemon_stopping"
    assert time.monotonic() - began < 5
