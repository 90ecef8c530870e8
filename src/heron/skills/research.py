"""The ``research`` skill: answering from current sources on the live web."""

from __future__ import annotations

from ..tools import Skill
from ..tools.browser import BrowserTools
from ._tools import browsing_skill

__all__ = ["research"]

_DESCRIPTION = (
    "Use this skill when a question needs real, current or checkable information from the "
    "web (recent events, prices, versions, documentation, statistics) rather than what you "
    "remember."
)

_INSTRUCTIONS = """\
- Turn the question into a few specific search queries. Open a search engine with
  browser-navigate (for example https://duckduckgo.com/html/?q=your+query) and use
  browser-read to see the results; every link carries a [ref=...] id.
- Open promising results by their ref with browser-click, or browser-navigate straight to a
  URL you know. Prefer primary sources: official documentation, the publisher, the
  organisation itself, the original paper or dataset, over aggregators and forums.
- Read the page with browser-read and note the facts that answer the question, each with its
  URL and the date the page gives. If a page is mostly a picture or a chart, use
  browser-screenshot to look at it.
- Cross-check every important fact in at least two independent sources. When sources
  disagree, say so, give both, and explain which you trust more and why (newer, primary,
  more specific).
- Watch dates: check that the information is current enough for the question, and say when
  it may have changed since.
- If a site needs a login, blocks you or shows a consent page you cannot pass, try another
  source instead of guessing what it says.
- Stop searching when further sources only repeat what you have; do not read the same page
  twice.
- Answer with the findings first, then the sources as a list of URLs. Separate what the
  sources state from your own inference, and never cite a page you did not open.
"""


def research(*, browser: BrowserTools | None = None) -> Skill:
    """The ``research`` skill, with the browser tools (headless Chromium).

    Args:
        browser: Browser tools to bundle; a new set (its own Chromium) if omitted.
            To share one browser with other skills of the agent, pass the same
            ``browser_tools()`` to each, and close it with ``aclose()`` when done.
    """
    return browsing_skill("research", _DESCRIPTION, _INSTRUCTIONS, browser)
