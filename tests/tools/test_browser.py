"""The browser tools against real headless Chromium and pages served from 127.0.0.1."""

from __future__ import annotations

import asyncio
import html
import os
import signal
import socket
import struct
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from tests.support.polling import eventually, eventually_async

from heron import SimpleAgent, ToolContext, ToolResult
from heron.skills import web_end_to_end_test
from heron.testing import ScriptedProvider, call
from heron.tools import BrowserInteraction, LocalToolClient, browser_tools
from heron.tools.browser import (
    BrowserClicked,
    BrowserEvent,
    BrowserNavigationFailed,
    BrowserNavigationFinished,
    BrowserNavigationStarted,
    BrowserTools,
    BrowserTyped,
)

pytestmark = pytest.mark.skipif(
    not os.access("/usr/bin/chromium", os.X_OK), reason="needs Debian's chromium"
)

PAGES = {
    "/counter": """<title>Counter</title>
        <h1>Counter</h1>
        <p>Count: <span id=n>0</span></p>
        <button onclick="document.getElementById('n').textContent++">Add one</button>
        <a href="/second">Go to second</a>""",
    "/second": "<title>Second</title><p>You reached the second page.</p>",
    "/search": """<title>Search</title>
        <form action="/echo"><label>Query <input name=q></label></form>
        <label>Size <select id=size><option>Small</option><option value=L>Large</option>
        </select></label>
        <input type=password aria-label=Secret>
        <div style="display:none"><button>Invisible</button></div>
        <p style="visibility:hidden">Ghost text</p>""",
    "/grow": """<title>Grow</title><button id=first>First</button>
        <button onclick="const b = document.createElement('button');
            b.textContent = 'Added'; document.body.prepend(b)">Add a button</button>""",
    "/noisy": """<title>Noisy</title>
        <script>console.error('widget failed'); setTimeout(() => { throw new Error('late'); });
        </script>
        <button onclick="alert('Saved!')">Save</button>""",
    "/busy": '<title>Busy</title><button onclick="for (;;) {}">Spin forever</button>',
    "/widgets": """<title>Widgets</title>
        <div style="cursor:pointer" onclick="this.textContent = 'Opened'">
          <span>Open menu</span></div>
        <div style="cursor:pointer"><a href="/second">A real link inside</a></div>
        <div contenteditable="true">Draft</div>""",
    "/popup": '<title>Opener</title><a href="/second" target="_blank">Open in a tab</a>',
}


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        if parts.path == "/echo":
            query = parse_qs(parts.query).get("q", [""])[0]
            body, status = f"<title>Results</title><p>You searched: {html.escape(query)}</p>", 200
        elif parts.path in PAGES:
            body, status = PAGES[parts.path], 200
        else:
            body, status = "<title>Not found</title><p>Nothing here</p>", 404
        data = f"<!doctype html><html><body>{body}</body></html>".encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture(scope="module")
def browser() -> Iterator[BrowserTools]:
    # One Chromium for the module. It lives on its own thread, so each test's event loop
    # can use it, and a plain asyncio.run() can close it.
    tools = browser_tools()
    yield tools
    asyncio.run(tools.aclose())


@pytest.fixture
def client(browser: BrowserTools) -> LocalToolClient:
    return LocalToolClient(browser)


async def use(client: LocalToolClient, name: str, **arguments: Any) -> ToolResult:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.text
    return result


def ref_of(page_text: str, label: str) -> str:
    """The ref id of the first element after ``label`` in ``page_text``."""
    at = page_text.find(label)
    assert at >= 0 and "[ref=" in page_text[at:], f"no ref for {label!r} in:\n{page_text}"
    return page_text[at:].split("[ref=", 1)[1].split("]", 1)[0]


class TestNavigate:
    async def test_returns_title_url_and_status(self, client: LocalToolClient, site: str) -> None:
        result = await use(client, "browser-navigate", url=f"{site}/counter")
        assert result.structured == {"title": "Counter", "url": f"{site}/counter", "status": 200}

    async def test_an_http_error_is_a_status_not_a_failure(
        self, client: LocalToolClient, site: str
    ) -> None:
        result = await use(client, "browser-navigate", url=f"{site}/nowhere")
        assert result.structured["status"] == 404
        assert result.structured["title"] == "Not found"

    async def test_refuses_other_schemes(self, client: LocalToolClient) -> None:
        result = await client.call_tool("browser-navigate", {"url": "file:///etc/passwd"})
        assert result.is_error
        assert "must start with http:// or https://" in result.text

    async def test_an_unreachable_server_is_a_clear_error(self, client: LocalToolClient) -> None:
        port = closed_port()
        result = await client.call_tool("browser-navigate", {"url": f"http://127.0.0.1:{port}"})
        assert result.is_error
        assert f"could not load http://127.0.0.1:{port}" in result.text
        assert "ERR_CONNECTION_REFUSED" in result.text


class TestReadClickType:
    async def test_read_shows_text_and_refs(self, client: LocalToolClient, site: str) -> None:
        await use(client, "browser-navigate", url=f"{site}/counter")
        page = (await use(client, "browser-read")).text
        assert page.startswith(f"Page: Counter\nURL: {site}/counter\n\n# Counter\n")
        assert "Count: 0" in page
        assert 'button "Add one" [ref=' in page
        assert 'link "Go to second" -> /second [ref=' in page

    async def test_click_by_ref_changes_the_page(self, client: LocalToolClient, site: str) -> None:
        await use(client, "browser-navigate", url=f"{site}/counter")
        add = ref_of((await use(client, "browser-read")).text, "Add one")
        clicked = await use(client, "browser-click", ref=add)
        assert clicked.text.startswith(f'Clicked button "Add one" [ref={add}].')
        await use(client, "browser-click", ref=add)
        assert "Count: 2" in (await use(client, "browser-read")).text

    async def test_an_element_keeps_its_ref_across_reads(
        self, client: LocalToolClient, site: str
    ) -> None:
        await use(client, "browser-navigate", url=f"{site}/grow")
        first_read = (await use(client, "browser-read")).text
        first, adder = ref_of(first_read, '"First"'), ref_of(first_read, "Add a button")
        await use(client, "browser-click", ref=adder)
        second_read = (await use(client, "browser-read")).text
        # The new button comes first on the page yet gets a new id; the others keep theirs.
        assert ref_of(second_read, '"First"') == first
        assert ref_of(second_read, "Add a button") == adder
        added = ref_of(second_read, '"Added"')
        assert added not in (first, adder)
        assert second_read.index(added) < second_read.index(first)

    async def test_clients_with_their_own_id_sequences_never_share_a_ref(
        self, browser: BrowserTools, site: str
    ) -> None:
        first, second = LocalToolClient(browser), LocalToolClient(browser)
        await use(first, "browser-navigate", url=f"{site}/grow")
        first_read = (await use(first, "browser-read")).text
        await use(first, "browser-click", ref=ref_of(first_read, "Add a button"))
        # The second client's sequence starts at ref-1 too, which the page already uses.
        second_read = (await use(second, "browser-read")).text
        refs = [part.split("]", 1)[0] for part in second_read.split("[ref=")[1:]]
        assert len(refs) == len(set(refs)) == 3
        assert refs[1:] == [ref_of(first_read, '"First"'), ref_of(first_read, "Add a button")]

    async def test_a_context_without_an_id_generator_still_gets_refs(
        self, browser: BrowserTools, site: str
    ) -> None:
        navigate, read = browser[0], browser[1]
        context = ToolContext()  # no ids: the tools keep a generator over its storage
        await navigate.run({"url": f"{site}/grow"}, context)
        first = await read.run({}, context)
        again = await read.run({}, context)
        assert 'button "First" [ref=ref-1]' in first.text
        assert again.text == first.text

    async def test_clicking_a_link_navigates(self, client: LocalToolClient, site: str) -> None:
        await use(client, "browser-navigate", url=f"{site}/counter")
        link = ref_of((await use(client, "browser-read")).text, "Go to second")
        clicked = await use(client, "browser-click", ref=link)
        assert f"The page is now 'Second' ({site}/second)" in clicked.text
        assert "You reached the second page." in (await use(client, "browser-read")).text

    async def test_a_ref_from_a_page_left_behind_is_stale(
        self, client: LocalToolClient, site: str
    ) -> None:
        await use(client, "browser-navigate", url=f"{site}/counter")
        add = ref_of((await use(client, "browser-read")).text, "Add one")
        await use(client, "browser-navigate", url=f"{site}/second")
        for name, arguments in [
            ("browser-click", {"ref": add}),
            ("browser-type", {"ref": add, "text": "x"}),
        ]:
            result = await client.call_tool(name, arguments)
            assert result.is_error
            assert result.text.startswith(f"ref {add!r} is stale")
            assert "browser-read" in result.text

    async def test_an_invented_ref_is_unknown(self, client: LocalToolClient, site: str) -> None:
        await use(client, "browser-navigate", url=f"{site}/counter")
        result = await client.call_tool("browser-click", {"ref": "ref-999999"})
        assert result.is_error
        assert result.text.startswith("unknown ref 'ref-999999'")

    async def test_type_into_an_input_and_submit(self, client: LocalToolClient, site: str) -> None:
        await use(client, "browser-navigate", url=f"{site}/search")
        query = ref_of((await use(client, "browser-read")).text, '"Query"')
        await use(client, "browser-type", ref=query, text="first")
        assert 'textbox "Query" value="first"' in (await use(client, "browser-read")).text
        typed = await use(client, "browser-type", ref=query, text="herons & egrets", submit=True)
        assert "and pressed Enter" in typed.text
        page = (await use(client, "browser-read")).text
        assert f"URL: {site}/echo?q=herons+%26+egrets" in page
        assert "You searched: herons & egrets" in page

    async def test_choose_an_option_by_label_or_value(
        self, client: LocalToolClient, site: str
    ) -> None:
        await use(client, "browser-navigate", url=f"{site}/search")
        size = ref_of((await use(client, "browser-read")).text, '"Size"')
        await use(client, "browser-type", ref=size, text="large")
        assert 'selected="Large"' in (await use(client, "browser-read")).text
        await use(client, "browser-type", ref=size, text="Small")
        assert 'selected="Small"' in (await use(client, "browser-read")).text
        wrong = await client.call_tool("browser-type", {"ref": size, "text": "Huge"})
        assert wrong.is_error
        assert wrong.text == "no option 'Huge' in that list; its options are: 'Small', 'Large'"

    async def test_hidden_things_are_left_out_and_passwords_masked(
        self, client: LocalToolClient, site: str
    ) -> None:
        await use(client, "browser-navigate", url=f"{site}/search")
        secret = ref_of((await use(client, "browser-read")).text, '"Secret"')
        typed = await use(client, "browser-type", ref=secret, text="hunter2")
        assert "hunter2" not in typed.text
        page = (await use(client, "browser-read")).text
        assert 'textbox:password "Secret" value="*******"' in page
        assert "hunter2" not in page
        assert "Invisible" not in page
        assert "Ghost text" not in page

    async def test_script_driven_and_editable_elements_get_refs(
        self, client: LocalToolClient, site: str
    ) -> None:
        await use(client, "browser-navigate", url=f"{site}/widgets")
        page = (await use(client, "browser-read")).text
        assert 'clickable "Open menu" [ref=' in page
        # A pointer-cursor wrapper around a real control is left to the control.
        assert 'link "A real link inside" -> /second [ref=' in page
        assert page.count("[ref=") == 3
        await use(client, "browser-click", ref=ref_of(page, "Open menu"))
        editor = ref_of(page, 'textbox "Draft"')
        await use(client, "browser-type", ref=editor, text="Final words")
        page = (await use(client, "browser-read")).text
        assert 'clickable "Opened"' in page
        assert 'textbox "Final words" value="Final words"' in page

    async def test_page_errors_and_dialogs_are_reported(
        self, client: LocalToolClient, site: str
    ) -> None:
        opened = await use(client, "browser-navigate", url=f"{site}/noisy")
        # The error thrown from a timer may come after the load: poll for it.
        messages = opened.structured.get("page_messages", [])

        async def read_messages() -> list[str]:
            if "uncaught page error: late" not in messages:
                page = (await use(client, "browser-read")).text
                messages.extend(line[2:] for line in page.split("Page messages:\n")[1:])
                messages.extend(m[2:] for m in page.splitlines() if m.startswith("- "))
            return messages

        await eventually_async(
            read_messages, lambda got: "uncaught page error: late" in got, timeout=5, interval=0
        )
        assert "console error: widget failed" in messages
        assert "uncaught page error: late" in messages
        page = (await use(client, "browser-read")).text
        clicked = await use(client, "browser-click", ref=ref_of(page, '"Save"'))
        assert "the page showed a alert dialog: 'Saved!' (dismissed)" in clicked.text
        # Reported once: the next read starts afresh.
        assert "Page messages" not in (await use(client, "browser-read")).text

    async def test_a_new_tab_becomes_the_current_page(
        self, client: LocalToolClient, site: str
    ) -> None:
        await use(client, "browser-navigate", url=f"{site}/popup")
        link = ref_of((await use(client, "browser-read")).text, "Open in a tab")
        clicked = await use(client, "browser-click", ref=link)
        assert "a new tab opened" in clicked.text
        assert "You reached the second page." in (await use(client, "browser-read")).text


class TestScreenshot:
    async def test_is_a_png_image_result(self, client: LocalToolClient, site: str) -> None:
        await use(client, "browser-navigate", url=f"{site}/counter")
        result = await use(client, "browser-screenshot")
        (image,) = result.images
        assert image.media_type == "image/png"
        assert image.data is not None
        assert image.data.startswith(b"\x89PNG\r\n\x1a\n")
        width, height = struct.unpack(">II", image.data[16:24])  # the IHDR chunk
        assert (width, height) == (1280, 800)
        assert result.text == f"Screenshot (page) of 'Counter' ({site}/counter)"

    async def test_of_one_element(self, client: LocalToolClient, site: str) -> None:
        await use(client, "browser-navigate", url=f"{site}/counter")
        add = ref_of((await use(client, "browser-read")).text, "Add one")
        result = await use(client, "browser-screenshot", ref=add)
        data = result.images[0].data
        assert data is not None
        width, height = struct.unpack(">II", data[16:24])
        assert 0 < width < 400 and 0 < height < 100


class TestInteraction:
    def test_tools_publish_to_the_interaction_given(self) -> None:
        interaction = BrowserInteraction()
        assert browser_tools(interaction=interaction).interaction is interaction

    async def test_publishes_navigation_clicks_and_typing(
        self, browser: BrowserTools, site: str
    ) -> None:
        seen: list[BrowserEvent] = []
        later: list[BrowserEvent] = []

        async def async_listener(event: BrowserEvent) -> None:
            later.append(event)

        def broken(event: BrowserEvent) -> None:
            raise RuntimeError("a listener bug")

        unsubscribe = [
            browser.interaction.subscribe(broken),
            browser.interaction.subscribe(seen.append),
        ]
        stop = browser.interaction.subscribe(async_listener)
        try:
            client = LocalToolClient(browser)
            await use(client, "browser-navigate", url=f"{site}/search")
            query = ref_of((await use(client, "browser-read")).text, '"Query"')
            await use(client, "browser-type", ref=query, text="egret", submit=True)
            stop()
            await use(client, "browser-navigate", url=f"{site}/counter")
            link = ref_of((await use(client, "browser-read")).text, "Go to second")
            await use(client, "browser-click", ref=link)
        finally:
            for each in unsubscribe:
                each()
        assert seen == [
            BrowserNavigationStarted(url=f"{site}/search"),
            BrowserNavigationFinished(url=f"{site}/search", title="Search", status=200),
            BrowserTyped(
                ref=query,
                element='textbox "Query"',
                text="egret",
                submitted=True,
                url=f"{site}/echo?q=egret",
            ),
            BrowserNavigationFinished(url=f"{site}/echo?q=egret", title="Results", status=None),
            BrowserNavigationStarted(url=f"{site}/counter"),
            BrowserNavigationFinished(url=f"{site}/counter", title="Counter", status=200),
            BrowserClicked(
                ref=link, element='link "Go to second" -> /second', url=f"{site}/second"
            ),
            BrowserNavigationFinished(url=f"{site}/second", title="Second", status=None),
        ]
        assert later == seen[:4]  # unsubscribed after the search

    async def test_a_failed_load_is_published_after_its_start(self, browser: BrowserTools) -> None:
        seen: list[BrowserEvent] = []
        stop = browser.interaction.subscribe(seen.append)
        url = f"http://127.0.0.1:{closed_port()}/"
        try:
            result = await LocalToolClient(browser).call_tool("browser-navigate", {"url": url})
        finally:
            stop()
        assert result.is_error
        assert seen == [
            BrowserNavigationStarted(url=url),
            BrowserNavigationFailed(url=url, error=result.text),
        ]
        assert "ERR_CONNECTION_REFUSED" in result.text


class TestLifecycle:
    async def test_missing_chromium_names_the_package(self, tmp_path: Path) -> None:
        tools = browser_tools(executable=str(tmp_path / "chromium"))
        try:
            result = await LocalToolClient(tools).call_tool("browser-read", {})
        finally:
            await tools.aclose()
        assert result.is_error
        assert result.text.startswith(f"Chromium was not found at '{tmp_path / 'chromium'}'")
        assert "apt-get install chromium" in result.text

    def test_bad_settings_are_refused(self) -> None:
        from heron import UserError

        with pytest.raises(UserError, match="navigation_timeout must be a positive number"):
            browser_tools(navigation_timeout=0)

    @pytest.mark.slow
    def test_aclose_stops_chromium_and_removes_its_profile(self, site: str) -> None:
        # Each asyncio.run() is a new event loop: the tools work across them.
        tools = browser_tools()
        navigate = LocalToolClient(tools).call_tool
        asyncio.run(navigate("browser-navigate", {"url": f"{site}/counter"}))
        profile = tools.session.user_data_dir
        assert profile is not None and os.path.isdir(profile)
        assert processes_using(profile)
        asyncio.run(tools.aclose())
        asyncio.run(tools.aclose())  # twice is fine
        # Closing waits for Chromium to exit: nothing is left to poll for.
        assert not processes_using(profile)
        assert not os.path.exists(profile)
        # Closed tools start a fresh browser when used again.
        result = asyncio.run(navigate("browser-navigate", {"url": f"{site}/second"}))
        assert result.structured["title"] == "Second"
        asyncio.run(tools.aclose())

    @pytest.mark.slow
    def test_a_page_stuck_in_a_script_cannot_hang_a_call(self, site: str) -> None:
        tools = browser_tools(navigation_timeout=0.5, action_timeout=0.5)
        client = LocalToolClient(tools)
        try:
            asyncio.run(use(client, "browser-navigate", url=f"{site}/busy"))
            page = asyncio.run(use(client, "browser-read")).text
            spin = {"ref": ref_of(page, "Spin forever")}
            clicked = asyncio.run(client.call_tool("browser-click", spin))
            assert clicked.is_error
            assert clicked.text.startswith('could not click button "Spin forever" [ref=')
            # Playwright gave up on the click; reading the page has no timeout of its own.
            result = asyncio.run(client.call_tool("browser-read", {}))
            assert result.is_error
            assert result.text.startswith("the page did not respond within 3 s")
            # The stuck tab is gone: the browser works on.
            after = asyncio.run(use(client, "browser-navigate", url=f"{site}/second"))
            assert after.structured["title"] == "Second"
            # The tab the browser opened in its place is not news to the model.
            assert "page_messages" not in after.structured, after.structured
        finally:
            asyncio.run(tools.aclose())

    @pytest.mark.slow
    def test_a_new_chromium_replaces_one_that_died(self, site: str) -> None:
        tools = browser_tools()
        client = LocalToolClient(tools)
        try:
            asyncio.run(use(client, "browser-navigate", url=f"{site}/counter"))
            profile = tools.session.user_data_dir
            assert profile is not None
            (main,) = [
                pid
                for pid in processes_using(profile)
                if b"--type=" not in Path(f"/proc/{pid}/cmdline").read_bytes()
            ]
            os.kill(main, signal.SIGKILL)
            # A call racing the crash fails with a clear error; a later one starts afresh.
            failed: list[str] = []

            def navigate() -> ToolResult:
                result = asyncio.run(
                    client.call_tool("browser-navigate", {"url": f"{site}/second"})
                )
                if result.is_error:
                    failed.append(result.text)
                return result

            result = eventually(
                navigate, lambda result: not result.is_error, timeout=20, interval=0
            )
            assert all("the page or the browser closed during the call" in t for t in failed)
            assert result.structured["title"] == "Second"
            assert tools.session.user_data_dir != profile
            # The dead browser's profile goes once its last helper processes have exited.
            eventually(lambda: not os.path.exists(profile), timeout=15, what="the profile going")
        finally:
            asyncio.run(tools.aclose())


class TestWithAnAgent:
    async def test_an_agent_clicks_through_a_page(self, browser: BrowserTools, site: str) -> None:
        provider = ScriptedProvider(
            [
                call("browser-navigate", url=f"{site}/counter"),
                call("browser-read"),
                # A fresh agent's id generator starts at ref-1: the button comes first.
                call("browser-click", ref="ref-1"),
                call("browser-read"),
                "The count went up to 1.",
            ]
        )
        agent = SimpleAgent(provider=provider, skills=[web_end_to_end_test(browser=browser)])
        result = await agent.run("Check that the counter counts")
        assert result.reply == "The count went up to 1."
        outputs = [m for m in agent.messages if m.role == "tool"]
        assert 'button "Add one" [ref=ref-1]' in outputs[1].text
        assert "Count: 1" in outputs[3].text
        system = provider.requests[0].messages[0].text
        assert "web-end-to-end-test - Use when" in system


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def processes_using(path: str) -> list[int]:
    """Pids whose command line mentions ``path``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if path.encode() in cmdline:
            found.append(int(entry))
    return found
