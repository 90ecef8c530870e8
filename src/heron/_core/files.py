"""Writing a file so that a reader, or a crash, sees the old content or the new, never half."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["write_text_atomically"]


def write_text_atomically(path: Path, text: str, *, folder_mode: int = 0o777) -> None:
    """Write ``text`` to ``path`` through a synced temporary file renamed over it.

    Missing parent folders are made with ``folder_mode``; the folder is synced
    after the rename too, or a crash could undo the write.
    """
    path.parent.mkdir(mode=folder_mode, parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)
