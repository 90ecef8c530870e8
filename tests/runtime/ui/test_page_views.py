"""The page's other views on a real daemon, in Chromium: a node's Fork and Revive, the
memory browser, the crons, the models (which keys are set, never a key), and the canvas
driven from the keyboard alone. Each action is checked on the page and against the API."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from tests.runtime.ui.conftest import go
from tests.support.daemon import Daemon, create, rewrite, wait_settled, wait_status, write_script
from tests.support.polling import eventually

pytestmark = pytest.mark.slow

INSTALLED_KEY = "sk-test-not-real-1234567890"
"""An OpenAI key the models test installs through the API."""
ENVIRONMENT_KEY = "sk-env-not-real-0987654321"
"""A DeepSeek key in the daemon's environment (``DEEPSEEK_API_KEY``)."""


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """The module's daemon, with a DeepSeek key in its environment (and no other)."""
    home = tmp_path_factory.mktemp("heron-views")
    default = write_script(home, "default", ["Hello from the default script."])
    env = {"HERON_PROVIDER": default, "DEEPSEEK_API_KEY": ENVIRONMENT_KEY}
    env |= {"OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": ""}
    process = Daemon(home, env).start()
    try:
        yield process
    finally:
        process.stop()


SAVED_ANSWER = ".msg-assistant:not(.streaming) .msg-text"
"""An answer in the node's saved transcript (the text being written is shown apart, and
briefly both hold the same words)."""


def node_id_in_url(page: Any) -> str:
    """The id of the node whose page is shown (``#/nodes/{id}``), from the page's own
    ``location``: Playwright's ``page.url`` can lag behind a hash the page sets itself."""
    route: str = page.evaluate("location.hash")
    assert route.startswith("#/nodes/"), route
    return route.removeprefix("#/nodes/")


def focused(page: Any) -> dict[str, Any]:
    """What has the keyboard focus, and how it is drawn."""
    answer: dict[str, Any] = page.evaluate(
        """() => {
            const el = document.activeElement;
            const style = getComputedStyle(el);
            const box = el.getBoundingClientRect();
            return {
                id: el.id,
                tag: el.tagName,
                text: el.textContent.trim(),
                row: el.closest(".row")?.dataset.nodeId ?? null,
                focusVisible: el.matches(":focus-visible"),
                outline: `${style.outlineStyle} ${style.outlineWidth}`,
                onScreen: box.width > 0 && box.height > 0 && box.top >= 0
                    && box.bottom <= innerHeight,
            };
        }"""
    )
    return answer


def assert_focus_shows(where: dict[str, Any]) -> None:
    """The focused element is on screen and drawn with the page's focus ring."""
    assert where["onScreen"], where
    assert where["focusVisible"], where
    assert where["outline"] == "solid 3px", where


# -- fork and revive ------------------------------------------------------------------


def test_fork_on_a_node_page_makes_a_fork_that_runs_and_opens_it(
    page: Any, client: httpx.Client, scripts: Any
) -> None:
    # A step is chosen by how many answers the conversation holds: the fork, which
    # carries the original's answer, gets the second.
    model = scripts("forkable", ["The code word is heron.", "Earlier I said: heron."])
    original = create(client, prompt="Pick a code word.", model=model, name="original")
    node_id = original["node_id"]
    wait_settled(client, node_id)
    before = client.get(f"/v1/nodes/{node_id}").json()
    go(page, f"#/nodes/{node_id}")
    page.locator("#outcome-text", has_text="The code word is heron.").wait_for()
    page.fill("#message-body", "What was it?")
    page.click("#action-fork")
    # The page goes to the fork, which says where it came from.
    eventually(lambda: node_id_in_url(page) != node_id, timeout=10, what="the fork's page")
    fork_id = node_id_in_url(page)
    fork = client.get(f"/v1/nodes/{fork_id}").json()
    assert fork["forked_from"] == node_id
    assert (fork["model"], fork["parent"]) == (model, None)
    family = page.locator("#node-family")
    family.locator("dt", has_text="Forked from").wait_for()
    origin = family.get_by_role("link", name="original")
    assert origin.get_attribute("href") == f"#/nodes/{node_id}"
    # It ran on the message typed, and the page shows its answer.
    assert wait_settled(client, fork_id)["outcome"]["output_text"] == "Earlier I said: heron."
    page.locator(".msg-user .msg-text", has_text="What was it?").wait_for()
    page.locator("#outcome-text", has_text="Earlier I said: heron.").wait_for()
    page.locator("#node-status .status-completed").wait_for()
    assert page.locator("#message-body").input_value() == ""
    # The original is untouched.
    assert client.get(f"/v1/nodes/{node_id}").json() == before
    origin.click()
    page.locator("#node-title", has_text="original").wait_for()
    page.locator("#outcome-text", has_text="The code word is heron.").wait_for()


def test_fork_with_an_empty_message_box_makes_a_dormant_fork(
    page: Any, client: httpx.Client, scripts: Any
) -> None:
    model = scripts("idle-fork", ["first", "second"])
    node_id = create(client, prompt="go", model=model, name="to-copy")["node_id"]
    wait_settled(client, node_id)
    go(page, f"#/nodes/{node_id}")
    page.locator("#outcome-text", has_text="first").wait_for()
    page.click("#action-fork")
    eventually(lambda: node_id_in_url(page) != node_id, timeout=10, what="the fork's page")
    fork_id = node_id_in_url(page)
    page.locator("#node-status .status-dormant").wait_for()
    fork = client.get(f"/v1/nodes/{fork_id}").json()
    assert (fork["status"], fork["runs"], fork["forked_from"]) == ("dormant", 0, node_id)
    # Its copied conversation is on its page; a message from there continues it.
    page.locator(SAVED_ANSWER, has_text="first").wait_for()
    page.fill("#message-body", "and then?")
    page.click("#send-message")
    page.locator(SAVED_ANSWER, has_text="second").wait_for()
    assert wait_settled(client, fork_id)["outcome"]["output_text"] == "second"


def test_revive_runs_a_failed_node_again(page: Any, client: httpx.Client, scripts: Any) -> None:
    model = scripts("flaky", [{"error": "the model is down", "status": 503}])
    node_id = create(client, prompt="Try.", model=model, name="flaky")["node_id"]
    failed = wait_settled(client, node_id)["outcome"]
    assert failed["reason"] == "provider_error"
    go(page, f"#/nodes/{node_id}")
    page.locator("#node-status .status-failed").wait_for()
    page.locator("#outcome-reason", has_text="provider_error").wait_for()
    # The provider recovered (slowly enough to see the node run).
    rewrite(model, [{"text": "Recovered.", "delay": 1.5}])
    page.fill("#message-body", "Try again, please.")
    page.click("#action-revive:not([disabled])")
    page.locator("#node-status .status-running").wait_for()
    assert client.get(f"/v1/nodes/{node_id}").json()["status"] == "running"
    page.locator("#action-revive[disabled]").wait_for()
    page.locator("#action-interrupt:not([disabled])").wait_for()
    # It finishes, on the page and in the API; the failure is kept as a previous outcome.
    page.locator("#node-status .status-completed").wait_for()
    page.locator("#outcome-text", has_text="Recovered.").wait_for()
    page.locator(".msg-user .msg-text", has_text="Try again, please.").wait_for()
    poll = wait_settled(client, node_id)
    assert (poll["node_status"], poll["outcome"]["output_text"]) == ("completed", "Recovered.")
    node = client.get(f"/v1/nodes/{node_id}").json()
    assert node["runs"] == 2
    assert [p["outcome"] for p in node["previous_outcomes"]] == [failed]


def test_revive_is_offered_only_where_the_api_takes_it(
    page: Any, client: httpx.Client, scripts: Any
) -> None:
    done = create(client, prompt="x", model=scripts("done", ["Done."]))["node_id"]
    wait_settled(client, done)
    closed = create(client, no_kickoff=True, model=scripts("closed", ["never"]))["node_id"]
    assert client.post(f"/v1/nodes/{closed}/close").status_code == 200
    model = scripts("resident", ["Here.", "Continued."])
    resident = create(client, prompt="Hi.", model=model, root_lifecycle="resident")["node_id"]
    wait_status(client, resident, "dormant")
    # Completed and cancelled nodes cannot be revived (the API says node_settled) ...
    for node_id, status in [(done, "completed"), (closed, "cancelled")]:
        go(page, f"#/nodes/{node_id}")
        page.locator(f"#node-status .status-{status}").wait_for()
        page.locator("#action-revive[disabled]").wait_for()
        page.locator("#action-fork:not([disabled])").wait_for()
        refused = client.post(f"/v1/nodes/{node_id}/revive", json={})
        assert (refused.status_code, refused.json()["error"]["code"]) == (409, "node_settled")
    # ... a dormant one can, and Revive on its page runs it again.
    go(page, f"#/nodes/{resident}")
    page.locator("#node-status .status-dormant").wait_for()
    page.click("#action-revive:not([disabled])")
    page.locator(SAVED_ANSWER, has_text="Continued.").wait_for()
    node = wait_status(client, resident, "dormant")
    assert node["runs"] == 2


def test_a_node_that_settles_while_its_page_opens_shows_its_outcome(
    page: Any, client: httpx.Client, scripts: Any
) -> None:
    model = scripts("meanwhile", [{"text": "Finished meanwhile.", "delay": 1}])
    node_id = create(client, prompt="Go.", model=model)["node_id"]
    wait_status(client, node_id, "running")
    # The page reads the node late: its outcome and transcript were read while it ran.
    held: list[Any] = []
    node_route = re.compile(rf"/v1/nodes/{node_id}$")
    page.route(node_route, lambda route: held.append(route))
    go(page, f"#/nodes/{node_id}")
    page.locator("#node-outcome", has_text="Not settled (running)").wait_for()
    assert held  # the page's read of the node (the canvas may have read it too)
    wait_settled(client, node_id)
    for route in held:
        route.continue_()
    page.unroute(node_route)
    page.locator("#node-status .status-completed").wait_for()
    page.locator("#outcome-text", has_text="Finished meanwhile.").wait_for()
    page.locator(SAVED_ANSWER, has_text="Finished meanwhile.").wait_for()


# -- memory ---------------------------------------------------------------------------


def remember(client: httpx.Client, path: str, body: str, **extra: Any) -> dict[str, Any]:
    """``POST /v1/memory``: a new entry in the default profile."""
    response = client.post("/v1/memory", json={"path": path, "body": body, **extra})
    assert response.status_code == 201, response.text
    entry: dict[str, Any] = response.json()
    return entry


def test_memory_entries_show_in_their_folders_and_open(page: Any, client: httpx.Client) -> None:
    ui = remember(client, "tree/heron/ui", "The page is plain ES modules.", title="The page")
    remember(client, "tree/heron/api", "Every route is under /v1.", tags=["wire"])
    remember(client, "tree/birds/egret", "An egret is a heron.")
    go(page, "#/memory")
    side = page.locator(".mem-side")
    tree = side.locator("details", has=page.locator("summary", has_text="tree/"))
    heron = tree.locator("details", has=page.locator("summary", has_text="heron/"))
    birds = tree.locator("details", has=page.locator("summary", has_text="birds/"))
    # Each entry sits in its own folder, by title if it has one, else by slug.
    heron.get_by_role("button", name="The page").wait_for()
    heron.get_by_role("button", name="api", exact=True).wait_for()
    birds.get_by_role("button", name="egret", exact=True).wait_for()
    assert heron.get_by_role("button", name="egret").count() == 0
    listed = client.get("/v1/memory", params={"prefix": "tree"}).json()["items"]
    shown = side.locator("button[data-entry-id]").evaluate_all(
        "(buttons) => buttons.map((b) => b.dataset.entryId)"
    )
    assert {entry["entry_id"] for entry in listed} <= set(shown)
    # Opening one shows its body, path and version.
    heron.get_by_role("button", name="The page").click()
    detail = page.locator("#memory-detail")
    detail.get_by_role("heading", name="The page").wait_for()
    detail.locator(".msg-text", has_text="The page is plain ES modules.").first.wait_for()
    assert detail.locator("code").inner_text() == ui["path"]
    assert "version 1" in detail.locator("p.muted").inner_text()


def test_memory_search_finds_an_entry(page: Any, client: httpx.Client) -> None:
    remember(client, "search/kestrel", "The kestrel hovers over the verge.", title="Kestrel")
    remember(client, "search/heron", "The heron stands still in the shallows.")
    go(page, "#/memory")
    page.locator(".mem-side button[data-entry-id]").first.wait_for()
    page.fill("#memory-search", "hovers")
    page.keyboard.press("Enter")
    side = page.locator(".mem-side")
    side.get_by_text("1 hit for “hovers”").wait_for()
    hits = client.post("/v1/memory/search", json={"query": "hovers"}).json()
    assert [hit["entry"]["path"] for hit in hits] == ["search/kestrel"]
    assert side.get_by_role("button").all_inner_texts() == ["search/kestrel"]
    assert "hovers" in side.locator(".hint").inner_text()
    side.get_by_role("button", name="search/kestrel").click()
    page.locator("#memory-detail .msg-text", has_text="The kestrel hovers").first.wait_for()
    # Nothing found says so; an empty search brings the tree back.
    page.fill("#memory-search", "albatross")
    page.keyboard.press("Enter")
    side.get_by_text("0 hits for “albatross”").wait_for()
    page.fill("#memory-search", "")
    page.keyboard.press("Enter")
    side.locator("summary", has_text="search/").wait_for()


def test_an_entry_updated_twice_shows_its_three_versions(page: Any, client: httpx.Client) -> None:
    entry = remember(client, "history/plan", "Plan A: walk.", title="The plan")
    path = f"/v1/memory/{entry['entry_id']}"
    for body in ("Plan B: cycle.", "Plan C: take the train."):
        response = client.patch(path, json={"body": body})
        assert response.status_code == 200, response.text
    assert client.get(path).json()["version"] == 3
    history = client.get(f"{path}/history").json()
    assert [(v["version"], v["op"]) for v in history] == [
        (3, "update"),
        (2, "update"),
        (1, "create"),
    ]
    go(page, "#/memory")
    page.locator(f'button[data-entry-id="{entry["entry_id"]}"]').click()
    detail = page.locator("#memory-detail")
    detail.locator("p.muted", has_text="version 3").wait_for()
    versions = detail.locator(".mem-history > li")
    assert versions.count() == 3
    summaries = [text.split(" · ")[:2] for text in versions.locator("summary").all_inner_texts()]
    assert summaries == [["v3", "update"], ["v2", "update"], ["v1", "create"]]
    # The body shown is the latest; each version opens to the body it had.
    detail.locator(":scope > .msg-text", has_text="Plan C: take the train.").wait_for()
    oldest = versions.nth(2)
    assert not oldest.locator(".msg-text").is_visible()
    oldest.locator("summary").click()
    oldest.locator(".msg-text", has_text="Plan A: walk.").wait_for(state="visible")


# -- crons ----------------------------------------------------------------------------


def test_a_cron_is_paused_resumed_and_run_from_the_page(
    page: Any, client: httpx.Client, scripts: Any
) -> None:
    template = {"prompt": "Tick.", "model": scripts("cron-node", ["Tock."])}
    body = {"schedule": "0 0 1 1 *", "template": template, "name": "new-year"}
    response = client.post("/v1/crons", json=body)
    assert response.status_code == 201, response.text
    cron = response.json()
    path = f"/v1/crons/{cron['cron_id']}"
    go(page, "#/crons")
    row = page.locator(f'tr[data-cron-id="{cron["cron_id"]}"]')
    cells = row.locator("td")
    cells.nth(0).get_by_text("new-year").wait_for()
    assert cells.nth(1).inner_text() == "0 0 1 1 * UTC"
    # Its next firing is the one the API gives.
    assert cron["next_fire_at"] is not None
    assert cells.nth(2).locator("time").get_attribute("datetime") == cron["next_fire_at"]
    assert cells.nth(4).inner_text() == "0"

    row.get_by_role("button", name="Pause").click()
    row.get_by_role("button", name="Resume").wait_for()
    cells.nth(0).locator(".badge", has_text="paused").wait_for()
    assert cells.nth(2).inner_text() == "—"
    paused = client.get(path).json()
    assert (paused["paused"], paused["next_fire_at"]) == (True, None)

    row.get_by_role("button", name="Resume").click()
    row.get_by_role("button", name="Pause").wait_for()
    cells.nth(2).locator("time").wait_for()
    assert cells.nth(0).locator(".badge").count() == 0
    resumed = client.get(path).json()
    assert resumed["paused"] is False and resumed["next_fire_at"] is not None
    assert cells.nth(2).locator("time").get_attribute("datetime") == resumed["next_fire_at"]

    row.get_by_role("button", name="Run now").click()
    link = cells.nth(3).get_by_role("link", name="its node")
    link.wait_for()
    fired = client.get(path).json()
    assert fired["fire_count"] == 1 and fired["paused"] is False
    assert fired["recent_firings"][0]["manual"] is True
    node_id = fired["last_node_id"]
    assert link.get_attribute("href") == f"#/nodes/{node_id}"
    assert cells.nth(4).inner_text() == "1"
    assert wait_settled(client, node_id)["outcome"]["output_text"] == "Tock."
    link.click()
    page.locator("#outcome-text", has_text="Tock.").wait_for()
    assert node_id_in_url(page) == node_id


# -- models ---------------------------------------------------------------------------


def test_models_say_which_keys_are_set_and_never_show_one(page: Any, client: httpx.Client) -> None:
    installed = client.put("/v1/model-auth/openai", json={"api_key": INSTALLED_KEY})
    assert installed.status_code == 200, installed.text
    try:
        keys = {key["provider"]: key for key in client.get("/v1/model-auth").json()}
        assert (keys["openai"]["source"], keys["deepseek"]["source"]) == (
            "installed",
            "environment",
        )
        assert keys["anthropic"]["source"] is None
        readiness = client.get("/v1/model-auth/readiness").json()
        ready = {p["provider"]: p["ready"] for p in readiness["providers"]}
        config = client.get("/v1/model-config").json()
        go(page, "#/models")
        table = page.locator("#models-body table")
        table.wait_for()

        def cells(provider: str) -> list[str]:
            row = table.locator("tbody tr", has=page.locator(f'td:text-is("{provider}")'))
            texts: list[str] = row.locator("td").all_inner_texts()
            return texts

        # Every provider the daemon knows, with its readiness as the API gives it.
        shown = table.locator("tbody tr td:first-child").all_inner_texts()
        assert shown == [p["provider"] for p in readiness["providers"]]
        for provider, is_ready in ready.items():
            assert cells(provider)[2] == ("ready" if is_ready else "not ready"), provider
        # Which keys are set, and from where.
        assert cells("openai")[1].startswith("installed")
        assert ready["openai"] is True
        assert cells("deepseek")[1].startswith("set (environment)")
        assert ready["deepseek"] is True
        assert cells("anthropic")[1] == "not set"
        assert ready["anthropic"] is False
        assert cells("scripted")[1] == "no key needed"
        default = page.locator("#models-default")
        assert config["effective_default"] in default.inner_text()
        assert default.locator(".pill").inner_text() == (
            "ready" if config["ready"] else "not ready"
        )
        # Never a key, nor a part of one.
        html = page.content()
        for key in (INSTALLED_KEY, ENVIRONMENT_KEY):
            assert key not in html and key[-10:] not in html
    finally:
        client.delete("/v1/model-auth/openai")


# -- keyboard -------------------------------------------------------------------------


def test_the_keyboard_alone_reaches_a_node_and_comes_back(
    page: Any, client: httpx.Client, scripts: Any
) -> None:
    name = "keyboard-target"
    node_id = create(client, prompt="Hi.", model=scripts("keys", ["Typed."]), name=name)["node_id"]
    wait_settled(client, node_id)
    page.locator(f'.row[data-node-id="{node_id}"]').wait_for()
    # "/" goes to the canvas search; typing narrows the canvas to the node.
    page.keyboard.press("/")
    search = focused(page)
    assert search["id"] == "canvas-search"
    assert_focus_shows(search)
    page.keyboard.type(name)
    page.locator(".row").filter(has_text=name).wait_for()
    eventually(lambda: page.locator(".row").count() == 1, timeout=5, what="one row left")
    # Tab reaches the node's row (through the status filter and the New node link).
    stops = []
    for _ in range(8):
        page.keyboard.press("Tab")
        stops.append(focused(page))
        if stops[-1]["row"] == node_id:
            break
    where = stops[-1]
    assert where["row"] == node_id, stops
    assert (where["tag"], where["text"]) == ("A", name)
    assert_focus_shows(where)
    # Enter opens its page.
    page.keyboard.press("Enter")
    page.locator("#node-title", has_text=name).wait_for()
    assert node_id_in_url(page) == node_id
    page.locator("#outcome-text", has_text="Typed.").wait_for()
    # g c goes back to the canvas, as it was left (the search kept).
    page.keyboard.press("g")
    page.keyboard.press("c")
    page.get_by_role("heading", name="Canvas", exact=True).wait_for()
    assert page.locator("#canvas-search").input_value() == name
    # j selects the row (and focuses it, visibly); Enter opens the node again.
    page.locator(f'.row[data-node-id="{node_id}"]').wait_for()
    page.keyboard.press("j")
    where = focused(page)
    assert where["row"] == node_id, where
    assert_focus_shows(where)
    page.keyboard.press("Enter")
    page.locator("#node-title", has_text=name).wait_for()
    # Tab from the node's page reaches "← Canvas"; Enter there goes back.
    stops = []
    for _ in range(12):
        page.keyboard.press("Tab")
        stops.append(focused(page))
        if stops[-1]["text"] == "← Canvas":
            break
    assert stops[-1]["text"] == "← Canvas", stops
    assert_focus_shows(stops[-1])
    page.keyboard.press("Enter")
    page.get_by_role("heading", name="Canvas", exact=True).wait_for()
