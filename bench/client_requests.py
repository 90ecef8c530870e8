"""What the typed client costs per request over bare httpx, side by side.

One daemon is started in a throwaway home (by the client itself: the first request
finds the socket cold). Then, after a warm-up, ``GET /healthz`` over the Unix socket:

- bare ``httpx.Client`` / ``httpx.AsyncClient`` on the socket (the floor);
- ``Heron().system.health()`` (flow, driver, error mapping, pydantic parsing);
- the same with a ``Cancel`` attached (the sync request runs in a worker thread);
- ``AsyncHeron().system.health()``, without and with a ``Cancel``.

Median and 99th percentile in milliseconds per request, and the cold start.

Run it from the repository root::

    python bench/client_requests.py             # 500 requests per row
    python bench/client_requests.py --calls 100
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx

from heron.client import AsyncHeron, Cancel, Heron, RequestOptions
from heron.runtime import stop_daemon


def timed(action: Callable[[], object], calls: int) -> list[float]:
    action()
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return times


async def atimed(action: Callable[[], Awaitable[object]], calls: int) -> list[float]:
    await action()
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        await action()
        times.append(time.perf_counter() - started)
    return times


def row(name: str, times: list[float]) -> str:
    ordered = sorted(times)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"{name:<40} {statistics.median(times) * 1000:>8.3f} {p99 * 1000:>8.3f}"


async def async_rows(home: Path, calls: int) -> list[str]:
    socket = str(home / "heron.sock")
    rows = []
    transport = httpx.AsyncHTTPTransport(uds=socket)
    async with httpx.AsyncClient(transport=transport, base_url="http://heron") as http:
        rows.append(
            row("httpx.AsyncClient (floor)", await atimed(lambda: http.get("/healthz"), calls))
        )
    async with AsyncHeron(home=home) as aclient:
        rows.append(row("AsyncHeron.system.health()", await atimed(aclient.system.health, calls)))
        options = RequestOptions(cancel=Cancel())
        rows.append(
            row(
                "AsyncHeron ... with a Cancel",
                await atimed(lambda: aclient.system.health(options=options), calls),
            )
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=500)
    calls = parser.parse_args().calls
    with tempfile.TemporaryDirectory(prefix="heron-bench-") as tmp:
        home = Path(tmp)
        try:
            with Heron(home=home) as client:
                started = time.perf_counter()
                client.system.health()
                cold = time.perf_counter() - started
                transport = httpx.HTTPTransport(uds=str(home / "heron.sock"))
                with httpx.Client(transport=transport, base_url="http://heron") as http:
                    floor = timed(lambda: http.get("/healthz"), calls)
                plain = timed(client.system.health, calls)
                options = RequestOptions(cancel=Cancel())
                cancellable = timed(lambda: client.system.health(options=options), calls)
            rows = [
                row("httpx.Client (floor)", floor),
                row("Heron.system.health()", plain),
                row("Heron ... with a Cancel (worker thread)", cancellable),
                *asyncio.run(async_rows(home, calls)),
            ]
        finally:
            stop_daemon(home / "heron.pid")
    print(f"cold start (client starts the daemon): {cold:.2f} s")
    print(f"{'GET /healthz, ' + str(calls) + ' calls':<40} {'median':>8} {'p99':>8}   (ms)")
    for line in rows:
        print(line)


if __name__ == "__main__":
    main()
