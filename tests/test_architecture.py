"""ARCHITECTURE.md stays true to the tree: its code map names every package, and every
source file it names exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "src" / "heron"
TEXT = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")

_PATH = re.compile(r"`((?:[\w.-]+/)*[\w.-]+\.(?:py|toml|md))`")


def _packages(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and (p / "__init__.py").exists())


def test_the_code_map_names_every_package() -> None:
    missing = [
        f"{where}{name}/"
        for where, folder in (("heron/", SOURCE), ("heron/runtime/", SOURCE / "runtime"))
        for name in _packages(folder)
        if f"`{name}/`" not in TEXT
    ]
    assert missing == [], f"ARCHITECTURE.md's code map does not name {missing}"


def _exists(path: str) -> bool:
    """A path with a folder is relative to the repository, ``src/heron`` or the runtime;
    a bare name (``_run.py`` in a package's entry) is some file of that name."""
    if "/" in path:
        return any((base / path).exists() for base in (ROOT, SOURCE, SOURCE / "runtime"))
    return (ROOT / path).exists() or any(SOURCE.rglob(path))


def test_every_file_it_names_exists() -> None:
    named = set(_PATH.findall(TEXT))
    assert len(named) > 20  # the pattern still finds the paths the document names
    missing = sorted(path for path in named if not _exists(path))
    assert missing == [], f"ARCHITECTURE.md names files that do not exist: {missing}"
