"""``eventually``: wait for something to become true, and say what was seen when it did not.

Every wait in the suite goes through here instead of a hand-written ``while`` loop, and
so does every check that something stays true for a while (:func:`holds`). A probe
is called until it gives a truthy value (or, with ``until``, until ``until(value)`` holds);
a probe that raises ``AssertionError`` counts as "not yet" (so a probe may assert). The
last value or assertion is in the failure message, and a wait always probes once more
after its deadline, so a timeout is never shorter than the one asked for.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")

TIMEOUT = 30.0
"""The default wait: generous, since CI machines are slower than a laptop."""
INTERVAL = 0.05
"""The default pause between probes."""

_NOTHING: Any = object()


def _truthy(value: object) -> bool:
    return bool(value)


def _describe(probe: Callable[..., Any], what: str | None) -> str:
    if what:
        return what
    name = getattr(probe, "__name__", repr(probe))
    return "the condition" if name == "<lambda>" else name


def _failure(what: str, timeout: float, last: Any, error: AssertionError | None) -> AssertionError:
    seen = "nothing (every probe failed)" if last is _NOTHING else repr(last)
    if len(seen) > 2000:
        seen = seen[:2000] + "…"
    message = f"{what} did not hold within {timeout:g} s; last value seen: {seen}"
    if error is not None:
        message += f"; last failed check: {error}"
    return AssertionError(message)


def eventually(
    probe: Callable[[], T],
    until: Callable[[T], bool] = _truthy,
    *,
    timeout: float = TIMEOUT,
    interval: float = INTERVAL,
    what: str | None = None,
) -> T:
    """Call ``probe`` until ``until(value)`` holds (by default: until the value is truthy).

    Returns the value that satisfied it. A probe or ``until`` that raises
    ``AssertionError`` counts as not yet. After ``timeout`` seconds (and one last probe),
    raises ``AssertionError`` naming ``what`` and showing the last value seen.
    ``interval=0`` suits probes that block by themselves (a long poll).
    """
    deadline = time.monotonic() + timeout
    last: Any = _NOTHING
    error: AssertionError | None = None
    while True:
        try:
            last = probe()
            if until(last):
                return last
            error = None
        except AssertionError as exc:
            error = exc
        if time.monotonic() >= deadline:
            raise _failure(_describe(probe, what), timeout, last, error) from error
        time.sleep(interval)


async def eventually_async(
    probe: Callable[[], T | Awaitable[T]],
    until: Callable[[T], bool] = _truthy,
    *,
    timeout: float = TIMEOUT,  # noqa: ASYNC109 (a polling deadline, not a cancellation)
    interval: float = INTERVAL,
    what: str | None = None,
) -> T:
    """:func:`eventually` for a test's event loop: sleeps with ``asyncio.sleep``, and awaits
    ``probe``'s result when it is awaitable (a coroutine function works as a probe)."""
    deadline = time.monotonic() + timeout
    last: Any = _NOTHING
    error: AssertionError | None = None
    while True:
        try:
            value = probe()
            last = await value if inspect.isawaitable(value) else value
            if until(last):
                return last  # type: ignore[no-any-return]
            error = None
        except AssertionError as exc:
            error = exc
        if time.monotonic() >= deadline:
            raise _failure(_describe(probe, what), timeout, last, error) from error
        await asyncio.sleep(interval)


def holds(
    probe: Callable[[], T],
    until: Callable[[T], bool] = _truthy,
    *,
    seconds: float,
    interval: float = INTERVAL,
    what: str | None = None,
) -> T:
    """Call ``probe`` for ``seconds``, asserting that ``until(value)`` holds every time
    (by default: that the value stays truthy): the opposite of :func:`eventually`, for
    what must *not* happen within a while. Returns the last value; the first that breaks
    it fails the test at once, naming ``what`` and showing that value."""
    deadline = time.monotonic() + seconds
    while True:
        value = probe()
        if not until(value):
            raise AssertionError(
                f"{_describe(probe, what)} stopped holding within {seconds:g} s: {value!r}"
            )
        if time.monotonic() >= deadline:
            return value
        time.sleep(interval)
