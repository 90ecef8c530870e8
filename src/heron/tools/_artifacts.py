"""Choosing the files worth handing back: a walk under a root that leaves out build artifacts."""

from __future__ import annotations

import fnmatch
import os
import stat
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .._core import ToolError
from ._fs_paths import Workspace

__all__ = [
    "ARCHIVE_MARK",
    "ARTIFACT_DIRS",
    "ARTIFACT_FILES",
    "SECRET_FILES",
    "SHAREABLE_SECRET_FILES",
    "FoundFile",
    "Selection",
    "collect_files",
]

ARTIFACT_DIRS = frozenset(
    {
        # Version control.
        ".git", ".hg", ".svn",
        # Python: bytecode, virtual environments, tool caches, packaging output.
        "__pycache__", ".venv", "venv", ".tox", ".nox", ".eggs", ".pytest_cache",
        ".mypy_cache", ".ruff_cache", ".hypothesis", "htmlcov", "build", "dist",
        # JavaScript: dependencies and bundler caches.
        "node_modules", ".next", ".nuxt", ".svelte-kit", ".turbo", ".parcel-cache", ".cache",
        # Other toolchains and editors.
        ".gradle", ".idea", ".vscode",
    }
)  # fmt: skip
"""Directory names skipped when walking a directory."""

ARTIFACT_FILES = (
    "*.pyc", "*.pyo", "*.egg-info", ".coverage", ".coverage.*", "*.tsbuildinfo",
    ".DS_Store", "Thumbs.db", "*.swp",
)  # fmt: skip
"""File name patterns skipped as build artifacts when walking a directory."""

SECRET_FILES = (".env", ".env.*", "*.env")
"""File name patterns skipped when walking a directory because they may hold secrets
(``.env``, ``.env.production``, ``prod.env`` ...), unless in :data:`SHAREABLE_SECRET_FILES`."""

SHAREABLE_SECRET_FILES = (".env.example", ".env.sample", ".env.template", ".env.dist")
"""Templates of secret files, meant to be shared: these are kept."""

ARCHIVE_MARK = b"heron present-zip"
"""The comment ``present-zip`` writes into its archives, so a later walk leaves them out."""


@dataclass(frozen=True, kw_only=True, slots=True)
class FoundFile:
    """One file chosen for handing back."""

    path: Path
    """Its real location."""
    name: str
    """Its path relative to the root, with forward slashes."""
    size: int
    """Its size in bytes."""


@dataclass(kw_only=True, slots=True)
class Selection:
    """What a walk chose and what it left out."""

    files: list[FoundFile] = field(default_factory=list)
    """The files, sorted by name."""
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """``(name, reason)`` for every file or directory left out."""

    @property
    def total_size(self) -> int:
        """Bytes in all the files."""
        return sum(f.size for f in self.files)


def _is_artifact_dir(entry: Path) -> str | None:
    if entry.name in ARTIFACT_DIRS or entry.name.endswith(".egg-info"):
        return "build artifact or cache"
    # A virtual environment under any name carries pyvenv.cfg; cache folders
    # (Rust's target/, ...) carry the standard CACHEDIR.TAG.
    if (entry / "pyvenv.cfg").is_file():
        return "virtual environment"
    if (entry / "CACHEDIR.TAG").is_file():
        return "build artifact or cache"
    return None


def _matches(name: str, relative: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatch(name, p) or fnmatch.fnmatch(relative, p) for p in patterns)


def _left_out(entry: Path, name: str) -> str | None:
    """Why a file met while walking a directory stays out, or ``None``."""
    if _matches(entry.name, name, ARTIFACT_FILES):
        return "build artifact or cache"
    if fnmatch.fnmatch(entry.name, ".present-*.zip"):
        return "an archive present-zip is writing"
    if _matches(entry.name, name, SECRET_FILES) and entry.name not in SHAREABLE_SECRET_FILES:
        return "may hold secrets"
    if entry.name.lower().endswith(".zip") and _archive_comment(entry) == ARCHIVE_MARK:
        return "an archive present-zip wrote before"
    return None


def _archive_comment(path: Path) -> bytes | None:
    try:
        with zipfile.ZipFile(path) as archive:
            return archive.comment
    except (OSError, zipfile.BadZipFile):
        return None  # not a zip after all, or unreadable: taking it fails clearly later


def collect_files(
    workspace: Workspace,
    paths: Sequence[str],
    *,
    exclude: Sequence[str] = (),
    leave_out: Path | None = None,
    max_files: int = 10_000,
) -> Selection:
    """The files under ``paths`` (relative to the workspace root), without build artifacts.

    A file named directly is always taken; artifacts, files that may hold
    secrets and archives ``present-zip`` wrote are left out only while walking
    a directory. ``exclude`` holds extra glob patterns (matched against
    names and root-relative paths); ``leave_out`` is one more file to skip (the
    zip being written). Symlinks are followed only when they stay inside the root.
    """
    chosen: dict[Path, FoundFile] = {}
    selection = Selection()

    def take(path: Path, name: str) -> None:
        if path == leave_out or path in chosen:
            return
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            selection.skipped.append((name, "not a regular file"))
            return
        if len(chosen) >= max_files:
            raise ToolError(
                f"more than {max_files} files to present: name narrower paths or exclude more"
            )
        chosen[path] = FoundFile(path=path, name=name, size=info.st_size)

    for requested in paths:
        target = workspace.resolve(requested)
        if not target.exists():
            raise ToolError(f"no such file or directory: {requested!r}")
        if target.is_dir():
            _walk(workspace, target, exclude, take, selection)
        else:
            take(target, workspace.show(target))
    selection.files = sorted(chosen.values(), key=lambda f: f.name)
    return selection


def _walk(
    workspace: Workspace,
    top: Path,
    exclude: Sequence[str],
    take: Callable[[Path, str], None],
    selection: Selection,
) -> None:
    for folder, dirs, files in os.walk(top):
        here = Path(folder)
        kept: list[str] = []
        for d in sorted(dirs):
            entry = here / d
            name = workspace.show(entry)
            if workspace.hidden and workspace.hides(entry):
                continue  # as if it were not there (the daemon's home)
            if entry.is_symlink():
                # Never followed: it could loop, or lead out of the root.
                selection.skipped.append((name + "/", "symlinked directory, not followed"))
            elif reason := _is_artifact_dir(entry):
                selection.skipped.append((name + "/", reason))
            elif _matches(d, name, exclude):
                selection.skipped.append((name + "/", "excluded"))
            else:
                kept.append(d)
        dirs[:] = kept  # os.walk descends only into what is left here
        for f in sorted(files):
            entry = here / f
            name = workspace.show(entry)
            if workspace.hidden and workspace.hides(entry):
                continue
            if reason := _left_out(entry, name):
                selection.skipped.append((name, reason))
            elif _matches(f, name, exclude):
                selection.skipped.append((name, "excluded"))
            elif entry.is_symlink():
                real = entry.resolve()
                if not real.exists():
                    selection.skipped.append((name, "broken symlink"))
                elif not workspace.contains(real):
                    selection.skipped.append((name, "symlink leading outside the root"))
                else:
                    take(real, name)
            else:
                take(entry, name)
