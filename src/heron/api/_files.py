"""Host files (``/v1/files/peek``, ``/v1/files/list``, ``/v1/files/write``) and ``/v1/bash``.

Paths are absolute host paths, used as the daemon's user: no sandbox is promised.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from ._common import HOST_PATH_PATTERN, RequestModel, WireModel

__all__ = [
    "BashRequest",
    "BashResult",
    "FileEncoding",
    "FileEntry",
    "FileEntryType",
    "FileList",
    "FilePeek",
    "FileTargetType",
    "FileWriteRequest",
    "FileWritten",
]

FileEncoding = Literal["utf-8", "base64"]
"""How file content travels: as text, or as base64 of bytes that are not UTF-8."""

FileEntryType = Literal["file", "directory", "symlink", "other"]
"""What a directory entry is (a symlink is reported as itself, not as its target)."""

FileTargetType = Literal["file", "directory", "symlink", "other", "missing"]
"""What a symlink points at (``missing``: nothing, the link dangles)."""

_Path = Annotated[
    str,
    StringConstraints(max_length=4096),
    # Documented, but checked by the daemon: another answers 422 invalid_path.
    Field(json_schema_extra={"pattern": HOST_PATH_PATTERN}),
]


class FilePeek(WireModel):
    """``GET /v1/files/peek``: a window of a file's bytes."""

    path: str
    """The file, as normalised (absolute, no ``.`` or repeated ``/``)."""
    size: int
    """The file's size in bytes (``0`` for some files of ``/proc``, which still have content)."""
    offset: int
    """Where this window starts, in bytes."""
    length: int
    """How many bytes of the file this window holds."""
    content: str
    """The window's bytes: as text, or base64 (see ``encoding``)."""
    encoding: FileEncoding
    """``utf-8`` when the window is valid UTF-8, else ``base64``."""
    truncated: bool
    """Whether the file goes on after this window."""
    next_offset: int | None
    """The ``offset`` of the next window when ``truncated`` (a UTF-8 window never ends
    inside a character, so it may be a few bytes short of ``limit``), else ``None``."""
    modified_at: datetime
    """When the file last changed (microseconds; ``expected_modified_at`` takes it back)."""


class FileEntry(WireModel):
    """One entry of a directory."""

    name: str
    """Its name (undecodable bytes shown as U+FFFD)."""
    type: FileEntryType
    """``file``, ``directory``, ``symlink`` (not followed) or ``other`` (device, FIFO, socket)."""
    size: int | None
    """Bytes of a file; ``None`` for the other types."""
    modified_at: datetime
    """When it last changed (a symlink's own time, not its target's)."""
    target: str | None = None
    """Where a symlink points (as stored in the link); ``None`` for other types."""
    target_type: FileTargetType | None = None
    """What a symlink's target is (``missing`` for a dangling link); ``None`` otherwise."""


class FileList(WireModel):
    """``GET /v1/files/list``: a directory's entries, directories first, then by name."""

    path: str
    """The directory, as normalised."""
    entries: list[FileEntry]
    """Directories first, then every other entry; each group sorted by name (code points)."""
    total: int
    """Entries the directory holds (hidden ones counted only with ``hidden=true``)."""
    truncated: bool
    """Whether entries were left out to keep to ``limit``."""


class FileWriteRequest(RequestModel):
    """``POST /v1/files/write``: replace (or create) a file atomically.

    The new content goes to a temporary file in the same directory, is synced and
    renamed over the path: a reader sees the old content or the new, never part.
    A symlink is followed (its target is written and the link stays).
    """

    path: _Path
    """The file (absolute; no ``..``)."""
    content: str
    """The new content, encoded as ``encoding`` says (at most 1 MiB once decoded)."""
    encoding: FileEncoding = "utf-8"
    """``utf-8``: ``content`` is the text; ``base64``: it is base64 of the bytes."""
    create_parents: bool = False
    """Create missing parent directories (else a missing one answers 404)."""
    overwrite: bool = True
    """Replace an existing file (``False``: an existing one answers ``409 file_exists``)."""
    # Not strict: on the wire a time is an ISO 8601 string, which strict mode refuses.
    expected_modified_at: Annotated[datetime | None, Field(strict=False)] = None
    """Write only if the file still has this ``modified_at`` (as a peek gave it), else
    ``409 file_modified``: an edit does not clobber a change made since it read."""


class FileWritten(WireModel):
    """What ``POST /v1/files/write`` did."""

    path: str
    """The path written, as normalised (a symlink's path, not its target's)."""
    size: int
    """Bytes written."""
    created: bool
    """Whether the file did not exist before."""
    modified_at: datetime
    """The file's new ``modified_at``."""


class BashRequest(RequestModel):
    """``POST /v1/bash``: run one command with ``bash -c`` and wait for it."""

    command: Annotated[str, StringConstraints(min_length=1)]
    """The command line (``bash -c``)."""
    cwd: _Path
    """Its working directory: absolute, existing (required; never the daemon's own)."""
    timeout: Annotated[float, Field(gt=0, le=3600)] = 60
    """Seconds it may run (at most 3600); then it and every process it started are killed."""
    env: dict[str, str] | None = None
    """Variables set on top of the daemon's environment, which a command inherits less the
    daemon's own secrets (``HERON_TOKEN``, ``HERON_DATABASE_URL``, ``OPENAI_API_KEY`` and
    the other providers' keys); one given here is passed as given."""
    stdin: str | None = None
    """Text on its standard input (``None``: it reads end of file at once)."""


class BashResult(WireModel):
    """How a command ended; a non-zero exit is an answer, not an error."""

    exit_code: int | None
    """Its exit status; ``None`` when a signal ended it."""
    signal: str | None
    """The signal that ended it (``SIGKILL`` ...), else ``None``."""
    stdout: str
    """Its standard output, as UTF-8 (bytes that are not UTF-8 become U+FFFD), at most
    1 MiB; the rest was read and dropped."""
    stderr: str
    """Its standard error, the same way."""
    stdout_truncated: bool
    """Whether ``stdout`` was cut at the limit."""
    stderr_truncated: bool
    """Whether ``stderr`` was cut at the limit."""
    truncated: bool
    """Whether either stream was cut."""
    timed_out: bool
    """Whether it ran out of ``timeout`` and was killed (with everything it started)."""
    duration_ms: int
    """How long it ran, in milliseconds."""
