"""The closing mixins every package shares: ``with`` / ``async with`` close on the way out."""

from __future__ import annotations

import pytest

from heron._core.closing import AsyncClosing, Closing


class Held(Closing):
    def __init__(self) -> None:
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


class AsyncHeld(AsyncClosing):
    def __init__(self) -> None:
        self.closed = 0

    async def aclose(self) -> None:
        self.closed += 1


def test_with_closes_once_and_gives_the_object() -> None:
    with Held() as held:
        assert held.closed == 0
    assert isinstance(held, Held) and held.closed == 1


def test_with_closes_on_an_error_and_lets_it_through() -> None:
    held = Held()
    with pytest.raises(ValueError, match="boom"), held:
        raise ValueError("boom")
    assert held.closed == 1


async def test_async_with_closes_once_and_gives_the_object() -> None:
    async with AsyncHeld() as held:
        assert held.closed == 0
    assert isinstance(held, AsyncHeld) and held.closed == 1


async def test_async_with_closes_on_an_error_and_lets_it_through() -> None:
    held = AsyncHeld()
    with pytest.raises(ValueError, match="boom"):
        async with held:
            raise ValueError("boom")
    assert held.closed == 1
