"""Jobs: the background commands a node started, listed and cancellable from outside."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections import OrderedDict
from collections.abc import Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ... import api
from ..._core import ToolError
from ...tools import (
    BashEvent,
    BashExited,
    BashOutputSize,
    BashStarted,
    BashTools,
    IdGenerator,
    MemoryStorage,
    ToolContext,
)
from ...tools import bash_tools as make_bash_tools
from ..nodes import SETTLED, Feature, Kernel, RunSetup, maybe_when, when
from ..server import ApiError
from ..shell import Commands, JobLedger, command_environment, group_lives, start_ticks
from ._routes import add_jobs_routes

if TYPE_CHECKING:
    from fastapi import FastAPI


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
    started_ticks: int | None  # the leader's start time: tells its group from a reused pid
    size: BashOutputSize = field(default_factory=BashOutputSize)
    ended_at: float | None = None
    exit_code: int | None = None
    signal: str | None = None
    killed: bool = False
    group_gone: bool = False  # known to be over: never checked again

    def children_running(self) -> bool:
        """Whether its shell exited but processes it started still run in its group."""
        if self.ended_at is None or self.group_gone or self.started_ticks is None:
            return False
        alive = group_lives(self.pid, self.started_ticks)
        self.group_gone = not alive
        return alive

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
            children_running=self.children_running(),
            exit_code=self.exit_code,
            signal=self.signal,
            started_at=when(self.started_at),
            ended_at=maybe_when(self.ended_at),
            output_lines=self.size.lines,
            output_chars=self.size.chars,
        )


ENV_ID = "local"
"""The environment id a node's tools run under (``LocalToolClient``'s default)."""


class _NodeJobs:
    """One node's shell (while it has one), the context its tools run with, and its jobs."""

    def __init__(self, node_id: str, ledger: JobLedger) -> None:
        self.shell: BashTools | None = None
        self.jobs: OrderedDict[str, _Job] = OrderedDict()
        self.runs: dict[str, int] = {}  # bash-run commands going: id -> group
        self.ledger = ledger
        storage = MemoryStorage()
        # The client's usual environment id: tool storage keyed by it (a planner's todo
        # list in the profile's store) stays shared as documented; each node has its
        # own shell and id counters anyway.
        self.context = ToolContext(env_id=ENV_ID, storage=storage, ids=IdGenerator(storage, ENV_ID))
        """Shared by the node's runs and by cancel: one id sequence for the daemon's life."""

    def on_event(self, event: BashEvent) -> None:
        """Follow the shell's commands: record every group, list the background ones."""
        if isinstance(event, BashStarted):
            # bash-run's commands run in groups of their own too: a dead daemon's must go.
            self.ledger.add(event.pid)
            if not event.background:
                self.runs[event.process_id] = event.pid
                return
            # Ids are unique within the node (one generator), but be safe: the new one wins.
            self.jobs.pop(event.process_id, None)
            self.jobs[event.process_id] = _Job(
                job_id=event.process_id,
                command=event.command,
                cwd=event.cwd,
                pid=event.pid,
                started_at=time.time(),
                started_ticks=start_ticks(event.pid),
                size=event.size,
            )
            self._forget_old()
        elif isinstance(event, BashExited):
            pid = self.runs.pop(event.process_id, None)
            if pid is not None:
                self.ledger.remove([pid])  # bash-run stops what its command left behind
                return
            job = self.jobs.get(event.process_id)
            if job is not None and job.ended_at is None:
                job.ended_at = time.time()
                job.exit_code, job.signal = event.exit_code, event.signal

    def _forget_old(self) -> None:
        finished = [key for key, job in self.jobs.items() if job.ended_at is not None]
        forgotten = [
            self.jobs.pop(key) for key in finished[: max(0, len(finished) - KEEP_PER_NODE)]
        ]
        self.ledger.remove([job.pid for job in forgotten])


class Jobs(Feature):
    """Every node's shell and jobs in this daemon."""

    def __init__(self, engine: Kernel) -> None:
        self._engine = engine
        self._nodes: dict[str, _NodeJobs] = {}
        # Settled nodes, oldest first: their lists are dropped past KEEP_SETTLED.
        self._settled: OrderedDict[str, None] = OrderedDict()
        self._closing: set[asyncio.Future[None]] = set()
        commands = engine.features.get(Commands)
        self.ledger = commands.ledger
        """The running commands' process groups on disk (for the next daemon, should this
        die; the shell's, which reaps a dead daemon's at start)."""
        self._sandbox = commands.sandbox

    async def after_shutdown(self) -> None:
        """Close every node's shell once DBOS is down: no run starts a job after."""
        await self.aclose()

    def setup(self, run: RunSetup) -> None:
        """A run's shell is the node's, shared by its runs (its background jobs carry on),
        and so is the context its tools are called with (job ids stay unique)."""
        node_id, network = run.node_id, run.network

        def shell(workspace: Path) -> BashTools:
            return self.shell(node_id, workspace, network=network)

        run.shell = shell
        run.context = self.context(node_id)

    def routes(self, app: FastAPI) -> None:
        """Serve the jobs routes."""
        add_jobs_routes(app, self)

    def _entry(self, node_id: str) -> _NodeJobs:
        entry = self._nodes.get(node_id)
        if entry is None:
            entry = self._nodes[node_id] = _NodeJobs(node_id, self.ledger)
        return entry

    def context(self, node_id: str) -> ToolContext:
        """The context every run of the node calls its tools with (env id, storage, ids)."""
        return self._entry(node_id).context

    def shell(self, node_id: str, workspace: Path, *, network: bool = True) -> BashTools:
        """The node's shell in ``workspace``, made on first use and shared by its runs
        (``network``: whether its sandboxed commands reach the network)."""
        entry = self._entry(node_id)
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
        # The model chooses what runs here, and output goes into transcripts: in the
        # sandbox (the daemon's files hidden, a scrubbed environment) when there is one,
        # else at least without the daemon's secrets (the TCP token, API keys ...).
        sandbox = self._sandbox.for_node(node_id, workspace.resolve(), network=network)
        environment = command_environment() if sandbox is None else self._sandbox.environment()
        shell = entry.shell = make_bash_tools(workspace, base_env=environment, sandbox=sandbox)
        # Starts and exits only: sizes come from BashStarted.size (no line splitting).
        shell.interaction.subscribe(entry.on_event, output=False)
        return shell

    async def list(self, node_id: str) -> list[api.Job]:
        """The node's jobs, oldest first (``404`` for an unknown node)."""
        await self._engine.row(node_id)
        entry = self._nodes.get(node_id)
        return [job.wire(node_id) for job in entry.jobs.values()] if entry else []

    def running(self, node_id: str) -> int:
        """How many of the node's jobs are still running here (its shell has not exited)."""
        entry = self._nodes.get(node_id)
        return sum(job.ended_at is None for job in entry.jobs.values()) if entry else 0

    async def cancel(self, node_id: str, job_id: str) -> api.Job:
        """Kill the job's process group (SIGTERM, then SIGKILL); ``409`` once nothing of it
        runs (its shell ended and left nothing behind in its group)."""
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
        if job.ended_at is not None and not job.children_running():
            how = "been cancelled" if job.killed else "ended"
            raise ApiError(
                409, "job_finished", f"job {job_id!r} of node {node_id!r} has already {how}"
            )
        shell = entry.shell
        data: dict[str, Any] = {}
        if shell is not None:
            # The node's own bash-kill does it: the shell then reports it as killed to the
            # model too, and reaps the process.
            kill = next(tool for tool in shell if tool.name == _KILL_TOOL)
            try:
                result = await kill.execute({"id": job_id}, entry.context)
            except ToolError:
                shell = None  # the shell forgot it (long exited): only its group is left
            else:
                data = result.structured if isinstance(result.structured, dict) else {}
        if shell is None:
            await _kill_group(job)
        job.group_gone = True  # both ways wait for the group to be gone
        entry.ledger.remove([job.pid])
        # Killed only if its shell still ran when the kill came: one that exited just
        # before keeps its own exit code (bash-kill's ``killed`` says which it was).
        job.killed = job.killed or bool(data.get("killed"))
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
        if entry.shell is None:  # no new shell meanwhile: its /tmp goes
            await self._sandbox.forget(node_id)

    async def discard(self, node_id: str) -> None:
        """Close the node's shell and forget it: the node is gone (a discarded warm node)."""
        await self.release(node_id)
        self._nodes.pop(node_id, None)
        self._settled.pop(node_id, None)

    async def aclose(self) -> None:
        """Close every node's shell (the daemon is stopping)."""
        await asyncio.gather(*(self.release(node_id) for node_id in list(self._nodes)))
        await asyncio.gather(*self._closing, return_exceptions=True)

    async def released(self, node_id: str) -> None:
        """The node's status became settled: release its shell (called by the kernel)."""
        try:
            await self._settled_now(node_id)
        except Exception:  # runs in the background: say so rather than lose it
            log.exception("releasing the jobs of settled node %s failed", node_id)

    async def _settled_now(self, node_id: str) -> None:
        if not await self._still_settled(node_id):
            return  # revived before this ran: its jobs carry on with it
        await self.release(node_id)
        entry = self._nodes.get(node_id)
        if entry is None:
            return
        # A revive may have come while the shell closed: its run owns the entry now.
        if entry.shell is not None or not await self._still_settled(node_id):
            return
        if not entry.jobs:
            # Nothing to list. Its ids are kept only if it ever had a job: none were used.
            if not await _used_ids(entry):
                self._nodes.pop(node_id, None)
            return
        self._settled[node_id] = None
        while len(self._settled) > KEEP_SETTLED:
            oldest, _ = self._settled.popitem(last=False)
            gone = self._nodes.get(oldest)
            if gone is not None and gone.shell is None:
                gone.jobs.clear()  # the list goes; the context stays (ids never repeat)

    async def _still_settled(self, node_id: str) -> bool:
        row = await self._engine.store.node(node_id)
        return row is None or row["status"] in SETTLED


async def _used_ids(entry: _NodeJobs) -> bool:
    return bool(await entry.context.storage.keys(f"heron.ids/{entry.context.env_id}/"))


async def _kill_group(job: _Job) -> None:
    """SIGKILL what is left of the job's group (its shell has exited and been forgotten)."""
    if job.started_ticks is None or not group_lives(job.pid, job.started_ticks):
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(job.pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    # No event announces a group's end (its members are not our children): poll briefly.
    while time.monotonic() < deadline:
        if not group_lives(job.pid, job.started_ticks):
            return
        await asyncio.sleep(0.02)


def _close(entry: _NodeJobs, shell: BashTools) -> Coroutine[Any, Any, None]:
    """Close ``shell``, its running jobs recorded as killed (the list stays)."""
    # Chosen now, not once the close gets going: a new shell's jobs are not these.
    pids = [job.pid for job in entry.jobs.values()] + list(entry.runs.values())
    every = list(entry.jobs.values())
    running = [job for job in every if job.ended_at is None]
    for job in running:
        job.killed = True

    async def close() -> None:
        await shell.aclose()
        entry.ledger.remove(pids)
        now = time.time()
        for job in every:
            job.group_gone = True  # closing kills what a job left in its group too
        for job in running:
            if job.ended_at is None:
                job.ended_at = now

    return close()
