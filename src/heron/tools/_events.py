"""Typed event emitters: how tools publish live progress to whoever listens.

An agent's stream carries the model's words, not a tool's progress: a tool
that has progress to show (a command's output lines, a page loading) publishes
it on an :class:`Interaction` instead, and a UI subscribes there.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Generic, TypeAlias, TypeVar

from .._core import UserError

__all__ = ["Interaction", "Listener"]

E = TypeVar("E")

Listener: TypeAlias = Callable[[E], Awaitable[None] | None]
"""A function called with each event; sync, or async (awaited before the next event)."""

logger = logging.getLogger("heron.tools")


class _Subscription(Generic[E]):
    # A wrapper per subscribe() call, so one function subscribed twice gets two
    # deliveries and each unsubscribe removes exactly its own.
    __slots__ = ("listener",)

    def __init__(self, listener: Listener[E]) -> None:
        self.listener = listener


class Interaction(Generic[E]):
    """An event emitter for one kind of event ``E`` (frozen dataclasses, by convention).

    Listeners run in the order they subscribed, each event delivered to all of
    them before the next is published. A listener may be sync or async; an
    async one is awaited, so a slow listener slows the tool that publishes
    (which keeps events in order and memory bounded). A listener that raises is
    logged on the ``heron.tools`` logger and never breaks the tool::

        interaction = BashInteraction()
        unsubscribe = interaction.subscribe(lambda event: print(event))
        tools = bash_tools(interaction=interaction)
        ...
        unsubscribe()
    """

    def __init__(self) -> None:
        self._subscriptions: list[_Subscription[E]] = []

    def subscribe(self, listener: Listener[E]) -> Callable[[], None]:
        """Call ``listener`` with every event from now on; returns the function that stops it.

        The returned function may be called any number of times.
        """
        if not callable(listener):
            raise UserError(f"an event listener must be callable, not {listener!r}")
        subscription = _Subscription(listener)
        self._subscriptions.append(subscription)

        def unsubscribe() -> None:
            # Identity, not equality: the list may hold other wrappers of the same function.
            self._subscriptions = [s for s in self._subscriptions if s is not subscription]

        return unsubscribe

    @property
    def has_listeners(self) -> bool:
        """Whether anyone is subscribed (publishers skip building events otherwise)."""
        return bool(self._subscriptions)

    async def emit(self, event: E) -> None:
        """Deliver ``event`` to every listener; a listener's failure is logged, not raised."""
        # A snapshot: a listener may subscribe or unsubscribe while it is being called.
        for subscription in tuple(self._subscriptions):
            try:
                outcome = subscription.listener(event)
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception:
                logger.exception(
                    "%s listener %r failed on %r", type(self).__name__, subscription.listener, event
                )

    def __repr__(self) -> str:
        return f"<{type(self).__name__} with {len(self._subscriptions)} listener(s)>"
