"""Clients of a real daemon process (see ``tests/runtime/conftest.py`` for the daemon)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

# The runtime tests' daemon (a real process, one per test module) and script fixtures.
from tests.runtime.conftest import Daemon, daemon, scripts, write_script

from heron.client import AsyncHeron, Heron

__all__ = ["Daemon", "daemon", "scripts", "write_script"]


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
