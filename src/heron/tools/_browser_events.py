"""What the browser tools publish while they work: events and their emitter.

Tool results reach the model only once a call is over; an application that
shows live progress subscribes to a :class:`BrowserInteraction` instead.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeAlias, TypeVar

__all__ = [
    "BrowserClicked",
    "BrowserEvent",
    "BrowserInteraction",
    "BrowserNavigationFinished",
    "BrowserNavigationStarted",
    "BrowserTyped",
    "Interaction",
]

_log = logging.getLogger("heron.tools")

E = TypeVar("E")


class Interaction(Generic[E]):
    """A typed event emitter: listeners subscribe, tools emit.

    Listeners may be plain functions or coroutine functions; they run in
    subscription order and are awaited before the tool goes on. A listener that
    raises is logged and skipped: watching a tool can never break it::

        seen = []
        unsubscribe = interaction.subscribe(seen.append)
        ...
        unsubscribe()
    """

    def __init__(self) -> None:
        self._listeners: list[Callable[[E], object]] = []

    def subscribe(self, callback: Callable[[E], Awaitable[object] | object]) -> Callable[[], None]:
        """Call ``callback`` with every event from now on; returns the function that stops it."""
        if not callable(callback):
            raise TypeError(f"an event listener must be callable, not {callback!r}")
        entry: Callable[[E], object] = callback
        self._listeners.append(entry)

        def unsubscribe() -> None:
            # By identity, so one function subscribed twice is removed once per call.
            for i, listener in enumerate(self._listeners):
                if listener is entry:
                    del self._listeners[i]
                    return

        return unsubscribe

    async def emit(self, event: E) -> None:
        """Hand ``event`` to every listener; failures are logged, never raised."""
        for listener in list(self._listeners):
            try:
                outcome = listener(event)
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception:
                _log.exception("event listener %r failed on %r", listener, event)


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
    BrowserNavigationStarted | BrowserNavigationFinished | BrowserClicked | BrowserTyped
)
"""Anything a :class:`BrowserInteraction` publishes."""


class BrowserInteraction(Interaction[BrowserEvent]):
    """Live progress of the browser tools: navigations, clicks and typing.

    Pass one to :func:`~heron.tools.browser_tools` (or read ``tools.interaction``)::

        interaction = BrowserInteraction()
        interaction.subscribe(lambda event: print(event))
        tools = browser_tools(interaction=interaction)
    """
