"""One headless Chromium, driven by Playwright on an event loop of its own.

Playwright's objects belong to the event loop that started them. Tool calls
may come from any loop (each ``asyncio.run()`` makes a new one), so the
browser lives on a private loop in a daemon thread and calls hop over to it.
That loop outlives the callers': the browser stops on ``aclose()``, when its
tools are garbage-collected, or when the interpreter exits.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import re
import shutil
import tempfile
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from .._core import ToolError

if TYPE_CHECKING:
    from playwright.async_api import (
        BrowserContext,
        ConsoleMessage,
        Dialog,
        ElementHandle,
        Page,
        Playwright,
    )

__all__ = [
    "BROWSER_GONE",
    "DEFAULT_ARGS",
    "BrowserRuntime",
    "BrowserSession",
    "BrowserSettings",
    "clean_error",
    "is_playwright_error",
    "is_target_closed",
]

_log = logging.getLogger("heron.tools")

T = TypeVar("T")

# Quiet, offline-friendly Chromium: no sandbox (containers rarely allow it), no GPU,
# no background traffic to Google, no first-run UI.
DEFAULT_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
# "Page.goto: " and the like: which API method failed says nothing to the model.
_API_PREFIX = re.compile(r"^[A-Z][A-Za-z]*\.[a-z][A-Za-z_]*: ")
BROWSER_GONE = (
    "the page or the browser closed during the call (Chromium may have crashed or been "
    "stopped); the next call opens a new one"
)
_MAX_NOTES = 50
_NOTE_CHARS = 500


@dataclass(frozen=True, kw_only=True, slots=True)
class BrowserSettings:
    """How the browser is started."""

    executable: str
    """Path or command name of the Chromium binary."""
    headless: bool
    """Run without a window."""
    args: tuple[str, ...]
    """Command-line switches passed to Chromium."""
    viewport: tuple[int, int]
    """Page width and height in CSS pixels."""
    navigation_timeout: float
    """Seconds a page may take to load."""
    action_timeout: float
    """Seconds a click or typing may wait for its element to become usable."""
    launch_timeout: float
    """Seconds Chromium may take to start."""

    @property
    def call_limit(self) -> float:
        """Seconds one tool call may keep the browser: a load, an action and some headroom.

        Playwright bounds loads and actions, but nothing bounds a script stuck in a
        loop inside the page, which blocks every call into it.
        """
        return self.navigation_timeout + self.action_timeout + 2.0


def clean_error(exc: BaseException) -> str:
    """A Playwright error's message without its call log: the part a model can act on."""
    text = str(exc).split("\nCall log:", 1)[0].strip()
    text = _API_PREFIX.sub("", text.splitlines()[0]) if text else ""
    return text or type(exc).__name__


def is_target_closed(exc: BaseException) -> bool:
    """Whether ``exc`` says the page or browser went away mid-call."""
    return is_playwright_error(exc) and type(exc).__name__ == "TargetClosedError"


def is_playwright_error(exc: BaseException) -> bool:
    """Whether ``exc`` comes from Playwright (checked without importing it)."""
    return type(exc).__module__.startswith("playwright.")


def _remove_profile(path: str, within: float = 10.0) -> None:
    """Delete a dead browser's profile, retrying while its last processes still write to it.

    Blocking: run it in a worker thread.
    """
    deadline = time.monotonic() + within
    while True:
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.exists(path) or time.monotonic() > deadline:
            return
        time.sleep(0.1)


class BrowserRuntime:
    """The browser thread, its loop and the browser on it; owned by one :class:`BrowserSession`.

    Everything but :meth:`submit` and :meth:`shutdown` runs on the browser loop.
    """

    def __init__(self, settings: BrowserSettings) -> None:
        self.settings = settings
        self.loop = asyncio.new_event_loop()
        self.page: Page | None = None
        """The tab the tools work in."""
        self.user_data_dir: str | None = None
        self._playwright: Playwright | None = None
        self._context: BrowserContext | None = None
        self._lock: asyncio.Lock | None = None
        self._opened: list[Page] = []
        self._notes: list[str] = []
        self._cleanups: set[asyncio.Task[None]] = set()
        self._thread = threading.Thread(target=self._serve, name="heron-browser", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            # What asyncio.run() does on the way out: finish or cancel what is left.
            pending = asyncio.all_tasks(self.loop)
            for task in pending:
                task.cancel()
            self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.run_until_complete(self.loop.shutdown_default_executor())
            self.loop.close()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run ``coro`` on the browser loop (from any other thread)."""
        try:
            return asyncio.run_coroutine_threadsafe(coro, self.loop)
        except RuntimeError:  # the loop has stopped
            coro.close()
            raise ToolError("the browser was closed") from None

    async def call(self, action: Callable[[BrowserRuntime], Awaitable[T]]) -> T:
        """Run ``action`` with the browser started; one action at a time."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._context is None:
                await self._launch()
            # A tab opened by a script after the last action returned: work in it now.
            self._follow_new_tab()
            if self.page is None or self.page.is_closed():
                self.page = await self._open_tab()
            limit = self.settings.call_limit
            deadline = asyncio.timeout(limit)
            try:
                async with deadline:
                    return await action(self)
            except TimeoutError:
                if not deadline.expired():  # the action's own
                    raise
                await self._drop_tab()
                raise ToolError(
                    f"the page did not respond within {limit:g} s (a script in it may be "
                    "stuck); its tab was closed and the next call opens a new one"
                ) from None

    async def _drop_tab(self) -> None:
        # Closing is done by the browser process, so it works on a hung page too.
        page, self.page = self.page, None
        if page is None:
            return
        try:
            # Chromium takes half a second or so to give up on the page's renderer.
            async with asyncio.timeout(max(self.settings.action_timeout, 5.0)):
                await page.close(run_before_unload=False)
        except Exception as exc:
            if not (is_playwright_error(exc) or isinstance(exc, TimeoutError)):
                raise
            _log.warning("closing a stuck tab failed: %s", exc)

    def _follow_new_tab(self) -> None:
        # The current page is never news: it may be the tab _open_tab made, whose
        # "page" event arrives like that of a tab the page opened.
        opened = [p for p in self._opened if not p.is_closed() and p is not self.page]
        self._opened.clear()
        if opened:
            self.page = opened[-1]
            self.note(f"a new tab opened ({self.page.url}); the browser tools now work in it")

    async def _open_tab(self) -> Page:
        if self._context is None:  # Chromium went away during the call
            raise ToolError(BROWSER_GONE)
        tabs = [p for p in self._context.pages if not p.is_closed()]
        return tabs[-1] if tabs else await self._context.new_page()

    async def _launch(self) -> None:
        settings = self.settings
        if shutil.which(settings.executable) is None:
            raise ToolError(
                f"Chromium was not found at {settings.executable!r}: install Debian's package "
                "(`apt-get install chromium`), or pass browser_tools(executable=...) "
                "the path of another Chromium"
            )
        try:
            from playwright.async_api import async_playwright
        except ImportError:  # pragma: no cover - a declared dependency
            raise ToolError("the browser tools need Playwright: `pip install playwright`") from None
        if self._playwright is None:
            self._playwright = await async_playwright().start()
        self.user_data_dir = tempfile.mkdtemp(prefix="heron-browser-")
        width, height = settings.viewport
        try:
            context = await self._playwright.chromium.launch_persistent_context(
                self.user_data_dir,
                executable_path=shutil.which(settings.executable),
                headless=settings.headless,
                args=list(settings.args),
                viewport={"width": width, "height": height},
                timeout=settings.launch_timeout * 1000,
            )
        except Exception as exc:
            if not is_playwright_error(exc):
                raise
            shutil.rmtree(self.user_data_dir, ignore_errors=True)
            self.user_data_dir = None
            raise ToolError(
                f"could not start Chromium ({settings.executable}): {clean_error(exc)}"
            ) from None
        context.set_default_timeout(settings.action_timeout * 1000)
        context.set_default_navigation_timeout(settings.navigation_timeout * 1000)
        context.on("page", self._adopt)
        context.on("close", self._on_close)
        for page in context.pages:
            self._watch(page)
        self._context = context

    def _on_close(self, context: BrowserContext) -> None:
        # Chromium exited (crashed, or was killed): the next call starts a new one.
        if context is self._context:
            # The tab stays: calls still using it fail with TargetClosedError.
            self._context = None
            if self.user_data_dir is not None:
                # Chromium's helper processes outlive a killed browser by a moment and
                # may still write to the profile: remove it once they are gone.
                cleanup = self.loop.create_task(
                    asyncio.to_thread(_remove_profile, self.user_data_dir)
                )
                self._cleanups.add(cleanup)
                cleanup.add_done_callback(self._cleanups.discard)
                self.user_data_dir = None

    def _adopt(self, page: Page) -> None:
        self._watch(page)
        self._opened.append(page)

    def _watch(self, page: Page) -> None:
        page.on("console", self._on_console)
        page.on("pageerror", lambda error: self.note(f"uncaught page error: {error}"))
        page.on("dialog", self._on_dialog)

    def _on_console(self, message: ConsoleMessage) -> None:
        # A missing favicon is the browser's own request, not the page's fault.
        if message.location.get("url", "").endswith("/favicon.ico"):
            return
        if message.type in ("error", "warning"):
            self.note(f"console {message.type}: {message.text}")

    async def _on_dialog(self, dialog: Dialog) -> None:
        # A listener means Playwright no longer dismisses dialogs by itself: do it, and
        # say so. Leaving the page is let through, or navigation would hang on it.
        if dialog.type == "beforeunload":
            await dialog.accept()
            return
        self.note(f"the page showed a {dialog.type} dialog: {dialog.message!r} (dismissed)")
        await dialog.dismiss()

    def note(self, text: str) -> None:
        """Remember something the page did for the next tool result."""
        if len(text) > _NOTE_CHARS:
            text = text[: _NOTE_CHARS - 1] + "…"
        self._notes = [*self._notes[-(_MAX_NOTES - 1) :], text]

    def take_notes(self) -> list[str]:
        """The notes since the last call, oldest first."""
        notes, self._notes = self._notes, []
        return notes

    async def settle(self) -> None:
        """After an action: follow a tab it opened and wait for the page to load."""
        self._follow_new_tab()
        if self.page is None or self.page.is_closed():
            self.page = await self._open_tab()
            return
        try:
            await self.page.wait_for_load_state("load")
        except Exception as exc:
            if not is_playwright_error(exc):
                raise
            self.note(f"the page had not finished loading: {clean_error(exc)}")

    async def after_failed_navigation(self) -> None:
        """Let the error page of a failed load commit, or it would cut off the next one."""
        assert self.page is not None
        try:
            await self.page.wait_for_url(
                lambda url: url.startswith("chrome-error://"), wait_until="load", timeout=5000
            )
        except Exception as exc:  # no error page came (the load was aborted, say)
            if not is_playwright_error(exc):
                raise

    async def click(self, element: ElementHandle) -> None:
        """Click ``element``; when it opens a new tab (a link with a target), wait for the tab."""
        opens_tab: bool = await element.evaluate(
            """el => {
                const owner = el.closest('a[href], area[href]') || el.form;
                const target = ((owner && owner.target) || '').toLowerCase();
                return target !== '' && !['_self', '_top', '_parent'].includes(target);
            }"""
        )
        if not opens_tab:
            await element.click()
            return
        assert self.page is not None
        timeout = self.settings.navigation_timeout * 1000
        tab = asyncio.ensure_future(self.page.context.wait_for_event("page", timeout=timeout))
        try:
            await element.click()
        except BaseException:
            tab.cancel()
            await asyncio.gather(tab, return_exceptions=True)
            raise
        try:
            await tab
        except Exception as exc:
            if not is_playwright_error(exc):
                raise
            self.note("the link was meant to open a new tab, but none opened")

    async def release(self, element: ElementHandle) -> None:
        """Let the page forget ``element``'s handle (gone already when the page navigated)."""
        try:
            await element.dispose()
        except Exception as exc:
            if not is_playwright_error(exc):
                raise

    async def find(self, ref: str) -> ElementHandle | None:
        """The element of the current page carrying ``ref``, if any."""
        from ._browser_snapshot import FIND_SCRIPT

        assert self.page is not None
        handle = await self.page.evaluate_handle(FIND_SCRIPT, ref)
        element = handle.as_element()
        if element is None:
            await handle.dispose()
        return element

    async def close_browser(self) -> None:
        """Stop Chromium and Playwright's driver, and delete the profile."""
        context, self._context, self.page = self._context, None, None
        playwright, self._playwright = self._playwright, None
        try:
            if context is not None:
                await context.close()
        finally:
            if playwright is not None:
                await playwright.stop()
            if self.user_data_dir is not None:
                shutil.rmtree(self.user_data_dir, ignore_errors=True)
                self.user_data_dir = None
            await asyncio.gather(*self._cleanups, return_exceptions=True)

    async def _close_then_stop(self) -> None:
        try:
            await self.close_browser()
        except Exception:
            _log.exception("closing the browser failed")
        finally:
            self.loop.stop()

    def shutdown(self, timeout: float = 15.0) -> None:
        """Close the browser and end the thread (blocking; never from the browser thread)."""
        if self.loop.is_closed():
            return
        if threading.current_thread() is self._thread:
            # Garbage collection can run the finalizer here, on the browser loop itself,
            # which must not block on its own work: close, then stop, in the background.
            self._closing = self.loop.create_task(self._close_then_stop())
            return
        try:
            self.submit(self.close_browser()).result(timeout)
        except Exception:
            _log.exception("closing the browser failed")
        try:
            self.loop.call_soon_threadsafe(self.loop.stop)
        except RuntimeError:  # closed in the meantime
            return
        self._thread.join(timeout)


class BrowserSession:
    """The browser behind one set of browser tools, started on first use."""

    def __init__(self, settings: BrowserSettings) -> None:
        self.settings = settings
        """How the browser is started."""
        self._guard = threading.Lock()
        self._runtime: BrowserRuntime | None = None
        self._finalizer: weakref.finalize[[], BrowserSession] | None = None

    @property
    def user_data_dir(self) -> str | None:
        """The running browser's temporary profile directory, or ``None``."""
        runtime = self._runtime
        return runtime.user_data_dir if runtime is not None else None

    async def run(self, action: Callable[[BrowserRuntime], Awaitable[T]]) -> T:
        """Run ``action`` on the browser loop, starting the browser if needed.

        Playwright errors the action lets through become :class:`ToolError`.
        """
        with self._guard:
            runtime = self._runtime
            if runtime is None:
                runtime = self._runtime = BrowserRuntime(self.settings)
                # Stops the browser when these tools are collected or the interpreter exits.
                self._finalizer = weakref.finalize(self, runtime.shutdown)
        try:
            return await asyncio.wrap_future(runtime.submit(runtime.call(action)))
        except Exception as exc:
            if not is_playwright_error(exc):
                raise
            if is_target_closed(exc):
                raise ToolError(BROWSER_GONE) from None
            raise ToolError(clean_error(exc)) from None

    async def aclose(self) -> None:
        """Stop the browser (a later call starts a fresh one); safe to call twice."""
        with self._guard:
            runtime, self._runtime = self._runtime, None
            finalizer, self._finalizer = self._finalizer, None
        if runtime is None:
            return
        if finalizer is not None:
            finalizer.detach()
        # Joining the thread blocks: keep that off the caller's loop.
        await asyncio.to_thread(runtime.shutdown)
