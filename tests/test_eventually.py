"""``tests/support/polling.eventually``: the one wait every test uses must wait as long as
asked, return what satisfied it, and fail saying what it last saw."""

from __future__ import annotations

import itertools
import time

import pytest
from tests.support.polling import eventually, eventually_async, holds


def test_returns_the_first_value_that_satisfies_it() -> None:
    counter = itertools.count()
    assert eventually(lambda: next(counter), lambda n: n >= 3, interval=0) == 3
    values = iter([0, "", None, "found"])
    assert eventually(lambda: next(values), interval=0) == "found"


def test_a_probe_that_asserts_is_tried_again() -> None:
    calls = itertools.count(1)

    def probe() -> int:
        n = next(calls)
        assert n >= 3, f"only {n}"
        return n

    assert eventually(probe, interval=0) == 3


def test_a_timeout_names_the_wait_and_shows_the_last_value() -> None:
    counter = itertools.count()
    started = time.monotonic()
    with pytest.raises(AssertionError) as failed:
        eventually(lambda: next(counter), lambda n: n < 0, timeout=0.3, what="a negative")
    assert time.monotonic() - started >= 0.3  # never shorter than asked
    message = str(failed.value)
    assert message.startswith("a negative did not hold within 0.3 s; last value seen: ")
    last = int(message.rsplit(": ", 1)[1])
    assert last >= 1  # it kept probing


def test_a_timeout_shows_the_last_failed_check() -> None:
    def probe() -> int:
        raise AssertionError("the door is shut")

    with pytest.raises(AssertionError, match="last failed check: the door is shut"):
        eventually(probe, timeout=0.1, interval=0.01)


def test_other_errors_are_not_swallowed() -> None:
    def probe() -> int:
        raise KeyError("status")

    with pytest.raises(KeyError):
        eventually(probe, timeout=5)


async def test_the_async_flavour_awaits_coroutine_probes() -> None:
    counter = itertools.count()

    async def probe() -> int:
        return next(counter)

    assert await eventually_async(probe, lambda n: n == 2, interval=0) == 2
    with pytest.raises(AssertionError, match=r"the condition did not hold within 0\.1 s"):
        await eventually_async(lambda: False, timeout=0.1, interval=0.01)


def test_holds_probes_for_the_whole_while_and_returns_the_last_value() -> None:
    calls = itertools.count(1)
    began = time.monotonic()
    last = holds(lambda: next(calls), lambda n: n > 0, seconds=0.2, interval=0.01)
    assert time.monotonic() - began >= 0.2
    assert last > 5  # probed again and again, not once


def test_holds_fails_at_the_first_value_that_breaks_it() -> None:
    values = iter([True, True, False, True])
    began = time.monotonic()
    with pytest.raises(AssertionError, match=r"the flag stopped holding within 30 s: False"):
        holds(lambda: next(values), seconds=30, interval=0, what="the flag")
    assert time.monotonic() - began < 5
