"""The process groups of the commands the daemon runs (node jobs, ``/v1/bash``), on disk
(``$HERON_HOME/jobs.json``), so a daemon that died can have them stopped by the next
(ARCHITECTURE.md, jobs and shell)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
from pathlib import Path

__all__ = ["JobLedger", "group_lives", "start_ticks"]

log = logging.getLogger("heron.runtime")

_PROC = Path("/proc")


def _identity() -> dict[str, str]:
    """This boot's id and this pid namespace's inode (what pids and start times mean here)."""
    try:
        boot = (_PROC / "sys/kernel/random/boot_id").read_text().strip()
        namespace = str(os.stat(_PROC / "self/ns/pid").st_ino)
    except OSError:
        return {}
    return {"boot_id": boot, "pid_namespace": namespace}


def start_ticks(pgid: int) -> int | None:
    """When the group ``pgid``'s leader started (clock ticks since boot), ``None`` if the
    group is gone. A leader that already exited (a shell that started something in the
    background and left) is stood in for by the group's earliest member, which started
    no earlier than it did."""
    leader = _stat(pgid)
    if leader is not None:
        return leader[1]
    members = [started for group, started in _processes() if group == pgid]
    return min(members) if members else None


def _processes() -> list[tuple[int, int]]:
    """``(process group, start time)`` of every process (a scan of ``/proc``)."""
    found = []
    for entry in _PROC.iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None:
                found.append(stat)
    return found


def _stat(pid: int) -> tuple[int, int] | None:
    """``(process group, start time)`` of ``pid``, or ``None`` if it is gone (or a zombie)."""
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its end.
    fields = text[text.rindex(")") + 2 :].split()
    if fields[0] in ("Z", "X"):
        # Dead, waiting to be reaped: a sandbox's init, killed with its namespace, is
        # reaped by PID 1, which in a container may take its time.
        return None
    return int(fields[2]), int(fields[19])  # fields 5 (pgrp) and 22 (starttime)


class JobLedger:
    """The running jobs' process groups, kept in a file as they start and stop."""

    def __init__(self, path: Path) -> None:
        self.path = path
        """The file (``$HERON_HOME/jobs.json``)."""
        self._groups: dict[int, int] = {}  # pgid -> the leader's start time
        self.enabled = _PROC.is_dir()
        """Whether processes can be checked here (Linux's ``/proc``)."""
        self._here = _identity() if self.enabled else {}  # read once: it cannot change

    def add(self, pgid: int) -> None:
        """Record a job's group (just started, so its leader is alive)."""
        started = start_ticks(pgid) if self.enabled else None
        if started is not None:
            self._groups[pgid] = started
            self._save()

    def remove(self, pgids: list[int]) -> None:
        """Forget groups that were stopped (their shell was closed)."""
        if any(self._groups.pop(pgid, None) is not None for pgid in list(pgids)):
            self._save()

    def reap(self) -> int:
        """Stop (SIGKILL) the groups a previous daemon left running; how many there were."""
        try:
            recorded = self._read()
        except FileNotFoundError:
            return 0
        except (OSError, ValueError) as exc:
            log.warning("ignoring the unreadable job ledger %s: %s", self.path, exc)
            recorded = {}
        stopped = 0
        for pgid, started in recorded.items():
            if self.enabled and group_lives(pgid, started):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pgid, signal.SIGKILL)
                    stopped += 1
        if stopped:
            log.warning("stopped %d job(s) a previous daemon left running", stopped)
        self._groups.clear()
        self._save()
        return stopped

    def _read(self) -> dict[int, int]:
        """The groups recorded by a daemon of this boot and pid namespace."""
        data = json.loads(self.path.read_text())
        groups = data.get("groups") if isinstance(data, dict) else None
        valid = isinstance(groups, dict) and all(
            key.isdigit() and type(value) is int for key, value in groups.items()
        )
        if not valid or not isinstance(groups, dict):
            raise ValueError("not a job ledger (expected {'groups': {pgid: start time}, ...})")
        here = self._here
        if not here or {k: data.get(k) for k in here} != here:
            # Another boot or pid namespace: its pids and start times mean nothing here.
            log.info("the job ledger %s is from another boot or container: not used", self.path)
            return {}
        return {int(key): value for key, value in groups.items()}

    def _save(self) -> None:
        # Whole or not at all: a daemon killed mid-write must leave a readable file.
        partial = self.path.with_name(self.path.name + ".tmp")
        groups = {str(k): v for k, v in self._groups.items()}
        partial.write_text(json.dumps({**self._here, "groups": groups}))
        os.replace(partial, self.path)


def group_lives(pgid: int, started: int) -> bool:
    """Whether the group ``pgid`` whose leader started at ``started`` still has members."""
    leader = _stat(pgid)
    if leader is not None:
        # ``started`` may stand in for a leader that had exited (see start_ticks): never
        # earlier than the real one. A process that took the pid later started after it.
        return leader[0] == pgid and leader[1] <= started
    # The leader (the job's shell) exited; what it started may run on in its group.
    return any(group == pgid and when >= started for group, when in _processes())
