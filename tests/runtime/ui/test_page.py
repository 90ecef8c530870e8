"""The page on a real daemon, in Chromium: the canvas follows nodes live, a node's page
streams its text and takes its actions, the inbox answers a node and wakes it."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
from tests.runtime.ui.conftest import go
from tests.support.daemon import SLOW, create, wait_settled, wait_status
from tests.support.human import ask, the_ticket
from tests.support.polling import eventually

pytestmark = pytest.mark.slow

WORDS = [f"word{i}" for i in range(60)]
SLOW_TEXT = {"text": " ".join(WORDS), "chunk_delay": 0.05}
"""A turn whose text arrives a word every 50 ms (about 3 s in all)."""


def row(page: Any, node_id: str) -> Any:
    return page.locator(f'.row[data-node-id="{node_id}"]')


def test_the_page_loads_with_no_console_problems(page: Any, client: httpx.Client) -> None:
    for route, heading in [
        ("#/", "Canvas"),
        ("#/inbox", "Inbox"),
        ("#/memory", "Memory"),
        ("#/crons", "Crons"),
        ("#/models", "Models"),
        ("#/new", "New node"),
    ]:
        go(page, route)
        page.get_by_role("heading", name=heading, exact=True).wait_for()
    page.keyboard.press("Escape")
    page.keyboard.press("?")
    page.locator("#help").get_by_text("Keyboard shortcuts").wait_for()
    # (the page fixture fails the test on any console error or warning)


def test_a_node_created_by_a_client_appears_within_a_second(
    page: Any, client: httpx.Client, scripts: Any
) -> None:
    page.locator("#canvas-list").wait_for()
    node = create(client, prompt="Hi.", model=scripts("appear", ["Hello."]), name="newcomer")
    started = time.monotonic()
    row(page, node["node_id"]).wait_for(timeout=1_000)
    assert time.monotonic() - started < 1.0
    assert row(page, node["node_id"]).locator(".row-name").inner_text() == "newcomer"
    # Its status follows the feed to the end: the row says completed.
    row(page, node["node_id"]).locator(".status-completed").wait_for()


def test_search_and_the_status_filter_narrow_the_canvas(
    page: Any, client: httpx.Client, scripts: Any
) -> None:
    model = scripts("filter", ["Done."])
    kept = create(client, prompt="a", model=model, name="zebra-alpha")["node_id"]
    other = create(client, prompt="b", model=model, name="yak-beta")["node_id"]
    row(page, other).wait_for()
    page.fill("#canvas-search", "zebra")
    row(page, kept).wait_for()
    row(page, other).wait_for(state="detached")
    page.fill("#canvas-search", "")
    page.select_option("#canvas-status", "failed")
    row(page, kept).wait_for(state="detached")


def test_text_streams_in_as_the_node_writes_it(
    page: Any, client: httpx.Client, scripts: Any
) -> None:
    node_id = create(client, prompt="Write.", model=scripts("stream", [SLOW_TEXT]))["node_id"]
    go(page, f"#/nodes/{node_id}")
    live = page.locator("#live-text .msg-text")
    seen: list[int] = []

    def partial() -> bool:
        text = live.inner_text() if live.is_visible() else ""
        words = len(text.split())
        seen.append(words)
        return 0 < words < len(WORDS)

    eventually(partial, timeout=10, interval=0.05, what="part of the text on the page")
    eventually(
        lambda: partial() and seen[-1] > min(w for w in seen if w),
        timeout=10,
        interval=0.05,
        what="the text growing",
    )
    wait_settled(client, node_id)
    page.locator(".msg-assistant:not(.streaming) .msg-text", has_text=WORDS[-1]).wait_for()
    page.locator("#outcome-text", has_text=WORDS[-1]).wait_for()


def test_a_tool_call_shows_its_arguments_and_result(
    page: Any, client: httpx.Client, scripts: Any
) -> None:
    call = {"name": "get-current-time", "arguments": {"timezone": "UTC"}}
    turn = {"text": "Checking.", "tool_calls": [call]}
    node_id = create(client, prompt="Time?", model=scripts("tool", [turn, "Noon."]))["node_id"]
    wait_settled(client, node_id)
    go(page, f"#/nodes/{node_id}")
    tool = page.locator(".tool", has_text="get-current-time")
    tool.locator(".tool-status-ok").wait_for()
    tool.locator("summary", has_text="Arguments").click()
    assert '"timezone": "UTC"' in tool.locator(".tool-args pre").inner_text()
    tool.locator("summary", has_text="Result").click()
    assert "UTC" in tool.locator(".tool-result pre").inner_text()


def test_answering_the_inbox_wakes_the_node(page: Any, client: httpx.Client, scripts: Any) -> None:
    model = scripts("asker", [ask(title="Before I merge"), "Merged into main."])
    node_id = create(client, prompt="merge", scopes=["ask"], model=model, name="merger")["node_id"]
    wait_status(client, node_id, "dormant")
    ticket = the_ticket(client, node_id)["ticket_id"]
    go(page, "#/inbox")
    card = page.locator(f'.ticket[data-ticket-id="{ticket}"]')
    card.get_by_label("main").check()
    card.get_by_label("Your answer to: Anything else to know?").fill("Squash the commits.")
    card.get_by_role("button", name="Answer").click()
    answered = page.locator(f'.ticket.answered[data-ticket-id="{ticket}"]')
    answered.wait_for()
    # The node woke, answered and finished, and the page showed it.
    answered.locator(".status-completed").wait_for()
    outcome = wait_settled(client, node_id)["outcome"]
    assert outcome["output_text"] == "Merged into main."
    response = client.get(f"/v1/human/inbox/{ticket}/response").json()
    answers = response["response"]["answers"] if "response" in response else response["answers"]
    assert answers[0]["choices"] == ["main"]
    assert answers[1]["text"] == "Squash the commits."


def test_a_message_from_the_page_wakes_a_dormant_node(
    page: Any, client: httpx.Client, scripts: Any
) -> None:
    model = scripts("resident", ["First answer.", "Second answer."])
    node_id = create(client, prompt="Hi.", model=model, root_lifecycle="resident")["node_id"]
    wait_status(client, node_id, "dormant")
    go(page, f"#/nodes/{node_id}")
    page.locator("#transcript .msg-text", has_text="First answer.").wait_for()
    page.fill("#message-body", "Once more, please.")
    page.click("#send-message")
    page.locator(".msg-user .msg-text", has_text="Once more, please.").wait_for()
    page.locator(".msg-assistant .msg-text", has_text="Second answer.").wait_for()
    assert client.get(f"/v1/nodes/{node_id}").json()["runs"] == 2


def test_interrupt_from_the_page_stops_the_turn(
    page: Any, client: httpx.Client, scripts: Any
) -> None:
    node_id = create(client, prompt="Think.", model=scripts("slow", [SLOW]))["node_id"]
    wait_status(client, node_id, "running")
    go(page, f"#/nodes/{node_id}")
    page.locator("#action-interrupt:not([disabled])").click()
    wait_status(client, node_id, "interrupted")
    page.locator("#node-status .status-interrupted").wait_for()
    page.locator("#action-interrupt[disabled]").wait_for()


def test_close_from_the_page_cancels_the_node(
    page: Any, client: httpx.Client, scripts: Any
) -> None:
    model = scripts("closable", ["Here."])
    node_id = create(client, prompt="Hi.", model=model, root_lifecycle="resident")["node_id"]
    wait_status(client, node_id, "dormant")
    go(page, f"#/nodes/{node_id}")
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("#action-close:not([disabled])").click()
    wait_status(client, node_id, "cancelled")
    page.locator("#node-status .status-cancelled").wait_for()


def test_a_node_created_on_the_page_runs(page: Any, client: httpx.Client, scripts: Any) -> None:
    model = scripts("made-here", ['{"answer": 42}'])
    go(page, "#/new")
    page.fill("#create-prompt", "Answer.")
    page.fill("#create-name", "made-on-the-page")
    page.fill("#create-model", model)
    page.check("#create-limit-scopes")
    page.check('input[data-scope="ask"]')
    page.click("#create-submit")
    page.locator("#node-title", has_text="made-on-the-page").wait_for()
    node_id = page.url.rsplit("/", 1)[1]
    node = client.get(f"/v1/nodes/{node_id}").json()
    assert (node["name"], node["model"], node["scopes"]) == ("made-on-the-page", model, ["ask"])
