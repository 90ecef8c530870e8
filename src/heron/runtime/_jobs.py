"""Jobs: the background commands a node started, listed and cancellable from outside.

A node's shell (its ``bash_tools``) lives as long as the node is unsettled in
this daemon: every run of the node shares it, so a command started by
``bash-start`` in one run can be read, waited for or killed in the next. It is
closed, killing what still runs, when the node settles, when its worktree is
removed (its commands run in it) and when the daemon stops.

Jobs are known only to the daemon process that started them: after a restart
the processes are gone (a stopping daemon kills them; the groups a crashed one
left behind are killed by the next, see ``_job_ledger``) and the list starts
empty, never showing a job as running that is not. A settled
node's jobs stay listed, as exited or killed, until the daemon stops or
:data:`KEEP_SETTLED` later nodes' lists have been dropped.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import api
from .._core import ToolError
from ..tools import BashEvent, BashExited, BashOutput, BashStarted, BashTools, ToolContext
from ..tools import bash_tools as make_bash_tools
from ._errors import ApiError
from ._job_ledger import JobLedger
from ._rows import maybe_when, when

if TYPE_CHECKING:
    from ._engine import Engine

SETTLED = frozenset({"completed", "failed", "cancelled"})  # as _engine's, which imports this

__all__ = ["KEEP_PER_NODE", "KEEP_SETTLED", "Jobs"]

KEEP_PER_NODE = 64
"""Finished jobs a node's list keeps (the oldest go first); running ones always stay."""

KEEP_SETTLED = 1024
"""Settled nodes whose final job lists are kept for ``GET …/jobs``."""

_KILL_TOOL = "bash-kill"

log = logging.getLogger("heron.runtime")


@dataclass(kw_only=True, slots=True, eq=False)
class _Job:
    """What the daemon knows of one background command (never its output)."""

    job_id: str
    command: str
    cwd: str
    pid: int
    started_at: float
    ended_at: float | None = None
    exit_code: int | None = None
    signal: str | None = None
    killed: bool = False
    output_lines: int = 0
    output_chars: int = 0

    def wire(self, node_id: str) -> api.Job:
        if self.ended_at is None:
            status: api.JobStatus = "running"
        elif self.killed or self.signal is not None:
            status = "killed"
        else:
            status = "exited"
        return api.Job(
            job_id=self.job_id,
            node_id=node_id,
            command=self.command,
            cwd=self.cwd,
            pid=self.pid,
            status=status,
            exit_code=self.exit_code,
            signal=self.signal,
            started_at=when(self.started_at),
            ended_at=maybe_when(self.ended_at),
            output_lines=self.output_lines,
            output_chars=self.output_chars,
        )


class _NodeJobs:
    """One node's shell (while it has one) and the record of its jobs."""

    def __init__(self, ledger: JobLedger) -> None:
        self.shell: BashTools | None = None
        self.jobs: OrderedDict[str, _Job] = OrderedDict()
        self.ledger = ledger

    def on_event(self, event: BashEvent) -> None:
        """Follow the shell's commands (``bash-run``'s ``run-N`` ones are not jobs)."""
        if isinstance(event, BashStarted):
            if event.background:
                # An id the shell has forgotten may come again: the new job replaces the old.
                self.jobs.pop(event.process_id, None)
                self.jobs[event.process_id] = _Job(
                    job_id=event.process_id,
                    command=event.command,
                    cwd=event.cwd,
                    pid=event.pid,
                    started_at=time.time(),
                )
                self.ledger.add(event.pid)
                self._forget_old()
            return
        job = self.jobs.get(event.process_id)
        if job is None:
            return
        if isinstance(event, BashOutput):
            job.output_lines += len(event.lines)
            job.output_chars += sum(len(line) for line in event.lines)
        elif isinstance(event, BashExited) and job.ended_at is None:
            job.ended_at = time.time()
            job.exit_code, job.signal = event.exit_code, event.signal

    def _forget_old(self) -> None:
        finished = [key for key, job in self.jobs.items() if job.ended_at is not None]
        for key in finished[: max(0, len(finished) - KEEP_PER_NODE)]:
            del self.jobs[key]


class Jobs:
    """Every node's shell and jobs in this daemon; ``engine.jobs``."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._nodes: dict[str, _NodeJobs] = {}
        # Settled nodes, oldest first: their lists are dropped past KEEP_SETTLED.
        self._settled: OrderedDict[str, None] = OrderedDict()
        self._closing: set[asyncio.Future[None]] = set()
        self.ledger = JobLedger(engine.config.home / "jobs.json")
        """The running jobs' process groups on disk (for the next daemon, should this die)."""
        engine.settle_hooks.append(self._on_settled)

    def reap(self) -> None:
        """Stop the jobs a daemon that died (SIGKILL, a crash) left running; at start."""
        self.ledger.reap()

    def shell(self, node_id: str, workspace: Path) -> BashTools:
        """The node's shell in ``workspace``, made on first use and shared by its runs."""
        entry = self._nodes.get(node_id)
        if entry is None:
            entry = self._nodes[node_id] = _NodeJobs(self.ledger)
        self._settled.pop(node_id, None)  # revived: its list is live again
        current = entry.shell
        if current is not None and current.cwd == workspace.resolve():
            return current
        if current is not None:
            # The workspace moved under an open shell (removing a worktree closes the shell
            # first, so this is a safety net): its commands belong to the old directory.
            log.warning(
                "node %s moved to %s: stopping its jobs in %s", node_id, workspace, current.cwd
            )
            entry.shell = None
            closing = asyncio.ensure_future(_close(entry, current))
            self._closing.add(closing)
            closing.add_done_callback(self._closing.discard)
        shell = entry.shell = make_bash_tools(workspace)
        shell.interaction.subscribe(entry.on_event)
        return shell

    async def list(self, node_id: str) -> list[api.Job]:
        """The node's jobs, oldest first (``404`` for an unknown node)."""
        await self._engine.row(node_id)
        entry = self._nodes.get(node_id)
        return [job.wire(node_id) for job in entry.jobs.values()] if entry else []

    async def cancel(self, node_id: str, job_id: str) -> api.Job:
        """Kill the job's process group (SIGTERM, then SIGKILL); ``409`` once it has ended."""
        await self._engine.row(node_id)
        if not api.is_valid_id(job_id):
            raise ApiError(400, "invalid_job_id", f"not a valid job id: {job_id!r}")
        entry = self._nodes.get(node_id)
        job = entry.jobs.get(job_id) if entry is not None else None
        if entry is None or job is None:
            known = ", ".join(entry.jobs) if entry is not None and entry.jobs else "none"
            raise ApiError(
                404, "job_not_found", f"node {node_id!r} has no job {job_id!r} (jobs: {known})"
            )
        if job.ended_at is not None or job.killed or entry.shell is None:
            raise ApiError(
                409,
                "job_finished",
                f"job {job_id!r} of node {node_id!r} has already "
                + ("been cancelled" if job.killed else "ended"),
            )
        job.killed = True
        # The node's own bash-kill does it: the shell then reports it as killed to the
        # model too, and reaps the process. Runs call tools with the default context.
        kill = next(tool for tool in entry.shell if tool.name == _KILL_TOOL)
        try:
            result = await kill.execute({"id": job_id}, ToolContext())
        except ToolError as exc:  # the shell no longer knows it: it is not running
            job.ended_at = job.ended_at or time.time()
            raise ApiError(409, "job_finished", str(exc)) from None
        entry.ledger.remove([job.pid])
        data: dict[str, Any] = result.structured if isinstance(result.structured, dict) else {}
        if job.ended_at is None:  # the exit event comes a moment later: do not wait for it
            job.ended_at = time.time()
            job.exit_code, job.signal = data.get("exit_code"), data.get("signal")
        return job.wire(node_id)

    async def release(self, node_id: str) -> None:
        """Close the node's shell: every job still running is killed (its list stays)."""
        entry = self._nodes.get(node_id)
        if entry is None or entry.shell is None:
            return
        shell, entry.shell = entry.shell, None
        await _close(entry, shell)

    async def discard(self, node_id: str) -> None:
        """Close the node's shell and forget it: the node is gone (a discarded warm node)."""
        await self.release(node_id)
        self._nodes.pop(node_id, None)
        self._settled.pop(node_id, None)

    async def aclose(self) -> None:
        """Close every node's shell (the daemon is stopping)."""
        await asyncio.gather(*(self.release(node_id) for node_id in list(self._nodes)))
        await asyncio.gather(*self._closing, return_exceptions=True)

    async def _on_settled(self, node_id: str, outcome: dict[str, Any]) -> None:
        row = await self._engine.store.node(node_id)
        if row is not None and row["status"] not in SETTLED:
            # A resident root answers (an outcome) and stays dormant for more messages:
            # its jobs carry on with it.
            return
        await self.release(node_id)
        entry = self._nodes.get(node_id)
        if entry is None or not entry.jobs:
            self._nodes.pop(node_id, None)  # nothing to list: no need to keep it
            return
        self._settled[node_id] = None
        while len(self._settled) > KEEP_SETTLED:
            oldest, _ = self._settled.popitem(last=False)
            gone = self._nodes.get(oldest)
            if gone is not None and gone.shell is None:
                del self._nodes[oldest]


def _close(entry: _NodeJobs, shell: BashTools) -> Coroutine[Any, Any, None]:
    """Close ``shell``, its running jobs recorded as killed (the list stays)."""
    # Chosen now, not once the close gets going: a new shell's jobs are not these.
    pids = [job.pid for job in entry.jobs.values()]
    running = [job for job in entry.jobs.values() if job.ended_at is None]
    for job in running:
        job.killed = True

    async def close() -> None:
        await shell.aclose()
        entry.ledger.remove(pids)
        now = time.time()
        for job in running:
            if job.ended_at is None:
                job.ended_at = now

    return close()
