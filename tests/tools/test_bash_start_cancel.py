"""A ``ShellProcess.start`` cancelled at any point leaves nothing running."""

from __future__ import annotations

import asyncio
import os
import secrets
from pathlib import Path

from tests.support.polling import eventually_async

from heron.tools._bash_process import ShellProcess


def marked(mark: str) -> list[int]:
    """Running processes (zombies aside) whose environment holds ``mark``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
            stat = Path(f"/proc/{entry}/stat").read_bytes()
        except OSError:
            continue
        if mark.encode() in environ and stat[stat.rfind(b")") + 2 :][:1] not in (b"Z", b"X"):
            found.append(int(entry))
    return found


async def test_a_cancelled_start_leaves_no_process(tmp_path: Path) -> None:
    """Cancelled after 0, 1, 2 ... loop turns: wherever the cancellation lands (before the
    fork, while asyncio connects the new process, while its output is wired), the
    command and what it started are gone, and started ones were killed, not left."""
    mark = f"HERON_TEST_MARK={secrets.token_hex(8)}"
    name, value = mark.split("=")
    env = {**os.environ, name: value}
    ran = tmp_path / "ran"
    for turns in range(12):
        feed = b"input" if turns % 2 else None  # with and without a stdin pipe
        start = asyncio.ensure_future(
            ShellProcess.start(
                f"sleep 600 & touch {ran}; wait",
                shell="/bin/bash",
                cwd=str(tmp_path),
                env=env,
                on_output=lambda stream, text: None,
                stdin=feed,
            )
        )
        for _ in range(turns):
            await asyncio.sleep(0)
        if start.done():
            process = start.result()  # started before the cancellation came
            process.kill_now()
            await process.wait()
            await process.close()
            break
        start.cancel()
        await asyncio.wait({start})
        assert start.cancelled()
    await eventually_async(
        lambda: marked(mark),
        lambda left: not left,
        timeout=15,
        interval=0.02,
        what="every marked process exiting",
    )
