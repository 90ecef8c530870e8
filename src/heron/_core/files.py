"""Writing a file so that a reader, or a crash, sees the old content or the new, never half."""

from __future__ import annotations

import errno
import os
import secrets
from pathlib import Path

__all__ = ["TEMPORARY_PREFIX", "write_bytes_atomically", "write_text_atomically"]

TEMPORARY_PREFIX = ".tmp-"
"""How the temporary files of a write in progress are named (then renamed or removed)."""


def write_text_atomically(path: Path, text: str, *, folder_mode: int = 0o777) -> None:
    """Write ``text`` to ``path`` (mode 0600) through a synced temporary file renamed over it.

    Missing parent folders are made with ``folder_mode``; the folder is synced
    after the rename too, or a crash could undo the write.
    """
    path.parent.mkdir(mode=folder_mode, parents=True, exist_ok=True)
    write_bytes_atomically(path, text.encode("utf-8"), mode=0o600)


def write_bytes_atomically(
    path: Path,
    data: bytes,
    *,
    mode: int,
    owner: tuple[int, int] | None = None,
    exclusive: bool = False,
    newer_than_ns: int | None = None,
) -> None:
    """Write ``data`` to ``path`` through a synced temporary file in its folder, renamed
    over it; the folder must exist.

    The file gets ``mode`` (and ``owner``'s uid and gid when given and allowed). On
    any failure the temporary file is removed and ``path`` keeps its old content.

    ``exclusive`` creates ``path`` only if nothing is there (the temporary file is
    hard-linked to it, which the kernel refuses atomically: ``FileExistsError``).
    ``newer_than_ns`` makes the new file's modification time later than that one (in
    nanoseconds since the epoch) by at least a microsecond: file times come from a
    coarse clock, and two writes within one tick would otherwise look unchanged to a
    check that compares them.
    """
    # 64 bytes of the name, not characters: 64 four-byte characters and the rest would
    # pass the 255-byte limit of a name that is legal itself.
    stem = os.fsdecode(os.fsencode(path.name)[:64])
    temporary = path.parent / f"{TEMPORARY_PREFIX}{stem}-{secrets.token_hex(4)}"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if owner is not None and owner != (os.getuid(), os.getgid()):
                try:
                    os.fchown(fd, *owner)
                except PermissionError:
                    pass  # not ours to give away: the file stays the writer's
            os.fchmod(fd, mode)  # after fchown, which may clear set-id bits
            if newer_than_ns is not None:
                _be_newer(fd, newer_than_ns)
            os.fsync(fd)
        finally:
            os.close(fd)
        if exclusive:
            _link_exclusively(temporary, path)
        else:
            os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def _be_newer(fd: int, than_ns: int) -> None:
    """Move the open file's modification time past ``than_ns`` (to the microsecond)."""
    info = os.fstat(fd)
    if info.st_mtime_ns // 1000 <= than_ns // 1000:
        os.utime(fd, ns=(info.st_atime_ns, (than_ns // 1000 + 1) * 1000))


def _link_exclusively(temporary: Path, path: Path) -> None:
    """Give the written ``temporary`` file the name ``path`` unless that name exists."""
    try:
        os.link(temporary, path)
    except OSError as exc:
        # A file system without hard links: a check, then a rename (not atomic
        # against other processes; a caller holding a lock keeps its own writers apart).
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EMLINK):
            raise
        if os.path.lexists(path):
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(path)) from None
        os.rename(temporary, path)
        return
    os.unlink(temporary)
