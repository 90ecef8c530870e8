"""Jobs: long-running tool work a node started (background shell commands)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal, TypeAlias

from ._common import WireModel

__all__ = ["Job", "JobStatus"]

JobStatus: TypeAlias = Literal["running", "exited", "killed"]
"""Whether the job still runs, ended on its own, or was stopped (cancelled, ``bash-kill``,
its node settled, a signal)."""


class Job(WireModel):
    """A background command a node started with ``bash-start``, as ``GET …/jobs`` lists it.

    Its output is never shown here (it may hold anything the command printed): the
    node reads it with ``bash-read``; this only says how much there was.
    """

    job_id: str
    """The id ``bash-start`` returned to the node (``bash-1`` ...), unique within the node."""
    node_id: str
    """The node that started it."""
    command: str
    """The command line, as the model wrote it."""
    cwd: str
    """The absolute directory it started in."""
    pid: int
    """The shell's process id (also its process group id)."""
    status: JobStatus
    """Running, exited on its own, or killed."""
    children_running: bool = False
    """Its shell has ended but processes it started still run in its process group
    (a cancel stops them)."""
    exit_code: int | None
    """Its exit status once it exited normally, else ``None``."""
    signal: str | None
    """The signal that ended it (``SIGTERM`` ...), if one did."""
    started_at: datetime
    """When it started."""
    ended_at: datetime | None
    """When it ended, if it has."""
    output_lines: int
    """Lines it has written so far, stdout and stderr together (line breaks; a last line
    without one is not counted)."""
    output_chars: int
    """Characters in those lines (line breaks not counted)."""
