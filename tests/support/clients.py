"""Heron's own clients on the shared daemon (``plugin.daemon``): the fixtures that
``tests/client`` and ``tests/cli`` take as ``client`` and ``aclient`` (their conftests import
them, so elsewhere ``client`` stays the plain HTTP client)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from heron.client import AsyncHeron, Heron

from .daemon import Daemon


@pytest.fixture
def client(daemon: Daemon) -> Iterator[Heron]:
    """The blocking client on the shared daemon's socket (never starts a daemon itself)."""
    with Heron(socket_path=daemon.socket, home=daemon.home, auto_start=False) as c:
        yield c


@pytest.fixture
async def aclient(daemon: Daemon) -> AsyncIterator[AsyncHeron]:
    """The asyncio client on the shared daemon's socket."""
    async with AsyncHeron(socket_path=daemon.socket, home=daemon.home, auto_start=False) as c:
        yield c
