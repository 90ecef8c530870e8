"""The ``shopping`` skill: purchase advice from real listings, prices and reviews."""

from __future__ import annotations

from ..tools import Skill
from ..tools.browser import BrowserTools
from ._tools import browsing_skill

__all__ = ["shopping"]

_DESCRIPTION = (
    "Use this skill when the user wants help choosing or buying something: comparing products, "
    "finding where to buy, current prices and availability, or what reviewers and owners say."
)

_INSTRUCTIONS = """\
- First pin down what matters to the user: budget, must-have features, where they live
  (for shops and delivery), new or used, and any brand likes or dislikes. Ask only for what
  you cannot reasonably assume, and state the assumptions you make.
- Never recommend from memory alone: models, prices and stock change. Find real, current
  listings with browser-navigate and browser-read, and open product pages by their ref with
  browser-click.
- For each candidate, record the exact model name, price with currency, shop, the listing
  URL, availability and delivery cost, and the date you checked.
- Compare the same model across at least two shops where you can, and note when a low price
  comes from a marketplace seller, a refurbished unit or a different variant.
- Read reviews from several places (professional reviews and owner reviews) and summarise
  the recurring praise and complaints rather than quoting one opinion; be wary of reviews
  that look paid or copied.
- Use browser-screenshot when a price, a spec table or a rating is shown as an image.
- Shortlist two to four options that fit the requirements, with a clear pick for the user's
  priorities and what each alternative trades off.
- You advise; you do not buy. Never enter payment details, log in, or place an order, and
  say so if the user asks you to.
- Give every price and claim with its source URL, and say that prices can change.
"""


def shopping(*, browser: BrowserTools | None = None) -> Skill:
    """The ``shopping`` skill, with the browser tools (headless Chromium).

    ``browser`` works as for :func:`~heron.skills.research`.
    """
    return browsing_skill("shopping", _DESCRIPTION, _INSTRUCTIONS, browser)
