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

Server processes run ``python -m heron.mcp serve`` and are stopped at the end. Figures are
the median and 99th percentile in microseconds per call, and each median over the official
client's (the goal for the socket and WebSocket rows is at most 0.5).

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
from pathlib import Path
from typing import TextIO

from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

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


@tool
async def echo(text: str) -> str:
    """Repeat the text."""
    return text


async def measure(call: Callable[[], Awaitable[object]], calls: int) -> list[float]:
    """Microseconds of each of ``calls`` calls, after a warm-up of a tenth as many."""
    for _ in range(max(calls // 10, 20)):
        await call()
    times: list[float] = []
    for _ in range(calls):
        started = time.perf_counter()
        await call()
        times.append((time.perf_counter() - started) * 1e6)
    return times


def start_server(spec: str, *where: str) -> subprocess.Popen[str]:
    """A ``python -m heron.mcp serve`` process, returned once it listens."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "heron.mcp", "serve", spec, *where],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={"HERON_MCP_TOKEN": TOKEN, "PATH": "/usr/bin:/bin"},
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()
    if not line.startswith("heron.mcp: serving"):
        raise RuntimeError(f"server did not start: {line}{proc.stderr.read()}")
    return proc


async def run(calls: int, quiet: TextIO) -> list[tuple[str, list[float]]]:
    """Time every transport in turn; ``quiet`` takes the stdio servers' start-up line."""
    results: list[tuple[str, list[float]]] = []
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
            results.append(
                ("unix socket", await measure(lambda: client.call_tool("echo", ARGS), calls))
            )

        port = _free_port()
        processes.append(start_server(spec, "--websocket", f"127.0.0.1:{port}"))
        ws = WebSocketConnection(mode="client", url=f"ws://127.0.0.1:{port}", token=TOKEN)
        async with MCPClient("bench", ws, MemoryStorage()) as client:
            results.append(
                ("websocket", await measure(lambda: client.call_tool("echo", ARGS), calls))
            )

        argv = [sys.executable, "-m", "heron.mcp", "serve", spec, "--stdio"]
        stdio = StdioConnection(argv[0], argv[1:], stderr=quiet)
        async with MCPClient("bench", stdio, MemoryStorage()) as client:
            results.append(("stdio", await measure(lambda: client.call_tool("echo", ARGS), calls)))

        params = StdioServerParameters(command=argv[0], args=argv[1:])
        async with Client(stdio_client(params, errlog=quiet)) as official:
            results.append(
                (
                    "official mcp client, stdio",
                    await measure(lambda: official.call_tool("echo", ARGS), calls),
                )
            )
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


def report(results: list[tuple[str, list[float]]], calls: int) -> None:
    """Print the table."""
    print(f"\n{calls:,} calls of echo(text='ping') per transport; microseconds per call\n")
    header = f"{'transport':<30} {'median':>10} {'p99':>10} {'x official':>11}"
    print(header)
    print("-" * len(header))
    official = statistics.median(dict(results)["official mcp client, stdio"])
    for name, times in results:
        p99 = statistics.quantiles(times, n=100)[98]
        median = statistics.median(times)
        print(f"{name:<30} {median:>10.0f} {p99:>10.0f} {median / official:>11.2f}")
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
