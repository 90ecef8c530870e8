"""The layer rules: which package of Heron may import which (ARCHITECTURE.md, "Layers").

The rules are import-linter contracts in ``pyproject.toml``; CI runs ``lint-imports``
after mypy, and this runs the same check so that the README's test command checks the
rules too.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "heron"


def contracts() -> list[dict[str, object]]:
    """The import-linter contracts as ``pyproject.toml`` states them."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    found: list[dict[str, object]] = config["tool"]["importlinter"]["contracts"]
    return found


def test_the_layer_contracts_hold() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run(
        [str(lint), "--config", str(ROOT / "pyproject.toml"), "--no-cache", "--no-logo"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Contracts: {len(contracts())} kept, 0 broken." in done.stdout


def test_every_package_of_heron_has_its_layer() -> None:
    # A new top-level package is placed deliberately, not left out of every rule.
    # (the runtime's own layers are a contract with containers, exhaustive by itself)
    (layers,) = [
        c["layers"] for c in contracts() if c["type"] == "layers" and "containers" not in c
    ]
    assert isinstance(layers, list)
    placed = {name.strip() for layer in layers for name in layer.split("|")}
    packages = {f"heron.{p.name}" for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert placed == packages
