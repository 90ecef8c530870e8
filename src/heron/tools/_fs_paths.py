"""The filesystem tools' workspace: paths confined to a root, text files in and out.

Every path a model passes is resolved against the root (symbolic links
followed, ``..`` applied) and refused unless the result is still inside it.
Files are then opened folder by folder from the root without following
links, so a process racing the tools (swapping a folder for a link leading
out between the check and the open) makes the call fail instead of escaping.
A search checks each file it opens by the kernel's name for it (on Linux).
Listings and globs only show names; for untrusted work that races the tools
on purpose, :class:`heron.mcp.Computer`'s sandbox is the stronger wall.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import os
import secrets
import stat
import threading
import weakref
from collections.abc import Iterable, Iterator
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
    """A directory the filesystem tools may touch, and nothing outside it (nor ``hidden``)."""

    def __init__(
        self, root: str | os.PathLike[str], hidden: Iterable[str | os.PathLike[str]] = ()
    ) -> None:
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
        self._prefix = str(resolved).rstrip("/") + "/"
        inside = {Path(os.path.realpath(path)) for path in hidden}
        self.hidden = tuple(sorted(p for p in inside if p != resolved and _inside(p, resolved)))
        """Paths inside the root the tools treat as absent (the root itself cannot be)."""

    def hides(self, path: str | Path) -> bool:
        """Whether ``path`` (a real path) is, or lies in, a hidden one."""
        return any(_inside(Path(path), hidden) for hidden in self.hidden)

    def resolve(self, path: str) -> Path:
        """The real location of ``path`` (relative to the root, or absolute inside it).

        Raises :class:`ToolError` naming ``path`` when it holds a NUL byte or
        leads outside the root, directly or through a symlink.
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
        if self.hidden and self.hides(real):
            raise ToolError(f"path {path!r} is not available to these tools")
        return real

    def show(self, path: Path) -> str:
        """``path`` as the model sees it: relative to the root, ``/``-separated."""
        relative = path.relative_to(self.root).as_posix()
        return "." if relative in ("", ".") else relative

    def contains(self, path: Path) -> bool:
        """Whether ``path``, with every symlink followed, lies inside the root."""
        try:
            real = Path(os.path.realpath(path))
        except OSError:
            return False
        return _inside(real, self.root) and not (self.hidden and self.hides(real))

    @contextlib.contextmanager
    def locked(self, path: Path) -> Iterator[None]:
        """Hold the lock of ``path``: parallel edits of one file must not lose an update.

        The locks are shared by every workspace of the process, keyed by the
        file's real path, so two equal sets of file tools (which an agent may
        register interchangeably) never edit one file at once either.
        """
        with _LOCKS_GUARD:
            lock = _LOCKS.get(path)
            if lock is None:
                lock = _LOCKS[path] = threading.Lock()
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
        """Open the regular file ``path`` (from :meth:`resolve`) for reading."""
        if path == self.root:
            raise ToolError(f"{shown!r} is a directory, not a file; list it with fs-list-directory")
        try:
            with self._folder(path.parent, create=False) as folder:
                # O_NONBLOCK: opening a named pipe must not wait for a writer.
                fd = os.open(path.name, os.O_RDONLY | _NOFOLLOW | _NONBLOCK, dir_fd=folder)
        except OSError as exc:
            raise _failure("read", shown, exc) from None
        kind = os.fstat(fd).st_mode
        if not stat.S_ISREG(kind):
            os.close(fd)
            if stat.S_ISDIR(kind):
                raise ToolError(
                    f"{shown!r} is a directory, not a file; list it with fs-list-directory"
                )
            raise ToolError(f"{shown!r} is not a regular file")
        return os.fdopen(fd, "rb")

    def open_found(self, path: str) -> BinaryIO:
        """Open a regular file a walk found, checking where the open really led.

        Cheaper than :meth:`open_file` for the thousands of files of a
        search: the file is opened by path, then the kernel's name for what
        was opened must lie inside the root (a folder swapped for a link
        since the walk passed it fails with ``EXDEV``).
        """
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(errno.EINVAL, "not a regular file", path)
            if _PROC_FD:
                opened = os.readlink(f"{_PROC_FD}/{fd}")
                if not opened.startswith(self._prefix):
                    raise OSError(errno.EXDEV, "outside the root directory", path)
                if self.hidden and self.hides(opened):
                    raise OSError(errno.EXDEV, "hidden from these tools", path)
        except BaseException:
            os.close(fd)
            raise
        return os.fdopen(fd, "rb")

    def write_bytes(self, path: Path, shown: str, data: bytes) -> bool:
        """Replace ``path`` (from :meth:`resolve`) with ``data`` atomically.

        The data goes to a temporary file beside the target, is flushed to
        disk and then renamed over it: a reader sees the old content or the
        new, never a part, and a failed write leaves the old file as it was.
        Missing parent folders are created; the file keeps its mode. Returns
        whether the file existed before.
        """
        if path == self.root:
            raise ToolError(f"{shown!r} is a directory; give a file path to write")
        try:
            with self._folder(path.parent, create=True) as folder:
                return _replace(folder, path.name, shown, data)
        except OSError as exc:
            raise _failure("write", shown, exc) from None

    @contextlib.contextmanager
    def _folder(self, folder: Path, *, create: bool) -> Iterator[int]:
        """A descriptor of ``folder``, opened name by name from the root.

        No name is followed if it is a symbolic link: :meth:`resolve` checked
        the path, and if a folder on it has since been swapped for a link
        leading out, the open fails (``ELOOP``) instead of following it.
        """
        fd = os.open(self.root, os.O_RDONLY | _DIRECTORY)
        try:
            for name in folder.relative_to(self.root).parts:
                try:
                    child = _open_folder(name, fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    with contextlib.suppress(FileExistsError):  # made by a parallel call
                        os.mkdir(name, 0o777, dir_fd=fd)
                    child = _open_folder(name, fd)
                os.close(fd)
                fd = child
            yield fd
        finally:
            os.close(fd)


# A lock lives while someone holds or waits for it, then leaves the table by itself.
_LOCKS: weakref.WeakValueDictionary[Path, threading.Lock] = weakref.WeakValueDictionary()
_LOCKS_GUARD = threading.Lock()

# Where Linux names each open descriptor's file; elsewhere the check is skipped.
_PROC_FD = "/proc/self/fd" if os.path.isdir("/proc/self/fd") else ""
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


def _open_folder(name: str, parent: int) -> int:
    try:
        return os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW, dir_fd=parent)
    except NotADirectoryError:
        # Linux says ENOTDIR for a symlink too: tell the two apart.
        if stat.S_ISLNK(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode):
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), name) from None
        raise


def _replace(folder: int, name: str, shown: str, data: bytes) -> bool:
    """Write ``data`` to ``name`` in the open ``folder`` through a renamed temporary file."""
    try:
        before: os.stat_result | None = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        before = None
    if before is not None and stat.S_ISDIR(before.st_mode):
        raise ToolError(f"{shown!r} is a directory; give a file path to write")
    if before is not None and stat.S_ISLNK(before.st_mode):
        # resolve() followed every link that leads somewhere: this one was
        # put in place since, or loops. Neither is written through or over.
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), name)
    # Created like any new file (0666 less the umask), unlike mkstemp's
    # private 0600; a replaced file keeps its own mode.
    temp = f".{name}.{secrets.token_hex(6)}.heron-tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o666, dir_fd=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if before is not None and stat.S_ISREG(before.st_mode):
                os.fchmod(handle.fileno(), stat.S_IMODE(before.st_mode))
            os.fsync(handle.fileno())
        os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=folder)
        raise
    with contextlib.suppress(OSError):  # the rename itself survives a crash
        os.fsync(folder)
    return before is not None


def _failure(verb: str, shown: str, exc: OSError) -> ToolError:
    if exc.errno == errno.ELOOP:
        return ToolError(
            f"cannot {verb} {shown!r}: the path changed while in use "
            "(a symbolic link appeared on it) or is a link loop"
        )
    if isinstance(exc, FileNotFoundError) and verb == "read":
        return ToolError(f"no such file: {shown!r}")
    if exc.errno == errno.ENOTDIR:
        return ToolError(f"cannot {verb} {shown!r}: a parent path is a file, not a folder")
    return ToolError(f"cannot {verb} {shown!r}: {exc.strerror or exc}")


def _inside(path: Path, root: Path) -> bool:
    return path.is_relative_to(root)
