"""The page's browser tests' fixtures: Debian's Chromium driven by Playwright, signed in
to the module's daemon through ``POST /v1/ui/open`` and its one-time link.

Every page a test opens records its console; a test fails if the page logged an error or
a warning (``page_log.allow(...)`` lets a test expect some, e.g. a refused request).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

CHROMIUM = "/usr/bin/chromium"
"""The browser (``apt-get install chromium``; CI installs it). Playwright never downloads one."""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium for the module."""
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"Chromium is not installed at {CHROMIUM} (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
        )
        try:
            yield launched
        finally:
            launched.close()


@dataclass
class PageLog:
    """What a page said on its console, and which of it a test expects."""

    lines: list[str] = field(default_factory=list)
    allowed: list[re.Pattern[str]] = field(default_factory=list)

    def allow(self, pattern: str) -> None:
        """Expect console errors or warnings matching ``pattern``."""
        self.allowed.append(re.compile(pattern))

    def problems(self) -> list[str]:
        """The errors and warnings no test expected."""
        return [
            line
            for line in self.lines
            if line.split(":", 1)[0] in ("error", "warning", "pageerror")
            and not any(p.search(line) for p in self.allowed)
        ]


def open_link(client: httpx.Client) -> dict[str, Any]:
    """``POST /v1/ui/open`` on the daemon's socket: the page's URL and a sign-in link."""
    response = client.post("/v1/ui/open", json={})
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


@pytest.fixture
def page_log() -> PageLog:
    """The console of the test's page."""
    return PageLog()


@pytest.fixture
def context(browser: Any, client: httpx.Client, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A browser context signed in to the daemon (its own cookie jar)."""
    scheme = getattr(request, "param", "light")
    ctx = browser.new_context(viewport={"width": 1280, "height": 800}, color_scheme=scheme)
    ctx.set_default_timeout(10_000)
    try:
        yield ctx
    finally:
        ctx.close()


@pytest.fixture
def page(context: Any, client: httpx.Client, page_log: PageLog) -> Iterator[Any]:
    """A signed-in page on the canvas; the test fails if it logs an unexpected problem."""
    tab = context.new_page()
    tab.on("console", lambda message: page_log.lines.append(f"{message.type}: {message.text}"))
    tab.on("pageerror", lambda error: page_log.lines.append(f"pageerror: {error}"))
    tab.goto(open_link(client)["login_url"])
    tab.wait_for_selector("#connection.live")
    yield tab
    tab.close()
    assert page_log.problems() == []


def base_url(page: Any) -> str:
    """The page's address without its hash (``http://127.0.0.1:PORT/ui/``)."""
    url: str = page.url
    return url.split("#", 1)[0]


def go(page: Any, hash_route: str) -> None:
    """Show the view at ``#/...``."""
    page.evaluate("(route) => { location.hash = route; }", hash_route)


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where screenshots are kept: ``HERON_UI_ARTIFACTS`` if set (CI uploads it), else
    pytest's temporary folder (kept for the last few runs)."""
    named = os.environ.get("HERON_UI_ARTIFACTS")
    folder = Path(named) if named else tmp_path_factory.mktemp("ui-screens")
    folder.mkdir(parents=True, exist_ok=True)
    return folder
