"""Host files: peek, list and atomic write of absolute paths, as the daemon's user (no
sandbox). Each operation is blocking file I/O and runs in a worker thread."""

from __future__ import annotations

import base64
import binascii
import errno
import os
import posixpath
import stat
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from ... import api
from ..._core.files import write_bytes_atomically
from ..nodes import Feature, Kernel
from ..server import ApiError

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = [
    "DEFAULT_LIST",
    "DEFAULT_PEEK",
    "MAX_LIST",
    "MAX_PEEK",
    "MAX_WRITE",
    "WRITE_BODY_LIMIT",
    "Files",
    "check_path",
    "list_directory",
    "peek",
    "write",
]

MAX_PEEK = 1024 * 1024
"""The largest window a peek returns (bytes)."""
DEFAULT_PEEK = 256 * 1024
"""The window a peek returns when no ``limit`` is given."""
MAX_WRITE = 1024 * 1024
"""The largest content a write accepts, decoded (bytes)."""
WRITE_BODY_LIMIT = 6 * MAX_WRITE + 64 * 1024
"""The request body limit of ``POST /v1/files/write``: the JSON of any legal write fits,
even 1 MiB of control characters (6 bytes each as ``\\u0000``), so the route itself
refuses oversized content with ``413 file_too_large`` rather than the body limit."""
DEFAULT_LIST = 1000
"""Entries a list returns when no ``limit`` is given."""
MAX_LIST = 10_000
"""The most entries a list returns."""

_PATH_MAX = 4096


def check_path(raw: str, *, code: str = "invalid_path", what: str = "path") -> str:
    """``raw`` normalised, or ``422 code`` saying why it is not an absolute clean path."""
    reason = None
    if not raw:
        reason = "it is empty"
    elif "\0" in raw:
        reason = "it contains a NUL character"
    elif not raw.startswith("/"):
        reason = "it is relative: give an absolute path (starting with /)"
    elif ".." in raw.split("/"):
        reason = "it has a '..' component: give the path without it"
    elif len(raw.encode("utf-8", "surrogatepass")) > _PATH_MAX:
        reason = f"it is longer than {_PATH_MAX} bytes"
    if reason is not None:
        raise ApiError(422, code, f"{what} {raw!r} cannot be used: {reason}", {"path": raw})
    return "/" + posixpath.normpath(raw).lstrip("/")


def _os_error(exc: OSError, path: str) -> ApiError:
    """The answer to an ``OSError`` met at ``path``."""
    why = exc.strerror or str(exc)
    number = exc.errno
    if number == errno.ENOENT:
        return ApiError(404, "file_not_found", f"{path}: no such file or directory")
    if number == errno.ENOTDIR:
        return ApiError(404, "file_not_found", f"{path}: a parent of it is not a directory")
    if number in (errno.EACCES, errno.EPERM, errno.EROFS):
        return ApiError(403, "permission_denied", f"{path}: {why} (as the daemon's user)")
    if number in (errno.ELOOP, errno.ENAMETOOLONG):
        return ApiError(422, "invalid_path", f"{path}: {why}", {"path": path})
    if number == errno.EAGAIN:  # a file of /proc that waits for data (kmsg ...)
        return ApiError(422, "not_a_file", f"{path}: cannot be read without waiting")
    if number in (errno.EISDIR, errno.ENXIO):
        return ApiError(422, "not_a_file", f"{path}: not a regular file ({why})")
    if number in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return ApiError(507, "insufficient_storage", f"{path}: {why}")
    return ApiError(500, "file_error", f"{path}: {why}", {"errno": number})


def _modified(info: os.stat_result) -> datetime:
    """A file's modification time, to the microsecond (what a ``datetime`` holds)."""
    seconds, nanoseconds = divmod(info.st_mtime_ns, 1_000_000_000)
    return datetime.fromtimestamp(seconds, UTC) + timedelta(microseconds=nanoseconds // 1000)


def _shown(name: str) -> str:
    """A file name as JSON can carry it (bytes that are not UTF-8 become U+FFFD)."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _not_a_file(path: str, mode: int) -> ApiError:
    if stat.S_ISDIR(mode):
        return ApiError(422, "not_a_file", f"{path} is a directory (list it instead)")
    return ApiError(422, "not_a_file", f"{path} is not a regular file (a device, FIFO or socket)")


# -- peek --------------------------------------------------------------------


def _read_window(fd: int, offset: int, count: int) -> bytes:
    """Up to ``count`` bytes from ``offset`` (files of /proc hand them out a page a time)."""
    parts: list[bytes] = []
    got = 0
    while got < count:
        part = os.pread(fd, count - got, offset + got)
        if not part:
            break
        parts.append(part)
        got += len(part)
    return b"".join(parts)


def _encode(window: bytes, more: bool) -> tuple[bytes, str, api.FileEncoding]:
    """The bytes sent, their text and its encoding: a window that cuts a character at its
    end (the file going on) loses those bytes, which start the next window instead."""
    try:
        return window, window.decode("utf-8"), "utf-8"
    except UnicodeDecodeError as exc:
        cut = window[: exc.start]
        if more and exc.start >= len(window) - 3 and exc.start > 0:
            try:
                return cut, cut.decode("utf-8"), "utf-8"
            except UnicodeDecodeError:
                pass
    return window, base64.b64encode(window).decode("ascii"), "base64"


def peek(raw: str, offset: int, limit: int) -> api.FilePeek:
    """``limit`` bytes of the file at ``raw`` from ``offset``."""
    path = check_path(raw)
    try:
        # Refused before it is opened: opening a device can act (a watchdog starts, a tape
        # rewinds, a FIFO's writer is let go).
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise _not_a_file(path, info.st_mode)
        # Non-blocking: should it have become a FIFO since, opening must not wait.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise _os_error(exc, path) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _not_a_file(path, info.st_mode)
        try:
            # One byte more than asked tells whether the file goes on (sizes can lie: /proc).
            window = _read_window(fd, offset, limit + 1)
        except OSError as exc:
            raise _os_error(exc, path) from None
    finally:
        os.close(fd)
    more = len(window) > limit
    sent, content, encoding = _encode(window[:limit], more)
    return api.FilePeek(
        path=path,
        size=info.st_size,
        offset=offset,
        length=len(sent),
        content=content,
        encoding=encoding,
        truncated=more,
        next_offset=offset + len(sent) if more else None,
        modified_at=_modified(info),
    )


# -- list --------------------------------------------------------------------


def _kind(mode: int) -> api.FileEntryType:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "other"


def _entry(entry: os.DirEntry[str]) -> api.FileEntry | None:
    """One directory entry, or ``None`` if it vanished while being read."""
    try:
        info = entry.stat(follow_symlinks=False)
    except OSError:  # gone since the directory was read
        return None
    kind = _kind(info.st_mode)
    target: str | None = None
    target_type: api.FileTargetType | None = None
    if kind == "symlink":
        try:
            target = _shown(os.readlink(entry.path))
            target_type = _kind(os.stat(entry.path).st_mode)
        except OSError:
            target_type = "missing"
    return api.FileEntry(
        name=_shown(entry.name),
        type=kind,
        size=info.st_size if kind == "file" else None,
        modified_at=_modified(info),
        target=target,
        target_type=target_type,
    )


def list_directory(raw: str, limit: int, hidden: bool) -> api.FileList:
    """The entries of the directory at ``raw``: directories first, then by name."""
    path = check_path(raw)
    try:
        info = os.stat(path)
        if not stat.S_ISDIR(info.st_mode):
            raise ApiError(
                422,
                "not_a_directory",
                f"{path} is not a directory: read it instead "
                f"(heron files read {path}, or GET /v1/files/peek)",
            )
        with os.scandir(path) as scan:
            found = [
                entry
                for item in scan
                if (hidden or not item.name.startswith(".")) and (entry := _entry(item)) is not None
            ]
    except OSError as exc:
        raise _os_error(exc, path) from None
    found.sort(key=lambda entry: (entry.type != "directory", entry.name))
    return api.FileList(
        path=path, entries=found[:limit], total=len(found), truncated=len(found) > limit
    )


# -- write -------------------------------------------------------------------


def _decode(request: api.FileWriteRequest) -> bytes:
    """The bytes to write; ``422 invalid_content`` if ``content`` is not what it claims."""
    if request.encoding == "base64":
        try:
            return base64.b64decode(request.content, validate=True)
        except (binascii.Error, ValueError):
            message = "content is not valid base64 (encoding: base64)"
            raise ApiError(422, "invalid_content", message) from None
    try:
        return request.content.encode("utf-8")
    except UnicodeEncodeError:
        message = "content holds a lone surrogate (\\ud800-\\udfff): send bytes as base64"
        raise ApiError(422, "invalid_content", message) from None


def _umask() -> int:
    """The process umask, read without setting it (``os.umask`` would race other threads)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def _same_time(expected: datetime, actual: datetime) -> bool:
    if expected.tzinfo is None:
        expected = expected.replace(tzinfo=UTC)  # a time without a zone is taken as UTC
    return expected == actual


_WRITE_LOCKS = tuple(threading.Lock() for _ in range(64))
"""Writes to one file take turns: a file's lock is one of these, picked by its path."""


def _lock_for(target: Path) -> threading.Lock:
    return _WRITE_LOCKS[hash(os.fsencode(target)) % len(_WRITE_LOCKS)]


def write(request: api.FileWriteRequest) -> api.FileWritten:
    """Replace or create the file atomically (see the module docstring for the rules)."""
    path = check_path(request.path)
    data = _decode(request)
    if len(data) > MAX_WRITE:
        raise ApiError(
            413,
            "file_too_large",
            f"the content is {len(data)} bytes: a write takes at most {MAX_WRITE}; "
            "nothing was written",
            {"limit": MAX_WRITE, "size": len(data)},
        )
    target = Path(os.path.realpath(path))  # a symlink's target is written; the link stays
    try:
        with _lock_for(target):
            mode, owner, previous_ns = _existing(path, target, request)
            _parent(path, target.parent, request.create_parents)
            try:
                write_bytes_atomically(
                    target,
                    data,
                    mode=mode,
                    owner=owner,
                    exclusive=previous_ns is None and not request.overwrite,
                    newer_than_ns=previous_ns,
                )
            except FileExistsError:  # made since the check, by another process
                raise _exists(path) from None
            except OSError as exc:
                raise _write_error(exc, path, target) from None
            info = os.stat(target)
    except OSError as exc:
        raise _os_error(exc, path) from None
    return api.FileWritten(
        path=path, size=len(data), created=previous_ns is None, modified_at=_modified(info)
    )


def _exists(path: str) -> ApiError:
    return ApiError(409, "file_exists", f"{path} exists and overwrite is false")


def _write_error(exc: OSError, path: str, target: Path) -> ApiError:
    """A failed atomic write: its new file beside the target could not be made or
    moved into place. In a directory that exists, that is no missing file (``/proc``
    answers ENOENT to any new file): say what stops it."""
    if exc.errno in (errno.ENOENT, errno.EPERM, errno.EACCES, errno.EROFS, errno.EINVAL):
        if target.parent.is_dir():
            why = exc.strerror or str(exc)
            return ApiError(
                403,
                "permission_denied",
                f"{path} cannot be written: a write makes a new file in {target.parent} and "
                f"moves it into place, and that directory refused ({why}; a read-only or "
                "special file system such as /proc or /sys, or no write permission there)",
            )
    return _os_error(exc, path)


def _existing(
    path: str, target: Path, request: api.FileWriteRequest
) -> tuple[int, tuple[int, int] | None, int | None]:
    """The mode and owner the new file gets, and the modification time (ns) of the file
    it replaces (``None``: it is created); refuses writing over what must not be
    replaced."""
    try:
        info = os.stat(target)
    except (FileNotFoundError, NotADirectoryError):  # a parent that is a file: see _parent
        if request.expected_modified_at is not None:
            raise ApiError(
                409,
                "file_modified",
                f"{path} no longer exists (expected_modified_at was given): nothing was written",
                {"modified_at": None},
            ) from None
        return 0o666 & ~_umask(), None, None
    if not stat.S_ISREG(info.st_mode):
        raise _not_a_file(path, info.st_mode)
    if not request.overwrite:
        raise _exists(path)
    expected = request.expected_modified_at
    if expected is not None and not _same_time(expected, _modified(info)):
        raise ApiError(
            409,
            "file_modified",
            f"{path} changed since {expected.isoformat()}: nothing was written",
            # As the wire writes times elsewhere (what a peek answered).
            {"modified_at": _modified(info).isoformat().replace("+00:00", "Z")},
        )
    return stat.S_IMODE(info.st_mode), (info.st_uid, info.st_gid), info.st_mtime_ns


def _parent(path: str, parent: Path, create: bool) -> None:
    """Make sure the file's directory exists (creating it only if asked)."""
    try:
        info = os.stat(parent)
    except FileNotFoundError:
        if not create:
            raise ApiError(
                404,
                "file_not_found",
                f"the directory {parent} does not exist (create_parents: true makes it)",
                {"missing": str(parent)},
            ) from None
        parent.mkdir(parents=True, exist_ok=True)
        return
    if not stat.S_ISDIR(info.st_mode):
        message = f"{parent} (the parent of {path}) is not a directory"
        raise ApiError(422, "not_a_directory", message)


class Files(Feature):
    """Host files over HTTP: ``/v1/files/peek``, ``/v1/files/list``, ``/v1/files/write``."""

    body_limits = MappingProxyType({"/v1/files/write": WRITE_BODY_LIMIT})
    """A legal file write's JSON can be larger than the daemon's limit."""

    def __init__(self, kernel: Kernel) -> None:
        """Host files need nothing of the kernel."""

    def routes(self, app: FastAPI) -> None:
        """Serve the files routes."""
        from ._routes import add_files_routes  # (it imports this module)

        add_files_routes(app)
