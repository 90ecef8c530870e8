"""Clients of a real daemon process (see ``tests/runtime/conftest.py`` for the daemon)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.runtime.conftest import Daemon, write_script

from heron.client import AsyncHeron, Heron

__all__ = ["Daemon", "write_script"]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """A daemon shared by a test module (each test gives its nodes their own script)."""
    home = tmp_path_factory.mktemp("heron-home")
    default = write_script(home, "default", ["Hello from the default script."])
    process = Daemon(home, {"HERON_PROVIDER": default}).start()
    try:
        yield process
    finally:
        process.stop()


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


@pytest.fixture
def scripts(tmp_path: Path) -> Any:
    """``scripts("name", [...steps])`` writes a script and returns its model spec."""

    def make(name: str, steps: list[Any]) -> str:
        return write_script(tmp_path, name, steps)

    return make
