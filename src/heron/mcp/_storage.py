"""Storage backends for tool state: on disk, and scoped to one environment."""

from __future__ import annotations

import asyncio
import os
import secrets
from pathlib import Path
from urllib.parse import quote, unquote

from .._core import UserError
from .._core.files import write_text_atomically
from ..tools import Storage

__all__ = ["FileStorage", "ScopedStorage"]

# Most file systems cap a name at 255 bytes; leave room for the temp-file suffix.
_MAX_NAME = 240


class FileStorage(Storage):
    """A :class:`Storage` keeping one file per key in a folder; survives restarts.

    Writes are atomic and durable: a value is written to a temporary file in
    the same folder, flushed to disk, renamed over the old one, and the
    folder itself is flushed, so a crash never leaves half a value nor loses
    a completed write. ``path`` defaults to a new randomly named folder under
    ``./data``; the folder is created on the first write, readable by its
    owner only (tool state may hold secrets).
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else Path("data") / secrets.token_hex(8)
        """The folder holding the values."""
        if self.path.exists() and not self.path.is_dir():
            raise UserError(f"FileStorage path {self.path} exists and is not a folder")

    def _file(self, key: str) -> Path:
        if not isinstance(key, str) or not key:
            raise UserError(f"storage keys are non-empty strings, not {key!r}")
        # Percent-encoding keeps every key a single, reversible, safe file name.
        name = quote(key, safe="")
        if name.startswith("."):
            name = "%2E" + name[1:]  # never a hidden or temporary file, never . or ..
        if len(name.encode()) > _MAX_NAME:
            raise UserError(f"storage key too long for a file name: {key[:60]!r}...")
        return self.path / name

    async def get(self, key: str) -> str | None:
        """The value under ``key``, or ``None``."""
        file = self._file(key)
        return await asyncio.to_thread(_read, file)

    async def set(self, key: str, value: str) -> None:
        """Store ``value`` under ``key`` atomically."""
        if not isinstance(value, str):
            raise UserError(f"storage values are strings, not {type(value).__name__}")
        file = self._file(key)
        await asyncio.to_thread(write_text_atomically, file, value, folder_mode=0o700)

    async def delete(self, key: str) -> None:
        """Remove ``key`` (no error if absent)."""
        await asyncio.to_thread(self._file(key).unlink, missing_ok=True)

    async def keys(self, prefix: str = "") -> list[str]:
        """Every key starting with ``prefix``, sorted."""
        return await asyncio.to_thread(self._keys, prefix)

    def _keys(self, prefix: str) -> list[str]:
        try:
            names = os.listdir(self.path)
        except FileNotFoundError:
            return []
        # Temporary files of writes in progress start with "." and are no keys.
        found = (unquote(n) for n in names if not n.startswith("."))
        return sorted(k for k in found if k.startswith(prefix))


def _read(file: Path) -> str | None:
    try:
        return file.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


class ScopedStorage(Storage):
    """A view of another :class:`Storage` under a key prefix: one environment's share."""

    def __init__(self, storage: Storage, prefix: str) -> None:
        self.storage = storage
        """The storage underneath."""
        self.prefix = prefix
        """Prepended to every key."""

    async def get(self, key: str) -> str | None:
        """The value under ``prefix + key``, or ``None``."""
        return await self.storage.get(self.prefix + key)

    async def set(self, key: str, value: str) -> None:
        """Store ``value`` under ``prefix + key``."""
        await self.storage.set(self.prefix + key, value)

    async def delete(self, key: str) -> None:
        """Remove ``prefix + key``."""
        await self.storage.delete(self.prefix + key)

    async def keys(self, prefix: str = "") -> list[str]:
        """This view's keys starting with ``prefix``, without the view's own prefix."""
        found = await self.storage.keys(self.prefix + prefix)
        return [k[len(self.prefix) :] for k in found]
