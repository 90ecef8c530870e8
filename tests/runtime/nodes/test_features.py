"""The kernel's view of features: the registry, its hooks, and the daemon's feature order."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

import heron.runtime
from heron.runtime.daemon import FEATURES
from heron.runtime.nodes._feature import Feature, Features

RUNTIME = Path(heron.runtime.__file__).parent

FEATURE_PACKAGES = sorted(
    p.name for p in RUNTIME.iterdir() if (p / "_service.py").exists() and p.name != "nodes"
)


class _Quiet(Feature):
    pass


class _Settles(Feature):
    async def settled(self, node_id: str, outcome: dict[str, Any]) -> None:
        return None


def test_a_feature_is_found_by_its_class_and_registered_once() -> None:
    features = Features()
    quiet, settles = _Quiet(), _Settles()
    features.add(quiet)
    features.add(settles)
    assert features.get(_Settles) is settles
    assert list(features) == [quiet, settles]
    assert list(reversed(features)) == [settles, quiet]
    with pytest.raises(ValueError, match="registered already"):
        features.add(_Quiet())
    with pytest.raises(LookupError, match="no Feature feature"):
        Features().get(Feature)


def test_only_the_features_implementing_a_hook_are_called_for_it() -> None:
    features = Features()
    features.add(_Quiet())
    settles = _Settles()
    features.add(settles)
    assert features.having("settled") == [settles]
    assert features.having("released") == []
    later = type("_Later", (_Settles,), {})()
    features.add(later)  # the answer is worked out again once another is added
    assert features.having("settled") == [settles, later]


def _names() -> list[str]:
    return [getattr(make, "__qualname__", repr(make)).split(".")[0] for make in FEATURES]


def test_the_daemon_starts_and_stops_its_features_in_the_documented_order() -> None:
    names = _names()
    assert len(set(names)) == len(names) == len(FEATURE_PACKAGES) == 16
    # the shell reaps (jobs use its ledger), then the default model loads, before the
    # warm pool discards old nodes; profiles need kinds; human feeds the canvas;
    # orchestration resumes before human.
    assert names[0] == "Commands"
    assert names.index("Jobs") < names.index("Models") < names.index("WarmPool")
    assert names.index("Kinds") < names.index("Profiles")
    assert names.index("Canvas") < names.index("Human")
    assert names.index("Canvas") < names.index("Page")  # the page shows the canvas
    assert names.index("Commands") < names.index("Orchestration") < names.index("Human")
    # tools in the order a node is offered them (child tools, push-report; ask, memory, cron)
    assert names.index("Orchestration") < names.index("Reports")
    assert names.index("Human") < names.index("Memory") < names.index("Crons")
    assert names[-1] == "Crons"  # starts last, stops first


def _imported(path: Path) -> set[str]:
    """The runtime packages ``path`` imports (``from ..crons import …`` → ``crons``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 2:
            if node.module is not None:
                found.add(node.module.split(".")[0])
            else:
                found.update(alias.name for alias in node.names)
    return found


KERNEL = ("nodes", "events", "server", "db")


@pytest.mark.parametrize(
    "module",
    sorted(str(p.relative_to(RUNTIME)) for k in KERNEL for p in (RUNTIME / k).glob("*.py")),
)
def test_the_kernel_names_no_feature(module: str) -> None:
    # Features are registered with the kernel; it knows them only as Feature objects.
    # The daemon's process takes the list of features from the runtime's top level.
    named = _imported(RUNTIME / module) & set(FEATURE_PACKAGES)
    assert named == set(), f"{module} names {sorted(named)}"


def test_no_feature_imports_another_features_private_module() -> None:
    breaches = []
    for package in FEATURE_PACKAGES:
        for path in (RUNTIME / package).glob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if not (isinstance(node, ast.ImportFrom) and node.level == 2 and node.module):
                    continue
                parts = node.module.split(".")
                other = parts[0]
                if other in FEATURE_PACKAGES and other != package and len(parts) > 1:
                    breaches.append(f"{package}/{path.name}: {node.module}")
    assert breaches == []
