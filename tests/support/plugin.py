"""The suite's shared fixtures (registered by ``tests/conftest.py``): a real daemon, an
HTTP client on it, scripted models, and a PostgreSQL server with a daemon on it.

``daemon`` and ``cluster`` are module-scoped: with ``--dist loadfile`` each test file
starts its own once. A directory's ``conftest.py`` (``tests/client``) or a test module may
define a fixture of the same name, which then wins there.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from . import pg
from .daemon import Daemon, write_script


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
def client(daemon: Daemon) -> Iterator[httpx.Client]:
    """An HTTP client on the shared daemon's socket."""
    with daemon.client() as c:
        yield c


@pytest.fixture
def scripts(tmp_path: Path) -> Any:
    """``scripts("name", [...steps])`` writes a script and returns its model spec."""

    def make(name: str, steps: list[Any]) -> str:
        return write_script(tmp_path, name, steps)

    return make


@pytest.fixture(scope="module")
def cluster() -> Iterator[pg.Cluster]:
    """One PostgreSQL server for the module (skipped only where it is not installed)."""
    if pg.bin_dir() is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql; CI installs it)")
    with pg.cluster() as server:
        yield server


@pytest.fixture(scope="module")
def pg_daemon(cluster: pg.Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """A daemon on its own PostgreSQL database (``heron_shared``), shared by the module."""
    home = tmp_path_factory.mktemp("heron-pg-home")
    url = cluster.create_database("heron_shared")
    default = write_script(home, "default", ["Hello from PostgreSQL."])
    process = Daemon(home, {"HERON_DATABASE_URL": url, "HERON_PROVIDER": default}).start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def pg_client(pg_daemon: Daemon) -> Iterator[httpx.Client]:
    """An HTTP client on the PostgreSQL daemon's socket."""
    with pg_daemon.client() as c:
        yield c
