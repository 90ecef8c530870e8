"""The filesystem tools' workspace: paths confined to a root, text files in and out.

Every path a model passes is resolved against the root (symbolic links
followed, ``..`` applied) and refused unless the result is still inside it.
The check happens before each operation; a process racing the tools (swapping
a directory for a symlink between the check and the open) is beyond what a
path check can stop: run untrusted work in :class:`heron.mcp.Computer`'s
sandbox for that.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import secrets
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from .._core import ToolError, UserError

__all__ = ["SNIFF_BYTES", "Workspace", "is_binary"]

SNIFF_BYTES = 8192
"""How much of a file's start is read to tell text from binary."""


def is_binary(head: bytes) -> bool:
    """Whether a file starting with ``head`` is binary rather than UTF-8 text.

    A NUL byte, or bytes that cannot begin valid UTF-8 (a character cut at the
    end of ``head`` is allowed), mark binary data, as they do for git and grep.
    """
    if b"\0" in head:
        return True
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return True
    return False


class Workspace:
    """A directory the filesystem tools may touch, and nothing outside it."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        given = Path(root).expanduser()
        try:
            resolved = given.resolve(strict=True)
        except (FileNotFoundError, NotADirectoryError):
            raise UserError(f"filesystem root {str(root)!r} does not exist") from None
        except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop
            raise UserError(f"filesystem root {str(root)!r} cannot be used: {exc}") from None
        if not resolved.is_dir():
            raise UserError(f"filesystem root {str(root)!r} is not a directory")
        self.root = resolved
        """The root directory, resolved once when the tools were made."""
        self._locks: dict[Path, threading.Lock] = {}
        self._locks_guard = threading.Lock()

    def resolve(self, path: str) -> Path:
        """The real location of ``path`` (relative to the root, or absolute inside it).

        Raises :class:`ToolError` naming ``path`` when it is empty of meaning
        (NUL bytes) or leads outside the root, directly or through a symlink.
        """
        if "\0" in path:
            raise ToolError(f"path {path!r} contains a NUL byte")
        given = Path(path.strip() or ".")
        lexical = Path(os.path.normpath(self.root / given))
        if not _inside(lexical, self.root):
            raise ToolError(f"path {path!r} is outside the root directory; use a path inside it")
        try:
            real = Path(os.path.realpath(lexical, strict=False))
        except OSError as exc:  # a symlink loop on some Python versions
            raise ToolError(f"path {path!r} cannot be resolved: {exc.strerror or exc}") from None
        if not _inside(real, self.root):
            raise ToolError(
                f"path {path!r} leads outside the root directory through a symbolic link"
            )
        return real

    def show(self, path: Path) -> str:
        """``path`` as the model sees it: relative to the root, ``/``-separated."""
        relative = path.relative_to(self.root).as_posix()
        return "." if relative in ("", ".") else relative

    def contains(self, path: Path) -> bool:
        """Whether ``path``, with every symlink followed, lies inside the root."""
        try:
            return _inside(Path(os.path.realpath(path)), self.root)
        except OSError:
            return False

    @contextlib.contextmanager
    def locked(self, path: Path) -> Iterator[None]:
        """Hold the lock of ``path``: parallel edits of one file must not lose an update."""
        with self._locks_guard:
            lock = self._locks.setdefault(path, threading.Lock())
        with lock:
            yield

    def read_text(self, path: Path, shown: str) -> str:
        """The whole of a UTF-8 text file; clear errors for anything else."""
        data = self.read_bytes(path, shown)
        if is_binary(data[:SNIFF_BYTES]):
            raise ToolError(f"{shown!r} is a binary file, not text")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ToolError(
                f"{shown!r} is not UTF-8 text (invalid byte at offset {exc.start})"
            ) from None

    def read_bytes(self, path: Path, shown: str) -> bytes:
        """The bytes of the regular file ``path``."""
        with self.open_file(path, shown) as handle:
            return handle.read()

    def open_file(self, path: Path, shown: str) -> BinaryIO:
        """Open the regular file ``path`` for reading, or fail with a clear error."""
        if path.is_dir():
            raise ToolError(f"{shown!r} is a directory, not a file; list it with fs-list-directory")
        try:
            # O_NOFOLLOW: a symlink put in place since resolve() is refused, not
            # followed. O_NONBLOCK: opening a named pipe must not wait for a writer.
            flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
            fd = os.open(path, flags)
        except FileNotFoundError:
            raise ToolError(f"no such file: {shown!r}") from None
        except OSError as exc:
            raise ToolError(f"cannot read {shown!r}: {exc.strerror or exc}") from None
        handle = os.fdopen(fd, "rb")
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            handle.close()
            raise ToolError(f"{shown!r} is not a regular file")
        return handle

    def write_bytes(self, path: Path, shown: str, data: bytes) -> bool:
        """Replace ``path`` with ``data`` atomically; return whether it existed before.

        The data goes to a temporary file beside the target, is flushed to
        disk and then renamed over it: a reader sees the old content or the
        new, never a part, and a failed write leaves the old file as it was.
        Missing parent directories are created; the file keeps its mode.
        """
        if path.is_dir():
            raise ToolError(f"{shown!r} is a directory; give a file path to write")
        parent = path.parent
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise ToolError(f"cannot write {shown!r}: a parent path is a file") from None
        except OSError as exc:
            raise ToolError(f"cannot create the folder of {shown!r}: {exc.strerror}") from None
        try:
            mode: int | None = os.stat(path).st_mode & 0o7777
        except FileNotFoundError:
            mode = None
        except OSError as exc:
            raise ToolError(f"cannot write {shown!r}: {exc.strerror or exc}") from None
        # Created like any new file (0666 less the umask), unlike mkstemp's
        # private 0600; a replaced file keeps its own mode.
        temp = parent / f".{path.name}.{secrets.token_hex(6)}.heron-tmp"
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except OSError as exc:
            raise ToolError(f"cannot write {shown!r}: {exc.strerror or exc}") from None
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            if mode is not None:
                os.chmod(temp, mode)
            os.replace(temp, path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise ToolError(f"cannot write {shown!r}: {exc.strerror or exc}") from None
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
        return mode is not None


def _inside(path: Path, root: Path) -> bool:
    return path.is_relative_to(root)
