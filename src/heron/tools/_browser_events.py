"""What the browser tools publish while they work: events and their emitter.

Tool results reach the model only once a call is over; an application that
shows live progress subscribes to a :class:`BrowserInteraction` instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from ._events import Interaction

__all__ = [
    "BrowserClicked",
    "BrowserEvent",
    "BrowserInteraction",
    "BrowserNavigationFailed",
    "BrowserNavigationFinished",
    "BrowserNavigationStarted",
    "BrowserTyped",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class BrowserNavigationStarted:
    """``browser-navigate`` is about to load a URL."""

    url: str
    """The URL asked for."""


@dataclass(frozen=True, kw_only=True, slots=True)
class BrowserNavigationFinished:
    """A page finished loading (after ``browser-navigate``, or a click or submit that navigated)."""

    url: str
    """The page's URL once loaded (after any redirects)."""
    title: str
    """The page's title."""
    status: int | None
    """The HTTP status of the main document, when the browser fetched one."""


@dataclass(frozen=True, kw_only=True, slots=True)
class BrowserNavigationFailed:
    """The URL ``browser-navigate`` was loading did not load (what follows its start)."""

    url: str
    """The URL asked for."""
    error: str
    """Why, as the model is told (``could not load ...: net::ERR_CONNECTION_REFUSED``)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class BrowserClicked:
    """``browser-click`` clicked an element."""

    ref: str
    """The element's ref id."""
    element: str
    """How ``browser-read`` shows the element, e.g. ``button "Save"``."""
    url: str
    """The page URL after the click."""


@dataclass(frozen=True, kw_only=True, slots=True)
class BrowserTyped:
    """``browser-type`` entered text into an element."""

    ref: str
    """The element's ref id."""
    element: str
    """How ``browser-read`` shows the element, e.g. ``textbox "Email"``."""
    text: str
    """The text entered (a password field's text is replaced by asterisks)."""
    submitted: bool
    """Whether Enter was pressed afterwards."""
    url: str
    """The page URL after typing."""


BrowserEvent: TypeAlias = (
    BrowserNavigationStarted
    | BrowserNavigationFinished
    | BrowserNavigationFailed
    | BrowserClicked
    | BrowserTyped
)
"""Anything a :class:`BrowserInteraction` publishes."""


class BrowserInteraction(Interaction[BrowserEvent]):
    """Live progress of the browser tools: navigations, clicks and typing.

    Pass one to :func:`~heron.tools.browser_tools` (or read ``tools.interaction``)::

        interaction = BrowserInteraction()
        interaction.subscribe(lambda event: print(event))
        tools = browser_tools(interaction=interaction)
    """
