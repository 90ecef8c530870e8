"""Settings for the whole suite: how many pytest-xdist workers ``-n auto`` starts, and the
shared fixtures of ``tests/support``."""

from __future__ import annotations

import os

import pytest

pytest.register_assert_rewrite("tests.support")

pytest_plugins = ["tests.support.plugin"]

WORKERS_PER_CORE = 2
"""Most tests wait on a daemon, a server or a subprocess rather than on the CPU: run alone,
the suite kept a 2-core machine at a load average under 1, so two workers per core."""


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto`` (the default, see ``pyproject.toml``): workers for this machine's cores.

    ``PYTEST_XDIST_AUTO_NUM_WORKERS`` overrides it, as pytest-xdist documents.
    """
    override = os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS")
    if override:
        return int(override)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return WORKERS_PER_CORE * (cores or 1)
