"""Screenshots of the page's main views (canvas, a node, the inbox; light and dark),
kept as test artifacts and compared with the reference images in ``reference/``.

The daemon holds a fixed set of nodes (fixed ids, names and scripts) and every
region that shows a time, a token count or a temporary path is masked, so the same
page looks the same on every run. A screenshot matches when at most
:data:`TOLERANCE` of its pixels differ noticeably (fonts anti-alias a little
differently from machine to machine).

Regenerate the references after a deliberate change of the page's look::

    HERON_UPDATE_REFERENCES=1 pytest tests/runtime/ui/test_page_screens.py

The screenshots of each run are kept under pytest's temporary folder, or under
``HERON_UI_ARTIFACTS`` when that is set (CI uploads it).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from PIL import Image, ImageChops
from tests.runtime.ui.conftest import go
from tests.support.daemon import Daemon, create, wait_settled, wait_status, write_script
from tests.support.human import ask

pytestmark = pytest.mark.slow

REFERENCES = Path(__file__).parent / "reference"
UPDATE = os.environ.get("HERON_UPDATE_REFERENCES") == "1"

TOLERANCE = 0.01
"""The share of pixels that may differ (by more than :data:`NOISE` in a channel)."""
NOISE = 48
"""A channel difference below this is anti-aliasing, not a change."""

MASK = ".dyn, .tok, #canvas-totals, #node-tokens, #node-config dl:first-of-type dd:nth-of-type(3)"
"""Times, token counts and the model (a script in a temporary folder)."""

TOOL_TURN = {
    "text": "Let me look at the clock.",
    "tool_calls": [{"name": "get-current-time", "arguments": {"timezone": "UTC"}}],
}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """A daemon with only this module's nodes."""
    home = tmp_path_factory.mktemp("heron-screens")
    default = write_script(home, "default", ["Hello."])
    process = Daemon(home, {"HERON_PROVIDER": default}).start()
    try:
        with process.client() as client:
            _fixed_nodes(client, home)
        yield process
    finally:
        process.stop()


def _fixed_nodes(client: httpx.Client, home: Path) -> None:
    clock = write_script(home, "clock", [TOOL_TURN, "It is noon, more or less."])
    create(client, node_id="screen-clock", name="clock-reader", prompt="What time?", model=clock)
    asker = write_script(home, "asker", [ask(title="Before I merge"), "Merged."])
    scopes = ["ask"]
    create(client, node_id="screen-asker", name="merger", prompt="Go.", scopes=scopes, model=asker)
    failing = write_script(home, "failing", [{"error": "the model is down", "status": 503}])
    create(client, node_id="screen-failed", name="unlucky", prompt="Try.", model=failing)
    parent = write_script(home, "parent", ["I will wait for my helper."])
    create(
        client,
        node_id="screen-parent",
        name="planner",
        prompt="Plan.",
        model=parent,
        root_lifecycle="resident",
    )
    wait_status(client, "screen-parent", "dormant")
    child = write_script(home, "child", ["Helped."])
    create(
        client,
        node_id="screen-child",
        name="helper",
        prompt="Help.",
        model=child,
        parent="screen-parent",
    )
    for node_id in ("screen-clock", "screen-failed", "screen-child"):
        wait_settled(client, node_id)
    wait_status(client, "screen-asker", "dormant")


def _differs(shot: Image.Image, reference: Image.Image) -> float:
    """The share of pixels that differ by more than :data:`NOISE`."""
    if shot.size != reference.size:
        return 1.0
    diff = ImageChops.difference(shot.convert("RGB"), reference.convert("RGB"))
    changed = diff.convert("L").point(lambda value: 255 if value > NOISE else 0)
    histogram = changed.histogram()
    return histogram[255] / (shot.width * shot.height)


def _check(page: Any, name: str, artifacts: Path) -> None:
    page.evaluate("document.fonts.ready")
    page.mouse.move(0, 0)
    path = artifacts / f"{name}.png"
    page.screenshot(path=str(path), mask=[page.locator(MASK)], animations="disabled")
    reference = REFERENCES / f"{name}.png"
    if UPDATE or not reference.exists():
        if not UPDATE:
            pytest.fail(f"no reference {reference}: run with HERON_UPDATE_REFERENCES=1")
        REFERENCES.mkdir(exist_ok=True)
        reference.write_bytes(path.read_bytes())
        return
    share = _differs(Image.open(path), Image.open(reference))
    assert share <= TOLERANCE, f"{name}: {share:.1%} of pixels differ (see {path})"


@pytest.mark.parametrize("context", ["light", "dark"], indirect=True)
def test_canvas(page: Any, context: Any, artifacts: Path) -> None:
    page.locator('.row[data-node-id="screen-child"] .status-completed').wait_for()
    page.locator('.row[data-node-id="screen-asker"] .badge-asking').wait_for()
    page.locator('.row[data-node-id="screen-failed"] .badge-failed').wait_for()
    _check(page, f"canvas-{_scheme(context)}", artifacts)


@pytest.mark.parametrize("context", ["light", "dark"], indirect=True)
def test_node(page: Any, context: Any, artifacts: Path) -> None:
    go(page, "#/nodes/screen-clock")
    page.locator(".tool .tool-status-ok").wait_for()
    page.locator("#outcome-text").wait_for()
    _check(page, f"node-{_scheme(context)}", artifacts)


@pytest.mark.parametrize("context", ["light", "dark"], indirect=True)
def test_inbox(page: Any, context: Any, artifacts: Path) -> None:
    go(page, "#/inbox")
    page.locator(".ticket[data-ticket-id] form").wait_for()
    _check(page, f"inbox-{_scheme(context)}", artifacts)


@pytest.mark.parametrize("context", ["light"], indirect=True)
def test_canvas_on_a_phone(page: Any, artifacts: Path) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    page.locator('.row[data-node-id="screen-child"] .status-completed').wait_for()
    _check(page, "canvas-phone", artifacts)
    go(page, "#/nodes/screen-clock")
    page.locator(".tool .tool-status-ok").wait_for()
    _check(page, "node-phone", artifacts)


def _scheme(context: Any) -> str:
    dark: bool = context.pages[0].evaluate("matchMedia('(prefers-color-scheme: dark)').matches")
    return "dark" if dark else "light"
