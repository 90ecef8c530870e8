"""The CLI tests take Heron's blocking client as ``client`` (the daemon and scripts fixtures
come from ``tests/support/plugin.py``); a module whose commands reach the shared daemon
uses ``on_daemon`` (``pytestmark = pytest.mark.usefixtures("on_daemon")``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.support.clients import client
from tests.support.daemon import Daemon

__all__ = ["client"]


@pytest.fixture
def on_daemon(daemon: Daemon, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The CLI reaches the shared daemon through ``HERON_HOME``, from a fresh directory."""
    for variable in ("HERON_BASE_URL", "HERON_SOCKET", "HERON_TOKEN", "FORCE_COLOR"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HERON_HOME", str(daemon.home))
    monkeypatch.setenv("COLUMNS", "160")
    monkeypatch.chdir(tmp_path)
