"""The process groups of running jobs, on disk, so a daemon that died can have them stopped.

A job runs in a session (a process group) of its own, so it outlives a daemon
that is SIGKILLed or crashes: a server a node started would hold its port for
good. The ledger (``$HERON_HOME/jobs.json``) records each job's group with the
start time of its leader (``/proc/<pid>/stat``, in clock ticks since boot); the
next daemon stops those groups before it serves anything. A group is taken to
be the job's only if a process in it started no earlier than the leader did —
Linux never hands a group's id to a new process while the group has members,
so a reused pid cannot be mistaken for it. Without ``/proc`` (not Linux)
nothing is recorded and nothing is stopped.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
from pathlib import Path

__all__ = ["JobLedger"]

log = logging.getLogger("heron.runtime")

_PROC = Path("/proc")


def _stat(pid: int) -> tuple[int, int] | None:
    """``(process group, start time)`` of ``pid``, or ``None`` if it is gone."""
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its end.
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[2]), int(fields[19])  # fields 5 (pgrp) and 22 (starttime)


class JobLedger:
    """The running jobs' process groups, kept in a file as they start and stop."""

    def __init__(self, path: Path) -> None:
        self.path = path
        """The file (``$HERON_HOME/jobs.json``)."""
        self._groups: dict[int, int] = {}  # pgid -> the leader's start time
        self.enabled = _PROC.is_dir()
        """Whether processes can be checked here (Linux's ``/proc``)."""

    def add(self, pgid: int) -> None:
        """Record a job's group (just started, so its leader is alive)."""
        found = _stat(pgid) if self.enabled else None
        if found is not None:
            self._groups[pgid] = found[1]
            self._save()

    def remove(self, pgids: list[int]) -> None:
        """Forget groups that were stopped (their shell was closed)."""
        if any(self._groups.pop(pgid, None) is not None for pgid in list(pgids)):
            self._save()

    def reap(self) -> int:
        """Stop (SIGKILL) the groups a previous daemon left running; how many there were."""
        try:
            recorded = json.loads(self.path.read_text())
        except FileNotFoundError:
            return 0
        except (OSError, ValueError) as exc:
            log.warning("ignoring the unreadable job ledger %s: %s", self.path, exc)
            recorded = {}
        stopped = 0
        for key, started in dict(recorded).items():
            pgid = int(key)
            if self.enabled and _group_lives(pgid, int(started)):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pgid, signal.SIGKILL)
                    stopped += 1
        if stopped:
            log.warning("stopped %d job(s) a previous daemon left running", stopped)
        self._groups.clear()
        self._save()
        return stopped

    def _save(self) -> None:
        # Whole or not at all: a daemon killed mid-write must leave a readable file.
        partial = self.path.with_name(self.path.name + ".tmp")
        partial.write_text(json.dumps({str(k): v for k, v in self._groups.items()}))
        os.replace(partial, self.path)


def _group_lives(pgid: int, started: int) -> bool:
    """Whether the group ``pgid`` whose leader started at ``started`` still has members."""
    leader = _stat(pgid)
    if leader is not None:
        return leader == (pgid, started)
    # The leader (the job's shell) exited; what it started may run on in its group.
    for entry in _PROC.iterdir():
        if entry.name.isdigit():
            found = _stat(int(entry.name))
            if found is not None and found[0] == pgid and found[1] >= started:
                return True
    return False
