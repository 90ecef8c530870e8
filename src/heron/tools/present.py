"""The present tools: hand a job's output files back, one by one or as one zip.

Both work under a root directory fixed when the tools are made, refuse paths
leading out of it, and leave build artifacts out (caches, virtual
environments, ``node_modules``, bytecode, VCS folders; see
:data:`ARTIFACT_DIRS` and :data:`ARTIFACT_FILES`), files that may hold secrets
(``.env``, ``.env.production``; see :data:`SECRET_FILES`) and the archives
``present-zip`` wrote before::

    agent = SimpleAgent(provider=provider, tools=present_tools("./project"))
"""

from __future__ import annotations

import os
import tempfile
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .._core import TextPart, ToolError, UserError
from ._artifacts import (
    ARCHIVE_MARK,
    ARTIFACT_DIRS,
    ARTIFACT_FILES,
    SECRET_FILES,
    SHAREABLE_SECRET_FILES,
    Selection,
    collect_files,
)
from ._context import ToolContext
from ._fs_paths import Workspace
from ._result import ToolResult
from ._tool import Tool

__all__ = [
    "ARTIFACT_DIRS",
    "ARTIFACT_FILES",
    "SECRET_FILES",
    "SHAREABLE_SECRET_FILES",
    "PresentFilesTool",
    "PresentZipTool",
    "present_tools",
]

# The text shows this many files and skipped entries; ``structured`` has them all.
_SHOWN = 200
_SHOWN_SKIPPED = 30

_PATHS = {
    "type": "array",
    "items": {"type": "string", "minLength": 1},
    "minItems": 1,
    "description": (
        "Files or directories relative to the root (default: the whole root). Directories "
        "are walked without build artifacts, .env files (they may hold secrets) and earlier "
        "present-zip archives; a file named here is always included."
    ),
}
_EXCLUDE = {
    "type": "array",
    "items": {"type": "string", "minLength": 1},
    "description": "Extra glob patterns to leave out, e.g. '*.tmp' or 'docs/drafts/*'.",
}

_FILES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"paths": _PATHS, "exclude": _EXCLUDE},
    "additionalProperties": False,
}
_ZIP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {
            "type": "string",
            "minLength": 1,
            "description": "Path of the zip to write, relative to the root (default: "
            "<root folder name>.zip). Must end in .zip.",
        },
        "paths": _PATHS,
        "exclude": _EXCLUDE,
        "overwrite": {
            "type": "boolean",
            "description": "Replace an existing file of that name (default false).",
        },
    },
    "additionalProperties": False,
}


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{n} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


class _PresentTool(Tool):
    """What both present tools share: the root, the options and the file walk."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        max_files: int = 10_000,
        hidden: Iterable[str | os.PathLike[str]] = (),
    ) -> None:
        if isinstance(max_files, bool) or not isinstance(max_files, int) or max_files < 1:
            raise UserError(f"max_files must be a positive integer, not {max_files!r}")
        self.workspace = Workspace(root, hidden)
        """Where the tool works: paths are confined to its root."""
        self.root = self.workspace.root
        """The directory the tool works under, resolved when the tool was made."""
        self.max_files = max_files
        """The most files one call may hand back."""
        super().__init__()

    def _select(self, arguments: dict[str, Any], leave_out: Path | None = None) -> Selection:
        selection = collect_files(
            self.workspace,
            arguments.get("paths") or ["."],
            exclude=arguments.get("exclude", ()),
            leave_out=leave_out,
            max_files=self.max_files,
        )
        if not selection.files:
            raise ToolError(
                "nothing to present: no files left after leaving out build artifacts"
                + _skipped_text(selection)
            )
        return selection

    def same_definition(self, other: Tool) -> bool:
        """Whether ``other`` is the same tool over the same root, with the same options."""
        return (
            type(other) is type(self)
            and isinstance(other, _PresentTool)
            and (other.root, other.max_files, other.workspace.hidden)
            == (self.root, self.max_files, self.workspace.hidden)
        )


def _file_lines(selection: Selection) -> list[str]:
    lines = [f"  {f.name}  ({_size(f.size)})" for f in selection.files[:_SHOWN]]
    if len(selection.files) > _SHOWN:
        lines.append(f"  ... and {len(selection.files) - _SHOWN} more")
    return lines


def _skipped_text(selection: Selection) -> str:
    if not selection.skipped:
        return ""
    shown = [f"  {name} ({reason})" for name, reason in selection.skipped[:_SHOWN_SKIPPED]]
    if len(selection.skipped) > _SHOWN_SKIPPED:
        shown.append(f"  ... and {len(selection.skipped) - _SHOWN_SKIPPED} more")
    return "\nLeft out:\n" + "\n".join(shown)


def _structured(root: Path, selection: Selection) -> dict[str, Any]:
    return {
        "root": str(root),
        "files": [{"path": f.name, "size": f.size} for f in selection.files],
        "total_size": selection.total_size,
        "skipped": [{"path": name, "reason": reason} for name, reason in selection.skipped],
    }


class PresentFilesTool(_PresentTool):
    """``present-files``: hand back output files individually, as paths and sizes."""

    name = "present-files"
    description = (
        "Hand the finished output back to the user as individual files: lists each file's "
        "path and size under the working directory. Build artifacts (caches, virtual "
        "environments, node_modules, bytecode, .git), .env files (they may hold secrets) "
        "and earlier present-zip archives are left out. Use when the user asked for a few "
        "files; use present-zip for a whole project."
    )
    input_schema: dict[str, Any] = _FILES_SCHEMA

    def execute(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """List the chosen files with their sizes."""
        selection = self._select(arguments)
        count = len(selection.files)
        head = (
            f"Presenting {count} file{'s' if count != 1 else ''} "
            f"({_size(selection.total_size)}) under {self.root}:"
        )
        text = "\n".join([head, *_file_lines(selection)]) + _skipped_text(selection)
        return ToolResult(
            content=(TextPart(text=text),), structured=_structured(self.root, selection)
        )


class PresentZipTool(_PresentTool):
    """``present-zip``: pack output files into one zip archive written under the root."""

    name = "present-zip"
    description = (
        "Hand the finished output back to the user as one zip archive written under the "
        "working directory. Build artifacts (caches, virtual environments, node_modules, "
        "bytecode, .git), .env files (they may hold secrets) and earlier present-zip "
        "archives are left out. Use for a project or many files."
    )
    input_schema: dict[str, Any] = _ZIP_SCHEMA

    def execute(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Write the zip and describe it."""
        requested = arguments.get("name") or f"{self.root.name or 'output'}.zip"
        if not requested.lower().endswith(".zip"):
            raise ToolError(f"the archive name must end in .zip, not {requested!r}")
        target = self.workspace.resolve(requested)
        if target.is_dir():
            raise ToolError(f"{requested!r} is a directory")
        if target.exists() and not arguments.get("overwrite", False):
            raise ToolError(
                f"{self.workspace.show(target)} already exists: pass overwrite=true to "
                "replace it, or choose another name"
            )
        selection = self._select(arguments, leave_out=target)
        _write_zip(target, selection)
        name, size = self.workspace.show(target), target.stat().st_size
        count = len(selection.files)
        head = (
            f"Wrote {name} ({_size(size)}): {count} file{'s' if count != 1 else ''}, "
            f"{_size(selection.total_size)} uncompressed:"
        )
        text = "\n".join([head, *_file_lines(selection)]) + _skipped_text(selection)
        structured = {"path": name, "size": size, **_structured(self.root, selection)}
        return ToolResult(content=(TextPart(text=text),), structured=structured)


def _write_zip(target: Path, selection: Selection) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    # Written aside and renamed: a failure halfway never leaves a broken archive
    # nor destroys the one it was meant to replace.
    fd, temp = tempfile.mkstemp(dir=target.parent, prefix=".present-", suffix=".zip")
    try:
        with (
            os.fdopen(fd, "wb") as out,
            zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as archive,
        ):
            archive.comment = ARCHIVE_MARK  # so the next walk knows it for ours
            for f in selection.files:
                try:
                    archive.write(f.path, f.name)
                except OSError as exc:
                    raise ToolError(f"cannot read {f.name}: {exc.strerror or exc}") from None
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def present_tools(
    root: str | os.PathLike[str],
    *,
    max_files: int = 10_000,
    hidden: Iterable[str | os.PathLike[str]] = (),
) -> list[Tool]:
    """``present-files`` and ``present-zip``, working under ``root``.

    ``root`` must be an existing directory; ``max_files`` bounds how many files
    one call may hand back. ``hidden`` paths inside ``root`` are as good as absent
    (as for :func:`filesystem_tools`): never presented nor zipped.
    """
    if isinstance(hidden, str | bytes | os.PathLike):
        raise UserError("hidden is a list of paths, not one path")
    hidden = tuple(hidden)
    return [
        PresentFilesTool(root, max_files=max_files, hidden=hidden),
        PresentZipTool(root, max_files=max_files, hidden=hidden),
    ]
