"""What each browser tool call costs, side by side, against a page served from loopback.

Times ``LocalToolClient.call_tool`` for each browser tool on a real headless Chromium
(``/usr/bin/chromium``), from the caller's side until the result is back:

- **start**: the first call of a fresh set of tools (starts Playwright's driver and Chromium);
- **navigate / read / click / type / screenshot**: one call each, repeated, after a warm-up;
- **read (large page)**: ``browser-read`` on a page of 2,000 links, every one with a ref;
- **close**: ``aclose()``, Chromium and the driver stopped and the profile deleted.

Figures are the median and the slowest run in milliseconds. Run it from the repository root::

    python bench/browser_tools.py              # 30 runs of each
    python bench/browser_tools.py --runs 5     # a quicker look
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import threading
import time
from collections.abc import Awaitable, Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from heron.tools import LocalToolClient, ToolResult, browser_tools

FORM = b"""<!doctype html><html><head><title>Bench</title></head><body>
<h1>Bench</h1><p>Clicks: <span id=n>0</span></p>
<button onclick="document.getElementById('n').textContent++">Add</button>
<label>Name <input name=name></label></body></html>"""
LARGE = (
    b"<!doctype html><html><head><title>Large</title></head><body><ul>"
    + b"".join(b'<li><a href="/item/%d">Item %d</a></li>' % (i, i) for i in range(2000))
    + b"</ul></body></html>"
)


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = LARGE if self.path == "/large" else FORM
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


async def timed(call: Callable[[], Awaitable[ToolResult]]) -> float:
    started = time.perf_counter()
    result = await call()
    elapsed = (time.perf_counter() - started) * 1000
    if result.is_error:
        raise SystemExit(f"a tool failed: {result.text}")
    return elapsed


async def main(runs: int) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    site = f"http://127.0.0.1:{server.server_address[1]}"
    rows: list[tuple[str, list[float]]] = []
    try:
        tools = browser_tools()
        client = LocalToolClient(tools)

        def use(name: str, **arguments: Any) -> Callable[[], Awaitable[ToolResult]]:
            return lambda: client.call_tool(name, arguments)

        rows.append(("start (first call)", [await timed(use("browser-navigate", url=site))]))
        rows.append(
            ("navigate", [await timed(use("browser-navigate", url=site)) for _ in range(runs)])
        )
        # Reloading gave every element a new ref: take them from the last page.
        page = (await client.call_tool("browser-read", {})).text
        button = page.split('button "Add" [ref=', 1)[1].split("]", 1)[0]
        field = page.split('textbox "Name" [ref=', 1)[1].split("]", 1)[0]
        steps = [
            ("read", use("browser-read")),
            ("click", use("browser-click", ref=button)),
            ("type", use("browser-type", ref=field, text="Heron")),
            ("screenshot", use("browser-screenshot")),
        ]
        for label, step in steps:
            await step()  # warm-up
            rows.append((label, [await timed(step) for _ in range(runs)]))
        await client.call_tool("browser-navigate", {"url": f"{site}/large"})
        rows.append(("read (2,000 links)", [await timed(use("browser-read")) for _ in range(runs)]))
        started = time.perf_counter()
        await tools.aclose()
        rows.append(("close", [(time.perf_counter() - started) * 1000]))
    finally:
        server.shutdown()
        server.server_close()
    print(f"{'browser tool call':<22}{'median ms':>12}{'slowest ms':>12}{'runs':>6}")
    for label, figures in rows:
        print(
            f"{label:<22}{statistics.median(figures):>12.1f}{max(figures):>12.1f}{len(figures):>6}"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="runs of each call (default 30)")
    asyncio.run(main(parser.parse_args().runs))
