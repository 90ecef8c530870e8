"""What the bash tools cost over a bare subprocess, side by side.

Two tables, each row after a warm-up:

- **latency** of a trivial command (``true``): ``bash-run`` through ``LocalToolClient``;
  the same with a ``BashInteraction`` listener subscribed; the same in a bubblewrap
  ``Sandbox`` (as the daemon runs a node's commands; skipped without ``bwrap``); asyncio's own
  ``create_subprocess_exec`` of ``/bin/bash -c true`` waited on; ``subprocess.run`` of it.
  Median and 99th percentile, in milliseconds per command.
- **throughput** of a command printing lots of 17-character lines
  (``yes 0123456789abcdef | head -c N``): ``bash-run`` keeping its default 30,000
  characters per stream; the same with a sync listener counting lines (one ``BashOutput``
  event per read, carrying its lines); the same with an async listener; ``bash-start`` +
  ``bash-wait`` (the background buffer); asyncio's ``communicate()`` reading it all, the
  floor. Megabytes of output per second.

Run it from the repository root::

    python bench/bash_tools.py                  # 200 commands, 50 MB
    python bench/bash_tools.py --calls 50 --megabytes 10
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable

from heron.tools import BashEvent, BashOutput, LocalToolClient, Sandbox, bash_tools, sandbox_problem


async def timed(action: Callable[[], Awaitable[object]], calls: int) -> list[float]:
    await action()  # warm-up
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        await action()
        times.append(time.perf_counter() - started)
    return times


async def raw_exec(command: str) -> bytes:
    process = await asyncio.create_subprocess_exec(
        "/bin/bash",
        "-c",
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, _ = await process.communicate()
    return out


async def main(calls: int, megabytes: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        async with (
            bash_tools(folder) as quiet,
            bash_tools(folder) as heard,
            bash_tools(folder) as awaited,
            bash_tools(folder, sandbox=Sandbox(outlive=True)) as boxed,
        ):
            lines = events = 0

            def count(event: BashEvent) -> None:
                nonlocal lines, events
                if isinstance(event, BashOutput):
                    lines += len(event.lines)
                    events += 1

            async def count_async(event: BashEvent) -> None:
                count(event)

            heard.interaction.subscribe(count)
            awaited.interaction.subscribe(count_async)
            plain, listened = LocalToolClient(quiet), LocalToolClient(heard)
            sandboxed = LocalToolClient(boxed)
            listened_async = LocalToolClient(awaited)

            async def run(client: LocalToolClient, command: str) -> None:
                result = await client.call_tool("bash-run", {"command": command})
                assert not result.is_error and result.structured["exit_code"] == 0, result.text

            async def background(command: str) -> None:
                started = await plain.call_tool("bash-start", {"command": command})
                process_id = started.structured["id"]
                done = await plain.call_tool("bash-wait", {"id": process_id, "timeout": 600})
                assert done.structured["exit_code"] == 0, done.text

            latency: list[tuple[str, Callable[[], Awaitable[object]]]] = [
                ("bash-run", lambda: run(plain, "true")),
                ("bash-run, listener subscribed", lambda: run(listened, "true")),
                *(
                    [("bash-run in the sandbox", lambda: run(sandboxed, "true"))]
                    if sandbox_problem() is None
                    else []
                ),
                ("asyncio create_subprocess_exec", lambda: raw_exec("true")),
                (
                    "subprocess.run (blocking)",
                    lambda: asyncio.to_thread(subprocess.run, ["/bin/bash", "-c", "true"]),
                ),
            ]
            print(f"latency of `true`, {calls} commands each (ms)")
            print(f"{'':34} {'median':>8} {'p99':>8}")
            for label, action in latency:
                times = sorted(await timed(action, calls))
                p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
                print(f"{label:34} {statistics.median(times) * 1e3:8.2f} {p99 * 1e3:8.2f}")

            size = megabytes * 1_000_000
            command = f"yes 0123456789abcdef | head -c {size}"
            throughput: list[tuple[str, Callable[[], Awaitable[object]]]] = [
                ("bash-run (30,000-char cap)", lambda: run(plain, command)),
                ("bash-run, line listener", lambda: run(listened, command)),
                ("bash-run, async line listener", lambda: run(listened_async, command)),
                ("bash-start + bash-wait", lambda: background(command)),
                ("asyncio communicate() (floor)", lambda: raw_exec(command)),
            ]
            print(f"\nthroughput of {megabytes} MB in 17-character lines (MB/s)")
            for label, action in throughput:
                lines = events = 0
                best = min(await timed(action, 2))
                extra = (
                    f"  ({lines // 3:,} lines in {events // 3:,} events per run)" if lines else ""
                )
                print(f"{label:34} {megabytes / best:8.1f}{extra}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="commands per latency row")
    parser.add_argument("--megabytes", type=int, default=50, help="output per throughput run")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.calls, arguments.megabytes))
