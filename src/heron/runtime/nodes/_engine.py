"""The node engine: the lifecycle behind every ``/v1/nodes`` route.

A node's work happens in *runs*: the kickoff, and each wake-up of a dormant node
by a message. Each run is one DBOS workflow (``node_run``) whose model turns and
tool calls are steps (see ``_durable``), so after a crash DBOS resumes it from
its last completed step. Between runs the conversation lives in the node's row.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import logging
import os
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any

import jsonschema
from dbos import DBOS, SetWorkflowID

from ... import api
from ..._core.version import __version__ as version
from .._config import RuntimeConfig
from ..db import NODES_SCHEMA, Database, create_engine, redact_url
from ..events import EventLog
from ..server import ApiError, DaemonError
from ._cluster import LEGACY_EXECUTOR, NOW_QUEUE, Cluster, requeue_direct
from ._commands import ACK_TIMEOUT, RemoteStops
from ._durable import Steps
from ._feature import CommandSandbox, Feature, FeatureFactory, Features, ModelSource
from ._rows import (
    check_duration,
    maybe_when,
    new_row,
    node_cursor,
    read_cursor,
    to_node,
    to_outcome,
    when,
)
from ._runs import RUN_STEPS, SETTLED, Active, Stop, failure_outcome, run_workflow_id
from ._store import DuplicateNode, NodeStore
from ._types import NodeExtra, NodeRow, Outcome, RunEnd

__all__ = [
    "SETTLED",
    "SETTLE_CRASH_ENV",
    "Engine",
    "Stop",
    "current_engine",
    "failure_outcome",
    "run_workflow_id",
]

log = logging.getLogger("heron.runtime")

SETTLE_CRASH_ENV = "HERON_TEST_SETTLE_CRASH"
"""Test hook: the path of a file. A daemon that finds it right after settling an idle node
(a close, a deadline: its settlement and events written) deletes it and kills itself
with SIGKILL (once per file)."""


APP_VERSION = f"{version}+steps.{RUN_STEPS}"
"""DBOS's application version: a run is resumed only by a Heron that makes the same steps."""

_WITHDRAWN_STATUS = {"interrupted": "interrupted", "yielded": "dormant"}
"""The status a node takes when a stop withdraws its queued run, by the stop's kind."""

RUN_QUEUE = "heron.runs"
"""The DBOS queue top-level nodes' first runs wait in until a daemon has room for them
(``HERON_MAX_RUNS`` at once per process)."""


def _crash_if_asked() -> None:
    marker = os.environ.get(SETTLE_CRASH_ENV)
    if marker:
        try:
            os.unlink(marker)
        except OSError:
            return
        os.kill(os.getpid(), signal.SIGKILL)


_ENGINE: Engine | None = None


def current_engine() -> Engine:
    """The engine of this daemon process (workflows find it here after a restart)."""
    if _ENGINE is None:
        raise RuntimeError("the Heron node engine is not running in this process")
    return _ENGINE


def _answered(row: NodeRow) -> bool:
    """Whether the node's outcome stands: it has one and is not at work on a later
    message (a resident root answers each message anew: until it has, it is pending)."""
    return row["settled_at"] is not None and row["status"] not in ("running", "interrupted")


def _supplied(features: Features, what: str) -> Any:
    """The one thing of the kernel's that a registered feature supplies (its attribute
    ``what``); ``RuntimeError`` unless exactly one does."""
    found = [value for f in features if (value := getattr(f, what)) is not None]
    if len(found) != 1:
        raise RuntimeError(f"{len(found)} features supply the kernel's {what}: one must")
    return found[0]


class Engine:
    """Creates, runs, stops and reports on nodes; one per daemon process."""

    def __init__(self, config: RuntimeConfig, features: Sequence[FeatureFactory] = ()) -> None:
        self.config = config
        self.db = Database(create_engine(config.db_url))
        """The daemon's database, which every feature's store uses."""
        self.store = NodeStore(self.db)
        """The kernel's rows: nodes, messages, outcomes, events."""
        self.events = EventLog(self.db, memory=config.stream_memory)
        self.events.settled_elsewhere = self._wake_outcome_polls
        self.remote = RemoteStops(self)
        """Stops of runs going in other daemons on the same database (PostgreSQL)."""
        self.cluster = Cluster(self)
        """The daemons sharing the database: this one's heartbeat, the takeover of dead ones."""
        self.started_at = time.time()
        self.active: dict[str, Active] = {}
        self._early_stops: dict[str, tuple[int, Stop]] = {}
        self._queue: Any = None  # the DBOS run queue, once launched
        self._now_queue: Any = None  # with workers: the queue of the runs started at once
        self._registered: dict[str, asyncio.Event] = {}
        self._settled: dict[str, asyncio.Event] = {}
        self._deadlines: dict[str, asyncio.TimerHandle] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self.listeners: list[api.Listener] = []
        """Where the daemon listens (``/v1/status`` shows them)."""
        self.open_listener: Callable[[str, int], Awaitable[api.Listener]] | None = None
        """Opens another TCP listener while serving (the daemon's process sets it)."""
        self.features = Features()
        """The features, in the order of ``features``: each is made with the engine as
        its kernel and finds those listed before it registered already."""
        for make in features:
            self.features.add(make(self))
        self.providers: ModelSource = _supplied(self.features, "models")
        """The model providers runs use (a feature supplies them)."""
        self._sandbox: CommandSandbox = _supplied(self.features, "sandbox")

    # -- lifecycle ---------------------------------------------------------

    async def start(self) -> None:
        """Migrate, launch DBOS (which resumes interrupted runs) and re-arm deadlines."""
        global _ENGINE
        from . import _workflow  # noqa: F401 - registers the workflow with DBOS

        self._sandbox.check()  # refuses to start under --require-sandbox without one
        self.db.migrate([NODES_SCHEMA, *(f.schema for f in self.features if f.schema)])
        for feature in self.features:  # before any run resumes (a dead daemon's jobs ...)
            await feature.before_launch()
        self.events.start()
        _ENGINE = self
        await self.cluster.join()
        DBOS(
            config={
                "name": "heron",
                "executor_id": self.cluster.executor_id,
                "system_database_url": self.config.db_url,
                "system_database_engine": self.db.engine,
                "application_version": APP_VERSION,
                # DBOS's default pool is unbounded: under load that meant hundreds of
                # threads, costing ~8 ms of CPU and ~20 KiB per node (bench/daemon_load.py).
                "max_executor_threads": 8,
                "log_level": "WARNING",
            }
        )
        role = self.config.role
        if role == "front":
            DBOS.listen_queues([])  # its runs go to the workers (DBOS's own queue aside)
        elif role == "worker":
            DBOS.listen_queues([RUN_QUEUE, NOW_QUEUE])
        if role != "daemon":
            # The runs it started in its process (a worker's children and wake-ups, the
            # front's warm ones) that a crash left go to a worker's queue as DBOS resumes
            # them, not to DBOS's own, which the front takes from too.
            await self.db.write(requeue_direct, self.cluster.executor_id)
        DBOS.launch()
        # Settings are the queue's, in the database: the daemon started last sets them.
        self._queue = await DBOS.register_queue_async(
            RUN_QUEUE,
            worker_concurrency=self.config.max_runs,
            polling_interval_sec=self.config.queue_poll,
            on_conflict="always_update",
        )
        if role != "daemon":
            self._now_queue = await DBOS.register_queue_async(
                NOW_QUEUE, polling_interval_sec=self.config.queue_poll, on_conflict="always_update"
            )
        await self.cluster.adopt_legacy()
        # Repairs first, deadlines after: a deadline already past would close a node while
        # its repair reads the run's workflow (one it withdrew would look cut off).
        for row in await self.store.list_nodes(status=["running"]):
            await self._ensure_run(row["node_id"], row["runs"])
        now = time.time()
        unsettled: list[NodeRow] = []
        if role != "worker":  # a worker's front arms them: one process of a daemon keeps each
            unsettled = await self.store.list_nodes(status=["running", "dormant", "interrupted"])
        timed = [(r["node_id"], r["runs"]) for r in unsettled if r["deadline_at"] is not None]
        theirs = await self.cluster.foreign(timed)  # another live daemon keeps those
        for row in unsettled:
            if row["deadline_at"] is not None and row["node_id"] not in theirs:
                self._arm_deadline(row["node_id"], row["deadline_at"] - now)
        self.cluster.start()
        for feature in self.features:  # in order: the last ones create nodes (crons)
            await feature.start()

    async def stop(self) -> None:
        """Stop timers, write pending events and shut DBOS down.

        Runs in progress are left as they are: their workflows stay pending and
        the next start resumes them from their last completed step.
        """
        global _ENGINE
        await self.cluster.stop()
        for feature in reversed(self.features):  # the last first: no cron fires into a stop
            await feature.stop()
        for handle in self._deadlines.values():
            handle.cancel()
        # DBOS first: no step finishes (and publishes) after the events are written.
        DBOS.destroy(workflow_completion_timeout_sec=0)
        # DBOS made its thread pool the loop's default executor and has shut it down: what
        # the features still do in threads (removing a node's files) gets a pool of its own.
        asyncio.get_running_loop().set_default_executor(
            concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="heron-stop")
        )
        for feature in reversed(self.features):  # no run starts a job once they are killed
            await feature.after_shutdown()
        await self.events.stop()
        await self.cluster.leave()  # last: the others may take this one's runs from now on
        self.db.close()
        _ENGINE = None

    def _lock(self, node_id: str) -> asyncio.Lock:
        lock = self._locks.get(node_id)
        if lock is None:
            lock = self._locks[node_id] = asyncio.Lock()
        return lock

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        """Run ``coro`` in the background (kept referenced until it ends)."""
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def workspace(self, node_id: str, cwd: str | None) -> Path:
        """Where a node's file and shell tools work: its ``cwd`` (its worktree's directory
        while it has one: see ``_worktrees``), else its own directory."""
        if cwd is not None:
            return Path(cwd)
        path = self.config.home / "nodes" / node_id
        path.mkdir(parents=True, exist_ok=True)
        return path

    # -- reads ---------------------------------------------------------------

    async def row(self, node_id: str) -> NodeRow:
        """The node's row; ``404 node_not_found`` if there is none."""
        if not api.is_valid_id(node_id):
            raise ApiError(400, "invalid_node_id", f"not a valid node id: {node_id!r}")
        row = await self.store.node(node_id)
        if row is None or row["warm"] is not None:  # a warm-pool node is nobody's yet
            raise ApiError(404, "node_not_found", f"no node {node_id!r}")
        return row

    async def node(self, node_id: str) -> api.Node:
        """The node as the API shows it."""
        return to_node(await self.row(node_id))

    async def nodes(
        self,
        *,
        status: list[str] | None = None,
        root: bool | None = None,
        limit: int | None = None,
        after: str | None = None,
    ) -> tuple[list[api.Node], str | None]:
        """The nodes, oldest first, optionally filtered: at most ``limit`` of them, after
        the cursor ``after``; with the cursor of the next page (``None``: no more)."""
        rows = await self.store.list_nodes(
            status=status,
            root=root,
            limit=limit + 1 if limit is not None else None,  # one more: is there a next?
            after=read_cursor(after) if after is not None else None,
        )
        more = limit is not None and len(rows) > limit
        rows = rows[:limit] if more else rows
        cursor = node_cursor(rows[-1]) if more else None
        return [to_node(r) for r in rows], cursor

    async def outcome(self, node_id: str, wait: int) -> api.OutcomePoll:
        """One long poll: answer when the node settles or after ``wait`` seconds."""
        # Listen before reading: a settle landing between the two still wakes the poll.
        event = self._settled.setdefault(node_id, asyncio.Event()) if wait > 0 else None
        row = await self.row(node_id)
        if not _answered(row) and event is not None:
            if self.remote.enabled:
                await self.events.prime(node_id)  # its settling in another daemon wakes this
            with self.events.want(node_id), contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), wait)
            row = await self.row(node_id)
        elif event is not None and not event.is_set():
            self._settled.pop(node_id, None)
        outcome = await self.store.outcome(node_id) if _answered(row) else None
        return api.OutcomePoll(
            node_id=node_id,
            state="settled" if outcome is not None else "pending",
            outcome=to_outcome(outcome) if outcome is not None else None,
            node_status=row["status"],
            deadline_at=maybe_when(row["deadline_at"]),
        )

    async def status(self) -> api.SystemStatus:
        """The daemon's status."""
        now = time.time()
        return api.SystemStatus(
            version=version,
            started_at=when(self.started_at),
            uptime_seconds=round(now - self.started_at, 3),
            pid=os.getpid(),
            nodes=await self.store.counts_by_status(),
            database=f"{self.db.kind} ({redact_url(self.config.db_url)})",
            listeners=self.listeners,
            provider=self.providers.default,
            event_streams=self.events.stats(),
            sandbox=self._sandbox.status(),
            daemons=await self.cluster.daemons(),
        )

    # -- create ----------------------------------------------------------------

    async def listen(self, host: str, port: int) -> api.Listener:
        """Open another TCP listener on ``host``:``port`` (0: any free port) while serving;
        ``503 listener_unavailable`` if this daemon cannot, ``409 listen_failed`` if the
        address cannot be bound."""
        if self.open_listener is None:
            raise ApiError(503, "listener_unavailable", "this daemon cannot open a listener")
        try:
            return await self.open_listener(host, port)
        except DaemonError as exc:
            raise ApiError(409, "listen_failed", str(exc)) from None

    async def create(
        self, request: api.NodeCreateRequest, *, extra: NodeExtra | None = None
    ) -> api.Node:
        """Create a node and start its first run (unless ``no_kickoff``); returns at once.

        ``extra`` keys (a feature's record of why the node exists: the cron that
        fired it ...) are kept in the node's ``extra`` from its insert on.
        """
        if request.root and request.parent is not None:
            raise ApiError(422, "invalid_request", "a root node has no parent: drop one of the two")
        for feature in self.features.having("check_create"):
            feature.check_create(request)
        row, prompt = new_row(request)
        row["extra"].update(extra or {})
        # A fork: the conversation and unset settings.
        for feature in self.features.having("derive"):
            await feature.derive(row, request)
        await self._check_creator(request)
        for feature in self.features.having("complete"):  # profile, kind and their model
            await feature.complete(row)
        if row["model"] is not None:
            await self.prepare_model(row["model"])
        if request.parent is not None:  # checked again as the child is inserted
            await self._check_parent(request.parent)
        kickoff = prompt is not None and not request.no_kickoff
        row["status"] = "running" if kickoff else "dormant"
        row["runs"] = 1 if kickoff else 0
        # Made before the row exists (a worktree), so the first run already works in it.
        provisioned: list[Feature] = []
        try:
            for feature in self.features.having("provision"):
                await feature.provision(row)
                provisioned.append(feature)
            # Under the parent's lock, the child exists before the parent settles or not
            # at all: a closing parent finds every child made before it settled (see
            # close_subtree).
            async with self._lock(request.parent) if request.parent else contextlib.nullcontext():
                claimed = await self._insert(request, row, prompt if kickoff else None)
        except BaseException:
            for feature in provisioned:  # whatever failed, no node owns what they made
                await asyncio.shield(feature.unprovision(row))
            raise
        if claimed is not None:
            row = claimed[1]
        node_id = row["node_id"]
        # Before its first run can use the workspace (a fork's copy of its original's).
        for feature in self.features.having("inserted"):
            await feature.inserted(row)
        self.events.fresh(node_id)
        self.events.publish(node_id, "node.status.changed", {"status": row["status"]})
        if row["deadline_at"] is not None:
            self._arm_deadline(node_id, row["deadline_at"] - time.time())
        if claimed is not None:
            claimed[0].serve(node_id)  # its run is already going: it only waited for this
        elif kickoff:
            # A top-level node's run waits its turn in the queue, so a create answers at
            # once however busy the daemon is; a child's starts now (its parent may be
            # waiting on it, holding a place in the queue).
            await self.launch(node_id, 1, queued=request.parent is None)
        return to_node(row)

    async def _insert(
        self, request: api.NodeCreateRequest, row: NodeRow, prompt: str | None
    ) -> tuple[Feature, NodeRow] | None:
        """Insert the new node's row, or have a feature serve the create with a node made
        ahead of it (the warm pool): that feature and the node's row."""
        if request.parent is not None:
            await self._check_parent(request.parent)
        for feature in self.features.having("claim"):
            claimed = await feature.claim(request, row, prompt)
            if claimed is not None:
                return feature, claimed
        try:
            await self.store.insert_node(row, prompt)
        except DuplicateNode:
            raise ApiError(
                409, "node_id_exists", f"a node with id {row['node_id']!r} already exists"
            ) from None
        return None

    async def _check_creator(self, request: api.NodeCreateRequest) -> None:
        """``404`` for a ``creator`` that does not exist."""
        if request.creator is not None:
            try:
                await self.row(request.creator)
            except ApiError as exc:
                raise ApiError(exc.status, exc.code, f"creator: {exc.message}") from None

    async def _check_parent(self, parent_id: str) -> None:
        """``404`` if there is no such parent, ``409 node_settled`` if it has settled."""
        parent = await self.row(parent_id)
        if parent["status"] in SETTLED:
            raise ApiError(
                409,
                "node_settled",
                f"node {parent_id!r} is {parent['status']}: it takes no new children",
            )

    async def prepare_model(self, spec: str | None) -> None:
        """Load the model ``spec`` now (a script file is re-read); ``422 invalid_model``."""
        try:
            await self.providers.prepare(spec, reread=True)
        except Exception as exc:  # an unknown kind, a missing API key, a bad script ...
            raise ApiError(422, "invalid_model", str(exc)) from None

    # -- runs ------------------------------------------------------------------

    async def launch(
        self, node_id: str, run: int, *, queued: bool = False, here: bool = False
    ) -> None:
        """Start the workflow of the node's run ``run`` (its row says it is running);
        ``queued``: put it in the run queue instead, which starts it when a daemon sharing
        the database has room (only for runs nothing waits on: see ``create``).

        The front of a daemon with workers starts none itself: a run goes to the run queue
        if ``queued``, else to the one without a limit (:data:`NOW_QUEUE`), unless ``here``
        (a warm node's run, which waits in the process serving creates). A worker starts
        the others itself, as a daemon does: a child in its parent's process, where its
        ``wait-children`` waits on it.
        """
        from ._workflow import node_run

        queue = self._queue if queued else None
        if queue is None and not here and self.config.role == "front":
            queue = self._now_queue
        if queue is not None and self.db.kind == "postgresql":
            # Another process may take the run up: it numbers the node's events from what
            # is written, so those published here so far must be first.
            await self.events.durable(node_id)

        async def start() -> None:
            with SetWorkflowID(run_workflow_id(node_id, run)):
                if queue is not None:
                    await queue.enqueue_async(node_run, node_id, run)
                else:
                    await DBOS.start_workflow_async(node_run, node_id, run)

        # A context of its own: DBOS refuses to start a workflow inside another's step
        # (spawn-child). Shielded: a stop of that run must not strand the node running.
        task = asyncio.create_task(start(), context=contextvars.Context())
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        await asyncio.shield(task)

    async def _ensure_run(self, node_id: str, run: int) -> None:
        """Start a running node's run if DBOS has no workflow for it (a crash came between);
        settle it as crashed if its workflow failed for good (it would never end)."""
        status = await DBOS.get_workflow_status_async(run_workflow_id(node_id, run))
        if status is None:
            await self.launch(node_id, run)
        elif (
            status.status == "PENDING"
            and status.app_version != APP_VERSION
            and status.executor_id in (self.cluster.executor_id, LEGACY_EXECUTOR)
        ):
            # Recorded by a Heron whose runs take other steps: DBOS never resumes it here,
            # and the node would be running for ever. It fails, and a revive runs it again.
            await DBOS.cancel_workflow_async(status.workflow_id)
            stop = Stop(
                kind="failed",
                reason="crashed",
                message=f"the node's run was recorded by another version of Heron "
                f"({status.app_version}), which this one ({APP_VERSION}) cannot resume: "
                "revive the node to run it again",
            )
            await self._settle_idle(node_id, stop, "failed")
        elif status.status == "CANCELLED":
            # Only a close takes a run out of the queue without settling the node in
            # the same transaction (see withdraw_queued): this one was cut off.
            stop = Stop(kind="closed", reason="cancelled", message="closed on request")
            await self._settle_idle(node_id, stop, "cancelled")
        elif status.status not in ("PENDING", "ENQUEUED", "SUCCESS"):
            stop = Stop(
                kind="failed",
                reason="crashed",
                message=f"the node's run ended in the engine as {status.status}",
            )
            await self._settle_idle(node_id, stop, "failed")

    async def start_next_run(self, node_id: str) -> bool:
        """Start the next run of a dormant or interrupted node (under its lock); ``False``
        if it is running already (another daemon woke it first)."""
        previous = self.active.get(node_id)
        if previous is not None:
            # Its last run has saved its end but not yet announced it: let it finish
            # first, so its node.settled/status events come before this run's (safe
            # under the lock: ``ended`` never takes it).
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(previous.ended.wait(), 30)
        row = await self.row(node_id)
        run = row["runs"] + 1
        # Taken in one statement: of two daemons waking it at once, one runs it (and
        # numbers its events from then on: see ARCHITECTURE.md's event numbers).
        if not await self.store.begin_next_run(node_id, row["runs"]):
            return False
        await self.events.prime(node_id)
        await self.events.repair_status(node_id, row["status"])  # lost to a SIGKILL?
        self.events.publish(node_id, "node.status.changed", {"status": "running"})
        await self.launch(node_id, run)
        return True

    def register(self, node_id: str, run: int, model: str | None, steps: Steps) -> Active:
        """Note a run as in progress here (called by the workflow as it starts)."""
        active = Active(node_id=node_id, run=run, model=model, steps=steps)
        early = self._early_stops.pop(node_id, None)
        if early is not None and early[0] == run:  # a stop meant for an earlier run is stale
            active.stop = early[1]
        self.active[node_id] = active
        registered = self._registered.pop(node_id, None)
        if registered is not None:
            registered.set()
        self.remote.registered(active)  # a stop another daemon sent before it came
        return active

    def forget(self, active: Active) -> None:
        """Drop a run from those in progress here (ended, or cut off by shutdown)."""
        if self.active.get(active.node_id) is active:
            del self.active[active.node_id]

    async def ended(self, active: Active, end: RunEnd) -> None:
        """Wake whoever waits on a run's end, tell the features (called by the workflow,
        also when it replays an end recorded before a crash)."""
        node_id = active.node_id
        self.forget(active)
        status = end["status"]
        # Its status and node.settled were published by the run's end step itself, durably
        # before the step's result: a run replayed after a crash announces nothing again.
        if end.get("settled"):
            # The outcome the run settled, not one read back: a revive may already
            # have taken it back (ends recorded before it was kept are read back).
            await self._after_settling(node_id, end.get("outcome"))
        if status in SETTLED:
            await self._disarm_if_settled(node_id)
            self._release(node_id)
        active.ended.set()

    async def _after_settling(self, node_id: str, outcome: Outcome | None) -> None:
        """Wake whoever waits on the node's outcome and tell the features."""
        row = await self.store.node(node_id)
        if outcome is None:
            outcome = await self.store.outcome(node_id)
        self._wake_outcome_polls(node_id)
        settled_at = row["settled_at"] if row is not None else None
        if outcome is not None and settled_at is not None:
            for feature in self.features.having("settled"):
                self.spawn(self._tell_settled(feature, node_id, outcome, settled_at))

    async def _tell_settled(
        self, feature: Feature, node_id: str, outcome: Outcome, settled_at: float
    ) -> None:
        # A revive may have taken the outcome back since (and the node may have settled
        # again, announcing that itself): react only to the settlement still standing.
        row = await self.store.node(node_id)
        if row is None or row["settled_at"] != settled_at:
            return
        try:
            await feature.settled(node_id, outcome)
        except Exception:  # one feature failing must not stop the others
            log.exception("reacting to the settlement of node %s failed", node_id)

    def _wake_outcome_polls(self, node_id: str) -> None:
        """Answer the outcome polls waiting on the node: it settled, here or (its
        ``node.settled`` relayed here) in another daemon."""
        event = self._settled.pop(node_id, None)
        if event is not None:
            event.set()

    def _release(self, node_id: str) -> None:
        """Tell the features (in the background) that the node's status became settled."""
        for feature in self.features.having("released"):
            self.spawn(feature.released(node_id))

    # -- actions -----------------------------------------------------------------

    async def message(
        self, node_id: str, body: str, *, extra: Mapping[str, Any] | None = None
    ) -> api.MessageAccepted:
        """Queue ``body`` for the node: a dormant node wakes, a running one reads it next turn.

        ``extra`` keys are set on the node in the transaction that queues the message.
        """
        async with self._lock(node_id):
            row = await self.row(node_id)
            if row["status"] in SETTLED:
                raise ApiError(
                    409,
                    "node_settled",
                    f"node {node_id!r} is {row['status']}: it takes no messages",
                )
            # Relaunching; a removed worktree (no new run) ...
            for feature in self.features.having("check_message"):
                feature.check_message(row)
            return await self.deliver(row, body, extra=extra)

    async def deliver(
        self, row: NodeRow, body: str, *, extra: Mapping[str, Any] | None = None
    ) -> api.MessageAccepted:
        """Queue ``body`` for an unsettled node and wake it unless it is running.

        A node that never ran (``no_kickoff``) reads its prompt first. The caller
        holds :meth:`locked` and has checked the node may take it.
        """
        node_id = row["node_id"]
        if row["status"] != "running" and row["runs"] == 0 and row["prompt"] is not None:
            # Created with no_kickoff: its brief was never sent, and comes first.
            await self.store.queue_prompt(node_id, row["prompt"])
        message_id = await self.store.add_message(node_id, body, extra=extra)
        # A wake-up another daemon won (or a run going) reads the message from the inbox.
        if row["status"] == "running" or not await self.start_next_run(node_id):
            return api.MessageAccepted(node_id=node_id, message_id=message_id, delivery="queued")
        return api.MessageAccepted(node_id=node_id, message_id=message_id, delivery="woke")

    async def interrupt(self, node_id: str, by: str = "request") -> api.Node:
        """Stop the node's current turn; the node stays, ``interrupted``, and can be messaged.

        ``by`` says who interrupted (``request``: an API call; a node's id: that node),
        kept as ``extra["interrupted_by"]``: revive-all leaves requested stops alone.
        """
        async with self._lock(node_id):
            row = await self.row(node_id)
            status = row["status"]
            if status != "running":
                # The seed's codes: a node waiting for a message is ``node_dormant``, a
                # settled one ``node_settled``; an interrupted one is ``node_not_running``.
                code = (
                    "node_dormant"
                    if status == "dormant"
                    else "node_settled"
                    if status in SETTLED
                    else "node_not_running"
                )
                hint = " (it waits for a message: send one to wake it)"
                hint = hint if code == "node_dormant" else ""
                raise ApiError(
                    409, code, f"node {node_id!r} is {status}: nothing to interrupt{hint}"
                )
            await self.store.merge_extra(node_id, interrupted_by=by)
        await self.stop_run(node_id, row["runs"], Stop(kind="interrupted"))
        return await self.node(node_id)

    async def close(
        self, node_id: str, reason: str | None = None, *, quiet: bool = False
    ) -> api.Node:
        """Cancel the node and the subtree it owns; terminal. Closing a settled node is a no-op.

        ``quiet``: its outcome is not delivered to its parent (the parent closed it).
        """
        await self.row(node_id)
        await self.close_subtree(node_id, "cancelled", reason or "closed on request", quiet=quiet)
        return await self.node(node_id)

    async def close_subtree(
        self, node_id: str, reason: str, message: str, *, quiet: bool = False
    ) -> None:
        """Settle the node (``cancelled`` with ``reason``), then the subtree it owns;
        ``quiet``: closed from above, so its outcome is not delivered to its parent
        (see ``_orchestration``)."""
        await self._close_one(node_id, reason, message, quiet)
        # Listed again until none is new: a child created just before this node
        # settled is found (none can be created after: see create).
        closed: set[str] = set()
        while fresh := [c for c in await self.store.children(node_id) if c not in closed]:
            for child in fresh:
                closed.add(child)
                why = f"its parent {node_id} was closed"
                await self.close_subtree(child, "cancelled", why, quiet=True)

    async def _close_one(self, node_id: str, reason: str, message: str, quiet: bool) -> None:
        row = await self.store.node(node_id)
        if row is None or row["status"] in SETTLED:
            return
        if quiet:
            for feature in self.features.having("quiet"):
                await feature.quiet(node_id)
        stop = Stop(kind="closed", reason=reason, message=message)
        if row["status"] == "running":
            await self.stop_run(node_id, row["runs"], stop)
            row = await self.store.node(node_id)
            if row is None or row["status"] in SETTLED:
                return
            if row["status"] == "running" and node_id in self.active:
                return  # still winding down; its run settles it with this stop
            # Either the run ended on its own just before the stop reached it (dormant
            # now), or no run of it is going here at all (its workflow failed): the close
            # settles it directly, and a run that starts later finds it settled.
        await self._settle_idle(node_id, stop, "cancelled")

    async def _settle_idle(self, node_id: str, stop: Stop, status: str) -> None:
        """Settle a node no run of which is going here, and say so: its outcome and
        status are written in one transaction with their events (see ``EventLog.settle``),
        so a kill at any instant leaves both or neither."""
        outcome = failure_outcome(stop)
        async with self._lock(node_id):
            row = await self.store.node(node_id)
            if row is None or row["status"] in SETTLED:
                return  # settled meanwhile (its run's end, or a close racing this one)
            await self.events.prime(node_id)
            await self.events.repair_status(node_id, row["status"])  # lost to a SIGKILL?
            await self.events.settle(node_id, outcome, status)
            _crash_if_asked()
        await self._after_settling(node_id, outcome)
        await self._disarm_if_settled(node_id)
        # Keyed on the status, not the outcome: a resident root that answered kept an
        # outcome while dormant, so closing it settles no new one (and fires no hooks).
        self._release(node_id)

    async def stop_run(self, node_id: str, run: int, stop: Stop) -> None:
        """Stop the running conversation and wait (a little) for its run to save its end
        (a run still waiting in the queue is withdrawn: it never begins)."""
        active = self.active.get(node_id)
        if active is None:
            # Still waiting in the queue: withdrawn, it never begins anywhere, and the node
            # takes the status its run would have stopped with, in the same transaction
            # (a close's settlement is its caller's).
            status = _WITHDRAWN_STATUS.get(stop.kind)
            workflow = run_workflow_id(node_id, run)
            if await self.store.withdraw_queued(workflow, node_id, status=status):
                if status is not None:
                    await self.events.prime(node_id)
                    self.events.publish(node_id, "node.status.changed", {"status": status})
                return
        if active is None:
            # Its workflow has not reached this process yet (just launched or resuming):
            # it takes the stop as it starts.
            self._early_stops[node_id] = (run, stop)
            registered = self._registered.setdefault(node_id, asyncio.Event())
            if self.remote.enabled:
                # Or it is going in another daemon on the database: that one applies it.
                await self.remote.stop(node_id, run, stop, registered)
            else:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(registered.wait(), ACK_TIMEOUT)
            active = self.active.get(node_id)
            if active is None:
                self._early_stops.pop(node_id, None)
                return
        else:
            active.stop = stop
        # A resumed run replays its recorded steps first; cutting into the replay would
        # leave its steps out of line with the record, so the stop waits for it.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(active.steps.caught_up.wait(), 10)
        if active.task is not None:
            active.task.cancel()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(active.ended.wait(), 10)

    async def update_config(self, node_id: str, patch: api.NodeConfigPatch) -> api.Node:
        """Change the node's model, name, description or deadline."""
        row = await self.row(node_id)
        values: dict[str, Any] = {}
        fields = patch.model_fields_set
        if "model" in fields:
            await self.prepare_model(patch.model)
            values["model"] = patch.model
            active = self.active.get(node_id)
            if active is not None:
                active.model = patch.model
        for name in ("name", "description"):
            if name in fields:
                values[name] = getattr(patch, name)
        if "deadline" in fields:
            seconds = check_duration(patch.deadline)
            values["deadline_at"] = time.time() + seconds if seconds is not None else None
            if row["status"] not in SETTLED:
                self._disarm_deadline(node_id)
                if seconds is not None:
                    self._arm_deadline(node_id, seconds)
        if values:
            await self.store.update_node(node_id, **values)
            # Merged: other writers' keys of ``extra`` stay.
            merged: NodeExtra = {}
            if "deadline" in fields:
                merged["deadline_seconds"] = seconds
            if "model" in fields:  # an explicit choice, passed on to forks and children
                merged["model_given"] = patch.model
            if merged:
                await self.store.merge_extra(node_id, **merged)
        return await self.node(node_id)

    async def submit_result(self, node_id: str, value: Any) -> api.ResultAccepted:
        """Accept the node's structured result if it matches the schema (``422`` otherwise)."""
        row = await self.row(node_id)
        schema = row["output_schema"]
        if schema is None:
            raise ApiError(409, "no_output_schema", f"node {node_id!r} was given no output_schema")
        if row["status"] in SETTLED or row["settled_at"] is not None:
            raise ApiError(409, "node_settled", f"node {node_id!r} has already settled")
        validator = jsonschema.Draft202012Validator(schema)
        problems = [
            f"{'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}"
            for e in sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        ]
        if problems:
            raise ApiError(
                422, "invalid_result", "the result does not match the output schema", problems
            )
        await self.store.update_node(node_id, pending_result={"kind": "result", "value": value})
        return api.ResultAccepted(node_id=node_id)

    async def decline(self, node_id: str, reason: str, code: str | None, retryable: bool) -> None:
        """Record the node's honest refusal; it settles as ``declined`` when its turn ends."""
        declined = {"reason": reason, "code": code, "retryable": retryable}
        await self.store.update_node(
            node_id, pending_result={"kind": "declined", "declined": declined}
        )

    # -- deadlines ---------------------------------------------------------------

    async def set_deadline(self, node_id: str, seconds: float | None) -> None:
        """Give an unsettled node a deadline ``seconds`` from now (``None``: none), armed."""
        at = time.time() + seconds if seconds is not None else None
        await self.store.update_node(node_id, deadline_at=at)
        self._disarm_deadline(node_id)
        if seconds is not None:
            self._arm_deadline(node_id, seconds)

    def _arm_deadline(self, node_id: str, delay: float) -> None:
        self._disarm_deadline(node_id)
        loop = asyncio.get_running_loop()
        self._deadlines[node_id] = loop.call_later(
            max(delay, 0.0), lambda: self.spawn(self._expire(node_id))
        )

    def _disarm_deadline(self, node_id: str) -> None:
        handle = self._deadlines.pop(node_id, None)
        if handle is not None:
            handle.cancel()

    async def _disarm_if_settled(self, node_id: str) -> None:
        # A revive may have un-settled the node and armed its deadline again meanwhile.
        row = await self.store.node(node_id)
        if row is None or row["settled_at"] is not None:
            self._disarm_deadline(node_id)

    async def _expire(self, node_id: str) -> None:
        self._deadlines.pop(node_id, None)
        try:
            await self.close_subtree(node_id, "deadline_exceeded", "the node's deadline passed")
        except Exception:
            log.exception("closing node %s at its deadline failed", node_id)

    # -- helpers for the workflow -----------------------------------------------

    @contextlib.asynccontextmanager
    async def locked(self, node_id: str) -> AsyncIterator[None]:
        """Hold the node's lock (messages and run ends never interleave)."""
        async with self._lock(node_id):
            yield
