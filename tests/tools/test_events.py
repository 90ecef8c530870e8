"""The generic event emitter: order, sync and async listeners, unsubscribing, failing listeners."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import pytest

from heron import UserError
from heron.tools import Interaction


@dataclass(frozen=True)
class Tick:
    n: int


async def test_sync_and_async_listeners_get_every_event_in_order() -> None:
    interaction: Interaction[Tick] = Interaction()
    seen: list[tuple[str, int]] = []

    async def slow(event: Tick) -> None:
        seen.append(("async", event.n))

    interaction.subscribe(lambda e: seen.append(("sync", e.n)))
    interaction.subscribe(slow)
    for n in range(3):
        await interaction.emit(Tick(n))
    # Each event reaches every listener, in subscription order, before the next one.
    assert seen == [("sync", 0), ("async", 0), ("sync", 1), ("async", 1), ("sync", 2), ("async", 2)]


async def test_unsubscribe_stops_delivery_and_may_be_called_again() -> None:
    interaction: Interaction[Tick] = Interaction()
    seen: list[int] = []
    assert not interaction.has_listeners
    unsubscribe = interaction.subscribe(lambda e: seen.append(e.n))
    assert interaction.has_listeners
    await interaction.emit(Tick(1))
    unsubscribe()
    unsubscribe()
    await interaction.emit(Tick(2))
    assert seen == [1]
    assert not interaction.has_listeners


async def test_one_function_subscribed_twice_is_removed_once_per_unsubscribe() -> None:
    interaction: Interaction[Tick] = Interaction()
    seen: list[int] = []

    def listener(event: Tick) -> None:
        seen.append(event.n)

    first = interaction.subscribe(listener)
    interaction.subscribe(listener)
    await interaction.emit(Tick(1))
    first()
    await interaction.emit(Tick(2))
    assert seen == [1, 1, 2]


async def test_a_listener_may_unsubscribe_while_being_called() -> None:
    interaction: Interaction[Tick] = Interaction()
    seen: list[str] = []
    stop = interaction.subscribe(lambda e: (seen.append("once"), stop()) and None)
    interaction.subscribe(lambda e: seen.append("always"))
    await interaction.emit(Tick(1))
    await interaction.emit(Tick(2))
    assert seen == ["once", "always", "always"]


async def test_a_failing_listener_is_logged_and_the_others_still_hear(
    caplog: pytest.LogCaptureFixture,
) -> None:
    interaction: Interaction[Tick] = Interaction()
    seen: list[int] = []

    def broken(event: Tick) -> None:
        raise RuntimeError("listener bug")

    async def broken_async(event: Tick) -> None:
        raise ValueError("async listener bug")

    interaction.subscribe(broken)
    interaction.subscribe(broken_async)
    interaction.subscribe(lambda e: seen.append(e.n))
    with caplog.at_level(logging.ERROR, logger="heron.tools"):
        await interaction.emit(Tick(7))
    assert seen == [7]
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2
    assert "Tick(n=7)" in messages[0]
    assert [r.exc_info[1].args[0] for r in caplog.records if r.exc_info and r.exc_info[1]] == [
        "listener bug",
        "async listener bug",
    ]


def test_a_listener_must_be_callable() -> None:
    interaction: Interaction[Tick] = Interaction()
    with pytest.raises(UserError, match="callable"):
        interaction.subscribe("print")  # type: ignore[arg-type]
    assert not interaction.has_listeners
