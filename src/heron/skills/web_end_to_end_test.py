"""The ``web-end-to-end-test`` skill: test a running web app the way a person would use it."""

from __future__ import annotations

from ..tools import Skill
from ..tools.browser import BrowserTools
from ._tools import browsing_skill

__all__ = ["web_end_to_end_test"]

_DESCRIPTION = (
    "Use when a web app's behaviour must be checked the way a user experiences it: "
    "filling forms, clicking through pages and verifying what the browser shows, "
    "including console errors."
)

_INSTRUCTIONS = """\
Test the app through its real user interface in the browser, never by reading its code alone.

1. Establish what must work. List the user journeys to check (sign up, search, add to cart,
   submit a form ...) and, for each, what a user should see at the end. If the app is not
   running yet, start it first and note its URL.
2. Drive the browser like a user. browser-navigate to the page, then browser-read: it shows
   the page as text and gives every link, button and form field a ref id such as [ref=ref-4].
   Use browser-type to fill fields (submit=true presses Enter) and browser-click to press
   buttons and follow links. Take refs only from the latest browser-read; after anything that
   changes the page, read it again — a ref of an element that is gone is refused as stale.
3. Verify on the rendered page. After each step, read the page and check the visible result:
   the confirmation text, the new list entry, the error message for bad input, the URL you
   land on. Use browser-screenshot when layout, images or styling matter.
4. Check what the page reports. Tool results list "Page messages": console errors, uncaught
   script errors and dialogs the page opened. Treat a script error or a failed request during
   a journey as a defect even when the page looks fine. An HTTP status of 4xx or 5xx from
   browser-navigate is a defect unless the test expects it.
5. Try the unhappy paths too: empty and invalid form input, double submission, going back
   and reloading, a direct visit to a page that needs a login.
6. Report precisely. For each journey: passed or failed, the exact steps, what you expected
   and what the page showed (quote it). Fix what you can, then run the journey again to
   confirm; never report a journey as passing that you did not run to the end.
"""


def web_end_to_end_test(*, browser: BrowserTools | None = None) -> Skill:
    """A skill for testing a live web app through headless Chromium.

    Args:
        browser: The browser tools to bundle; a new set (its own browser) if omitted.
            Pass yours (``browser_tools()``, or a catalog's ``.browser``) to share one
            browser with other skills or to close it with ``aclose()``.
    """
    return browsing_skill("web-end-to-end-test", _DESCRIPTION, _INSTRUCTIONS, browser)
