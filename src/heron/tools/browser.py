"""The browser tools: headless Chromium the model can navigate, read, click, type into and see.

Playwright drives Debian's Chromium (``apt-get install chromium``); no browser
is ever downloaded. ``browser-read`` shows the page as text in which links,
buttons and form fields carry ref ids (``[ref=ref-7]``) from the tool
context's :class:`~heron.tools.IdGenerator`; ``browser-click`` and
``browser-type`` take those ids::

    async with browser_tools() as tools:
        agent = SimpleAgent(provider=provider, tools=tools)
        await agent.run("Sign up on http://127.0.0.1:8000 and report what the page says")
"""

from __future__ import annotations

import functools
import os
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar
from urllib.parse import urlsplit

from .._core import ImagePart, TextPart, ToolError, UserError
from .._core.closing import AsyncClosing
from ._browser_events import (
    BrowserClicked,
    BrowserEvent,
    BrowserInteraction,
    BrowserNavigationFailed,
    BrowserNavigationFinished,
    BrowserNavigationStarted,
    BrowserTyped,
)
from ._browser_session import (
    DEFAULT_ARGS,
    BrowserRuntime,
    BrowserSession,
    BrowserSettings,
    clean_error,
    is_playwright_error,
    is_target_closed,
)
from ._browser_snapshot import DESCRIBE_SCRIPT, SNAPSHOT_SCRIPT
from ._context import IdGenerator, ToolContext
from ._result import ToolResult
from ._tool import Tool, tool

if TYPE_CHECKING:
    from playwright.async_api import ElementHandle

__all__ = [
    "BrowserClicked",
    "BrowserEvent",
    "BrowserInteraction",
    "BrowserNavigationFailed",
    "BrowserNavigationFinished",
    "BrowserNavigationStarted",
    "BrowserTools",
    "BrowserTyped",
    "browser_tools",
]

X = TypeVar("X")

# A page that keeps growing while it is read gets this many attempts to hand out refs.
_READ_ATTEMPTS = 5


class BrowserTools(list[Tool], AsyncClosing):
    """The five browser tools, sharing one browser; also what stops it.

    A plain list of tools to an agent. The browser starts on the first call
    and stops on :meth:`aclose` (or ``async with``), when the tools are
    garbage-collected, or when the interpreter exits.
    """

    def __init__(
        self, tools: Iterable[Tool], *, session: BrowserSession, interaction: BrowserInteraction
    ) -> None:
        super().__init__(tools)
        self.session = session
        """The browser behind the tools."""
        self.interaction = interaction
        """Where navigation, click and typing events are published."""

    async def aclose(self) -> None:
        """Stop the browser; a later tool call starts a fresh one."""
        await self.session.aclose()


class _Refs:
    """The ref ids handed out by one set of tools, to tell stale ones from made-up ones."""

    def __init__(self) -> None:
        self.issued: set[str] = set()
        self._fallback: dict[tuple[int, str], IdGenerator] = {}

    def ids(self, context: ToolContext) -> IdGenerator:
        if context.ids is not None:
            return context.ids
        # A bare ToolContext has no generator: keep one per storage and env, so that
        # the sequence (and its lock) is shared by every call.
        key = (id(context.storage), context.env_id)
        found = self._fallback.get(key)
        if found is None:
            found = self._fallback[key] = IdGenerator(context.storage, context.env_id)
        return found

    def missing(self, ref: str) -> ToolError:
        if ref in self.issued:
            return ToolError(
                f"ref {ref!r} is stale: that element is no longer on the page (it changed or "
                "navigated away); call browser-read for current refs"
            )
        return ToolError(
            f"unknown ref {ref!r}: use a ref id shown by browser-read, such as 'ref-3'"
        )


def _with_notes(text: str, notes: Sequence[str]) -> str:
    if not notes:
        return text
    return text + "\n\nPage messages:\n" + "\n".join(f"- {n}" for n in notes)


def browser_tools(
    *,
    executable: str | os.PathLike[str] = "/usr/bin/chromium",
    interaction: BrowserInteraction | None = None,
    headless: bool = True,
    extra_args: Sequence[str] = (),
    viewport: tuple[int, int] = (1280, 800),
    navigation_timeout: float = 30.0,
    action_timeout: float = 10.0,
    launch_timeout: float = 30.0,
    max_read_chars: int = 40_000,
    allowed_schemes: Sequence[str] = ("http", "https"),
) -> BrowserTools:
    """The browser tools over one headless Chromium, started on first use.

    Args:
        executable: The Chromium binary (Debian: ``apt-get install chromium``).
        interaction: Where to publish navigation, click and typing events; a new one if omitted.
        headless: Run without a window.
        extra_args: Chromium switches added to Heron's quiet, offline-friendly defaults.
        viewport: Page width and height in CSS pixels.
        navigation_timeout: Seconds a page may take to load.
        action_timeout: Seconds a click or typing waits for its element to become usable.
        launch_timeout: Seconds Chromium may take to start.
        max_read_chars: Longest page text ``browser-read`` returns before cutting it off.
        allowed_schemes: URL schemes ``browser-navigate`` accepts (add ``"file"`` with care).
    """
    for label, value in (
        ("navigation_timeout", navigation_timeout),
        ("action_timeout", action_timeout),
        ("launch_timeout", launch_timeout),
    ):
        if not isinstance(value, int | float) or isinstance(value, bool) or not value > 0:
            raise UserError(f"browser_tools: {label} must be a positive number of seconds")
    if max_read_chars < 1:
        raise UserError("browser_tools: max_read_chars must be at least 1")
    session = BrowserSession(
        BrowserSettings(
            executable=os.fspath(executable),
            headless=headless,
            args=(*DEFAULT_ARGS, *extra_args),
            viewport=viewport,
            navigation_timeout=navigation_timeout,
            action_timeout=action_timeout,
            launch_timeout=launch_timeout,
        )
    )
    events = interaction if interaction is not None else BrowserInteraction()
    schemes = tuple(s.lower() for s in allowed_schemes)
    refs = _Refs()

    @tool(name="browser-navigate")
    async def navigate(url: str) -> dict[str, Any]:
        """Open a URL in the browser and wait for it to load; returns its title, URL and status.

        Then call browser-read to see the page and get ref ids for clicking and typing.

        Args:
            url: The full address, starting with http:// or https://.
        """
        url = url.strip()
        scheme = urlsplit(url).scheme.lower()
        if scheme not in schemes:
            allowed = " or ".join(f"{s}://" for s in schemes)
            raise ToolError(f"cannot open {url!r}: the URL must start with {allowed}")
        await events.emit(BrowserNavigationStarted(url=url))

        async def act(rt: BrowserRuntime) -> dict[str, Any]:
            assert rt.page is not None
            try:
                response = await rt.page.goto(url, wait_until="load")
            except Exception as exc:
                if not is_playwright_error(exc) or is_target_closed(exc):
                    raise
                await rt.after_failed_navigation()
                raise ToolError(f"could not load {url}: {clean_error(exc)}") from None
            await rt.settle()
            page = rt.page
            assert page is not None
            found = {
                "title": await page.title(),
                "url": page.url,
                "status": response.status if response is not None else None,
            }
            notes = rt.take_notes()
            return {**found, "page_messages": notes} if notes else found

        try:
            result = await session.run(act)
        except Exception as exc:
            # A start with nothing after it would leave a UI showing "loading" for good.
            error = str(exc) if isinstance(exc, ToolError) else f"{type(exc).__name__}: {exc}"
            await events.emit(BrowserNavigationFailed(url=url, error=error))
            raise
        await events.emit(
            BrowserNavigationFinished(
                url=result["url"], title=result["title"], status=result["status"]
            )
        )
        return result

    @tool(name="browser-read")
    async def read(context: ToolContext) -> str:
        """Read the current page as text; links, buttons and form fields carry [ref=...] ids.

        An element keeps its ref while it stays on the page: pass it to browser-click or
        browser-type. Read again after the page changes.
        """
        fresh: list[str] = []
        for _ in range(_READ_ATTEMPTS):
            data = await session.run(functools.partial(_snapshot, tuple(fresh)))
            if "need" in data:
                fresh = [ref for ref in fresh if ref not in data["clashing"]]
                shortfall = data["need"] - len(fresh)
                if data["clashing"]:
                    # Another sequence numbered this page: enough spares that at most
                    # every ref it holds can clash, so the next round succeeds.
                    shortfall += data["taken"]
                ids = refs.ids(context)
                fresh += [await ids.next("ref") for _ in range(shortfall)]
                continue
            refs.issued.update(data["refs"])
            text: str = data["text"] or "(the page shows no text)"
            if len(text) > max_read_chars:
                hidden = len(text) - max_read_chars
                text = f"{text[:max_read_chars]}\n[... {hidden} more characters not shown]"
            header = f"Page: {data['title']}\nURL: {data['url']}\n\n"
            return _with_notes(header + text, data["notes"])
        raise ToolError("the page kept changing while it was read; try browser-read again")

    @tool(name="browser-click")
    async def click(ref: str) -> str:
        """Click an element of the page by the ref id browser-read showed for it.

        Args:
            ref: The element's ref id, such as ref-3.
        """

        done = await _act_on(session, refs, ref, "click", lambda rt, el: rt.click(el))
        await events.emit(BrowserClicked(ref=ref, element=done.shown, url=done.url))
        await _emit_navigation(events, done)
        text = f"Clicked {done.shown} [ref={ref}]. The page is now {done.title!r} ({done.url})."
        return _with_notes(text + " Call browser-read to see what changed.", done.notes)

    @tool(name="browser-type")
    async def type_text(ref: str, text: str, submit: bool = False) -> str:
        """Type text into a form field by its ref id, replacing what it held; for a select
        element, choose the option with that label or value.

        Args:
            ref: The field's ref id, such as ref-4.
            text: The text to enter (or the option to choose).
            submit: Press Enter afterwards, e.g. to send a search form.
        """

        async def enter(rt: BrowserRuntime, element: ElementHandle) -> bool:
            kind: str = await element.evaluate("el => el.tagName + ':' + (el.type || '')")
            if kind.startswith("SELECT:"):
                await _choose(element, text)
            else:
                await element.fill(text)
            if submit:
                await element.press("Enter")
            return kind == "INPUT:password"

        done = await _act_on(session, refs, ref, "type into", enter)
        entered = "*" * len(text) if done.outcome else text
        await events.emit(
            BrowserTyped(ref=ref, element=done.shown, text=entered, submitted=submit, url=done.url)
        )
        await _emit_navigation(events, done)
        sent = " and pressed Enter" if submit else ""
        message = (
            f"Entered {entered!r} into {done.shown} [ref={ref}]{sent}. "
            f"The page is {done.title!r} ({done.url})."
        )
        return _with_notes(message, done.notes)

    @tool(name="browser-screenshot")
    async def screenshot(full_page: bool = False, ref: str | None = None) -> ToolResult:
        """Take a PNG screenshot of the visible page (or the whole page, or one element).

        Args:
            full_page: Capture the whole scrollable page instead of the visible part.
            ref: Capture only this element (a ref id from browser-read).
        """

        async def act(rt: BrowserRuntime) -> tuple[bytes, str, str] | None:
            assert rt.page is not None
            if ref is not None:
                element = await rt.find(ref)
                if element is None:
                    return None
                try:
                    png = await element.screenshot(type="png")
                finally:
                    await rt.release(element)
            else:
                png = await rt.page.screenshot(type="png", full_page=full_page)
            return png, await rt.page.title(), rt.page.url

        done = await session.run(act)
        if done is None:
            raise refs.missing(ref or "")
        png, title, url = done
        what = f"element [ref={ref}]" if ref is not None else "full page" if full_page else "page"
        return ToolResult(
            content=(
                TextPart(text=f"Screenshot ({what}) of {title!r} ({url})"),
                ImagePart(data=png, media_type="image/png"),
            )
        )

    return BrowserTools(
        [navigate, read, click, type_text, screenshot], session=session, interaction=events
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class _Acted(Generic[X]):
    """What happened when a tool acted on one element."""

    shown: str
    """The element as browser-read shows it, taken before the action."""
    before: str
    """The page URL before the action."""
    url: str
    """The page URL after it (and after any new tab was followed)."""
    title: str
    """The page title after it."""
    notes: list[str]
    """What the page reported meanwhile."""
    outcome: X
    """The action's own result."""


async def _act_on(
    session: BrowserSession,
    refs: _Refs,
    ref: str,
    verb: str,
    action: Callable[[BrowserRuntime, ElementHandle], Awaitable[X]],
) -> _Acted[X]:
    """Run ``action`` (``verb`` says what it does) on the element with ``ref``, then settle."""

    async def act(rt: BrowserRuntime) -> _Acted[X] | None:
        element = await rt.find(ref)
        if element is None:
            return None
        assert rt.page is not None
        before = rt.page.url
        shown: str = await element.evaluate(DESCRIBE_SCRIPT)
        try:
            outcome = await action(rt, element)
        except Exception as exc:
            if not is_playwright_error(exc) or is_target_closed(exc):
                raise
            raise ToolError(f"could not {verb} {shown} [ref={ref}]: {clean_error(exc)}") from None
        finally:
            await rt.release(element)
        await rt.settle()
        page = rt.page
        assert page is not None
        title = await page.title()
        return _Acted(
            shown=shown,
            before=before,
            url=page.url,
            title=title,
            notes=rt.take_notes(),
            outcome=outcome,
        )

    done = await session.run(act)
    if done is None:
        raise refs.missing(ref)
    return done


async def _emit_navigation(events: BrowserInteraction, done: _Acted[Any]) -> None:
    """Publish the navigation an action caused, if it caused one."""
    if done.url != done.before:
        await events.emit(BrowserNavigationFinished(url=done.url, title=done.title, status=None))


async def _snapshot(fresh: tuple[str, ...], rt: BrowserRuntime) -> dict[str, Any]:
    """The page's text, refs, title and notes; or what is wrong with ``fresh`` (see the script)."""
    assert rt.page is not None
    data: dict[str, Any] = await rt.page.evaluate(SNAPSHOT_SCRIPT, list(fresh))
    if "need" not in data:
        data.update(title=await rt.page.title(), url=rt.page.url, notes=rt.take_notes())
    return data


async def _choose(element: ElementHandle, wanted: str) -> None:
    """Select the option of a ``<select>`` whose label or value is ``wanted`` (any case)."""
    options: list[dict[str, str]] = await element.evaluate(
        "el => Array.from(el.options).map(o => ({label: o.label.trim(), value: o.value}))"
    )
    for exact in (True, False):
        for option in options:
            label, value = option["label"], option["value"]
            if (
                (wanted in (label, value))
                if exact
                else wanted.casefold()
                in (
                    label.casefold(),
                    value.casefold(),
                )
            ):
                await element.select_option(value=value)
                return
    listed = ", ".join(repr(o["label"]) for o in options[:25]) or "none"
    raise ToolError(f"no option {wanted!r} in that list; its options are: {listed}")
