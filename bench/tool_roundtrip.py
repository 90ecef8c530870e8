"""Round trip of one trivial tool call over each heron.mcp transport, side by side.

The tool is ``async def echo(text: str) -> str``, called with ``{"text": "ping"}`` (async: a
sync tool runs in a worker thread of its own, whose start-up and GIL hand-over would dominate
the figures, as they would any trivial sync tool's). Each row times
``call_tool`` from the caller's side until the result is back, after a warm-up:

- **in-process**: ``MCPClient`` to an ``MCPServer`` in the same event loop: the handshake
  and listing through the SDK's in-process client, each ``tools/call`` handed straight to the
  server's handler (still MCP request params and results, without serialisation);
- **unix socket**: ``MCPClient`` to a server *process* over a Unix domain socket;
- **websocket**: ``MCPClient`` to a server process over a loopback WebSocket, with a token;
- **stdio**: ``MCPClient`` to a server process it started, over its stdin/stdout;
- **official mcp client, stdio**: the ``mcp`` SDK's own ``Client`` on the same stdio server,
  for scale: what Heron's client adds over the SDK it is built on;
- **LocalToolClient**: no MCP at all, the floor.

Server processes run ``python -m heron.mcp serve`` from the same source tree as the bench
(``PYTHONPATH`` names it: run from a worktree, they serve that worktree's code, not whichever
checkout the virtualenv installed) and are stopped at the end. Figures are
the median and 99th percentile in microseconds per call, and each median over the official
client's (the goal for the socket and WebSocket rows is at most 0.5). Beside them, the CPU
time per call of the calling process and of the server process (from ``/proc``), and their
sum over the official client's: on a machine busy with other work a round trip's wall time
is mostly waiting to be scheduled, while the CPU a call costs stays put.

Run it from the repository root::

    python bench/tool_roundtrip.py              # 2,000 calls per transport
    python bench/tool_roundtrip.py --calls 300  # a quicker look
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

import heron
from heron import LocalToolClient, tool
from heron.mcp import (
    InProcessConnection,
    MCPClient,
    MCPServer,
    MemoryStorage,
    StdioConnection,
    UnixSocketConnection,
    WebSocketConnection,
)

TOOL_MODULE = '''
from heron import tool

@tool
async def echo(text: str) -> str:
    """Repeat the text."""
    return text

TOOLS = [echo]
'''
ARGS = {"text": "ping"}
TOKEN = "bench-token"
SOURCE_ENV = {"PYTHONPATH": str(Path(heron.__file__).resolve().parent.parent)}
"""Server processes import the heron this process imported."""


@tool
async def echo(text: str) -> str:
    """Repeat the text."""
    return text


@dataclass(frozen=True)
class Timing:
    """One transport's figures: wall microseconds of each call, CPU microseconds per call."""

    times: list[float]
    client_cpu: float
    server_cpu: float | None  # None: no server process (in-process rows)


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children() -> set[int]:
    """The ids of this process's child processes."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rpartition(")")[2].split()
            except OSError:
                continue
            if int(stat[1]) == os.getpid():
                found.add(int(entry.name))
    return found


async def measure(
    call: Callable[[], Awaitable[object]], calls: int, server: int | None = None
) -> Timing:
    """Wall microseconds of each of ``calls`` calls, after a warm-up of a tenth as many,
    and the CPU they cost this process and the ``server`` process (by id), per call."""
    for _ in range(max(calls // 10, 20)):
        await call()
    times: list[float] = []
    server_before = process_cpu(server) if server is not None else 0.0
    client_before = time.process_time()
    for _ in range(calls):
        started = time.perf_counter()
        await call()
        times.append((time.perf_counter() - started) * 1e6)
    client = (time.process_time() - client_before) / calls * 1e6
    if server is None:
        return Timing(times, client, None)
    return Timing(times, client, (process_cpu(server) - server_before) / calls * 1e6)


def start_server(spec: str, *where: str) -> subprocess.Popen[str]:
    """A ``python -m heron.mcp serve`` process, returned once it listens."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "heron.mcp", "serve", spec, *where],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={"HERON_MCP_TOKEN": TOKEN, "PATH": "/usr/bin:/bin", **SOURCE_ENV},
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()
    if not line.startswith("heron.mcp: serving"):
        raise RuntimeError(f"server did not start: {line}{proc.stderr.read()}")
    return proc


async def run(calls: int, quiet: TextIO) -> list[tuple[str, Timing]]:
    """Time every transport in turn; ``quiet`` takes the stdio servers' start-up line."""
    results: list[tuple[str, Timing]] = []
    folder = Path(tempfile.mkdtemp(prefix="heron-bench-"))
    (folder / "bench_tools.py").write_text(TOOL_MODULE)
    spec = f"{folder / 'bench_tools.py'}:TOOLS"
    processes: list[subprocess.Popen[str]] = []
    try:
        local = LocalToolClient([echo])
        results.append(
            (
                "LocalToolClient (no MCP)",
                await measure(lambda: local.call_tool("echo", ARGS), calls),
            )
        )

        memory = InProcessConnection()
        async with MCPServer(memory, MemoryStorage()) as server:
            server.register_tool(echo)
            async with MCPClient("bench", memory, MemoryStorage()) as client:
                results.append(
                    ("in-process", await measure(lambda: client.call_tool("echo", ARGS), calls))
                )

        sock = folder / "tools.sock"
        processes.append(start_server(spec, "--unix", str(sock)))
        unix = UnixSocketConnection(mode="client", path=sock)
        async with MCPClient("bench", unix, MemoryStorage()) as client:
            timing = await measure(lambda: client.call_tool("echo", ARGS), calls, processes[-1].pid)
            results.append(("unix socket", timing))

        port = _free_port()
        processes.append(start_server(spec, "--websocket", f"127.0.0.1:{port}"))
        ws = WebSocketConnection(mode="client", url=f"ws://127.0.0.1:{port}", token=TOKEN)
        async with MCPClient("bench", ws, MemoryStorage()) as client:
            timing = await measure(lambda: client.call_tool("echo", ARGS), calls, processes[-1].pid)
            results.append(("websocket", timing))

        argv = [sys.executable, "-m", "heron.mcp", "serve", spec, "--stdio"]
        stdio = StdioConnection(argv[0], argv[1:], env=SOURCE_ENV, stderr=quiet)
        before = children()
        async with MCPClient("bench", stdio, MemoryStorage()) as client:
            await client.call_tool("echo", ARGS)  # the server process is up once this answers
            (server,) = children() - before
            timing = await measure(lambda: client.call_tool("echo", ARGS), calls, server)
            results.append(("stdio", timing))

        params = StdioServerParameters(command=argv[0], args=argv[1:], env=SOURCE_ENV)
        before = children()
        async with Client(stdio_client(params, errlog=quiet)) as official:
            await official.call_tool("echo", ARGS)
            (server,) = children() - before
            timing = await measure(lambda: official.call_tool("echo", ARGS), calls, server)
            results.append(("official mcp client, stdio", timing))
    finally:
        for proc in processes:
            if proc.poll() is None:
                proc.terminate()
            proc.wait(10)
            if proc.stderr is not None:
                proc.stderr.close()
        shutil.rmtree(folder)
    return results


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def report(results: list[tuple[str, Timing]], calls: int) -> None:
    """Print the table."""
    print(f"\n{calls:,} calls of echo(text='ping') per transport; microseconds per call\n")
    header = (
        f"{'transport':<30} {'median':>8} {'p99':>8} {'x official':>11} "
        f"{'CPU caller':>11} {'CPU server':>11} {'CPU x official':>15}"
    )
    print(header)
    print("-" * len(header))
    reference = dict(results)["official mcp client, stdio"]
    official = statistics.median(reference.times)
    official_cpu = reference.client_cpu + (reference.server_cpu or 0.0)
    for name, timing in results:
        p99 = statistics.quantiles(timing.times, n=100)[98]
        median = statistics.median(timing.times)
        server = f"{timing.server_cpu:>11.0f}" if timing.server_cpu is not None else f"{'':>11}"
        cpu = timing.client_cpu + (timing.server_cpu or 0.0)
        print(
            f"{name:<30} {median:>8.0f} {p99:>8.0f} {median / official:>11.2f} "
            f"{timing.client_cpu:>11.0f} {server} {cpu / official_cpu:>15.2f}"
        )
    print()


def main() -> None:
    """Parse arguments, measure, report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls per transport")
    calls = parser.parse_args().calls
    with open(os.devnull, "w") as quiet:
        report(asyncio.run(run(calls, quiet)), calls)


if __name__ == "__main__":
    main()
