"""The daemons sharing one database: each one's row and heartbeat, and the takeover of
the runs of one that died.

Every daemon has a DBOS executor id of its own, kept in its ``HERON_HOME``, and a row of
``heron_daemons`` it beats every ``HERON_HEARTBEAT`` seconds. A daemon silent for
:data:`DEAD_AFTER` heartbeats, or stopped, is taken over by one live daemon (a claim only
one can win): its pending workflows go back to DBOS's queues for the live daemons to run,
its idle nodes' deadlines are armed, and its running nodes that have no workflow get one.
The design is in ARCHITECTURE.md (``nodes/``: the daemons sharing a database).
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import secrets
import signal
import socket
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa
from dbos import DBOS

from ... import api
from ..._core.files import write_text_atomically
from ..._core.version import __version__ as version
from ..db import Row, daemons, nodes
from ._rows import when
from ._runs import run_workflow_id

if TYPE_CHECKING:
    from ._engine import Engine

__all__ = [
    "DEAD_AFTER",
    "EXECUTOR_FILE",
    "FORGET_AFTER",
    "LEGACY_EXECUTOR",
    "NOW_QUEUE",
    "Cluster",
    "claim_recovery",
    "executor_id",
    "requeue_direct",
]

log = logging.getLogger("heron.runtime")

EXECUTOR_FILE = "executor-id"
"""The file under ``HERON_HOME`` holding the daemon's DBOS executor id."""

LEGACY_EXECUTOR = "local"
"""The executor id DBOS gives every process by default: the workflows of a daemon from
before executor ids were its own carry it, and are taken over at every start."""

NOW_QUEUE = "heron.now"
"""The DBOS queue, without a limit, of a daemon with workers: the runs its front does not
start itself but that nothing must queue behind (children, wake-ups, repairs), and those a
dead worker started in its process; a worker starts each at its next look
(``HERON_QUEUE_POLL``), so a parent never waits on a child stuck behind it."""

DEAD_AFTER = 3
"""Heartbeats a daemon may miss before the others take over its runs."""

FORGET_AFTER = 24 * 3600.0
"""Seconds a daemon that stopped, or was taken over, stays listed after its last beat."""

_FAILED = frozenset({"ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"})
"""DBOS statuses of a workflow that will never end its node's run."""

_IDLE = ("dormant", "interrupted")


def executor_id(home: Path) -> str:
    """The DBOS executor id of the daemon on ``home``: read from :data:`EXECUTOR_FILE`,
    made up (host name and random hex) and kept there the first time."""
    path = home / EXECUTOR_FILE
    try:
        kept = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        kept = ""
    if kept:
        return kept
    host = re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname().split(".")[0])[:32] or "host"
    made = f"{host}-{secrets.token_hex(6)}"
    write_text_atomically(path, made + "\n")
    return made


def _now(dialect: sa.Dialect) -> sa.ColumnElement[float]:
    """The database's clock in Unix seconds: every daemon reads the same one."""
    if dialect.name == "postgresql":
        return sa.cast(sa.extract("epoch", sa.func.clock_timestamp()), sa.Float)
    return (sa.func.julianday("now") - 2440587.5) * 86400.0


def _workflows(dialect: sa.Dialect) -> sa.TableClause:
    """DBOS's ``workflow_status`` (schema ``dbos`` on PostgreSQL), the columns read here."""
    return sa.table(
        "workflow_status",
        sa.column("workflow_uuid", sa.String),
        sa.column("executor_id", sa.String),
        sa.column("status", sa.String),
        sa.column("queue_name", sa.String),
        schema="dbos" if dialect.name == "postgresql" else None,
    )


def _takeable(conn: sa.Connection, me: str, bound: float) -> sa.ColumnElement[bool]:
    """A row ``me`` may take over: of a daemon of this version that is gone (stopped, or
    silent for longer than ``bound`` seconds) and nobody claimed, or one ``me`` claimed
    and has not finished taking over (it stopped, or inherited the claim of a dead one)."""
    now = _now(conn.dialect)
    gone = sa.or_(daemons.c.stopped_at.is_not(None), daemons.c.heartbeat_at < now - bound)
    return sa.and_(
        daemons.c.executor_id != me,
        daemons.c.version == version,
        sa.or_(
            sa.and_(daemons.c.recovered_by.is_(None), gone),
            sa.and_(daemons.c.recovered_by == me, daemons.c.recovered_at.is_(None)),
        ),
    )


def _join(conn: sa.Connection, row: Row) -> None:
    """Put this daemon's row in place of any an earlier start of it left."""
    now = _now(conn.dialect)
    conn.execute(daemons.delete().where(daemons.c.executor_id == row["executor_id"]))
    conn.execute(
        daemons.insert().values(**row, started_at=now, heartbeat_at=now, running=0),
    )


def _beat(conn: sa.Connection, me: str, running: int) -> bool:
    """Beat; ``False`` if this daemon's row says it is gone (another took it over)."""
    mine = sa.and_(
        daemons.c.executor_id == me,
        daemons.c.recovered_by.is_(None),
        daemons.c.stopped_at.is_(None),
    )
    beat = daemons.update().where(mine).values(heartbeat_at=_now(conn.dialect), running=running)
    return conn.execute(beat).rowcount == 1


def _leave(conn: sa.Connection, me: str) -> None:
    now = _now(conn.dialect)
    conn.execute(
        daemons.update()
        .where(daemons.c.executor_id == me)
        .values(stopped_at=now, heartbeat_at=now, running=0)
    )


def _gone(conn: sa.Connection, me: str, bound: float) -> list[str]:
    """The daemons ``me`` may take over now (see :func:`_takeable`)."""
    query = sa.select(daemons.c.executor_id).where(_takeable(conn, me, bound))
    return [r[0] for r in conn.execute(query)]


def claim_recovery(conn: sa.Connection, dead: str, me: str, bound: float) -> Row | None:
    """Claim the takeover of ``dead``'s runs for ``me``, if ``dead`` is gone (stopped, or
    silent for ``bound`` seconds) and nobody claimed it: one conditional update, so of
    daemons claiming at once exactly one wins. The claims ``dead`` had not finished are
    ``me``'s from then on. ``dead``'s row as claimed, or ``None``."""
    claim = daemons.update().where(daemons.c.executor_id == dead, _takeable(conn, me, bound))
    if conn.execute(claim.values(recovered_by=me)).rowcount != 1:
        return None
    conn.execute(
        daemons.update()
        .where(daemons.c.recovered_by == dead, daemons.c.recovered_at.is_(None))
        .values(recovered_by=me)
    )
    found = conn.execute(sa.select(daemons).where(daemons.c.executor_id == dead)).first()
    return dict(found._mapping) if found is not None else None


def _recovered(conn: sa.Connection, dead: str, me: str) -> None:
    """Mark ``me``'s takeover of ``dead`` finished."""
    conn.execute(
        daemons.update()
        .where(daemons.c.executor_id == dead, daemons.c.recovered_by == me)
        .values(recovered_at=_now(conn.dialect))
    )


def _listed(conn: sa.Connection) -> tuple[float, list[Row]]:
    now = float(conn.execute(sa.select(_now(conn.dialect))).scalar_one())
    rows = conn.execute(sa.select(daemons).order_by(daemons.c.started_at))
    return now, [dict(r._mapping) for r in rows]


def _forget(conn: sa.Connection) -> None:
    """Delete the rows of daemons gone for good over :data:`FORGET_AFTER` ago."""
    conn.execute(
        daemons.delete().where(
            sa.or_(
                daemons.c.recovered_at.is_not(None),
                sa.and_(daemons.c.stopped_at.is_not(None), daemons.c.recovered_by.is_(None)),
            ),
            daemons.c.heartbeat_at < _now(conn.dialect) - FORGET_AFTER,
        )
    )


def requeue_direct(conn: sa.Connection, executor: str) -> None:
    """Put ``executor``'s pending runs that no queue started in :data:`NOW_QUEUE`: a
    worker's (or a front's) crashed runs, which DBOS would otherwise hand back to its own
    queue, which every process takes from (the front too)."""
    table = _workflows(conn.dialect)
    if not sa.inspect(conn).has_table(table.name, schema=table.schema):
        return  # DBOS has not launched on this database yet: nothing ran
    conn.execute(
        table.update()
        .where(
            table.c.executor_id == executor,
            table.c.status == "PENDING",
            table.c.queue_name.is_(None),
            table.c.workflow_uuid.startswith("heron:"),
        )
        .values(queue_name=NOW_QUEUE)
    )


def _executors(conn: sa.Connection, workflow_ids: Sequence[str]) -> dict[str, str]:
    """The executor id of each of ``workflow_ids`` DBOS has a row for."""
    table = _workflows(conn.dialect)
    found: dict[str, str] = {}
    for start in range(0, len(workflow_ids), 500):
        chunk = list(workflow_ids[start : start + 500])
        query = sa.select(table.c.workflow_uuid, table.c.executor_id).where(
            table.c.workflow_uuid.in_(chunk)
        )
        found.update({r[0]: r[1] for r in conn.execute(query)})
    return found


def _recover(executor: str) -> list[str]:
    """Hand ``executor``'s pending workflows back to DBOS's queues (any live daemon of
    this version dequeues each once); their ids."""
    return [h.get_workflow_id() for h in DBOS._recover_pending_workflows([executor])]


class _Heart(threading.Thread):
    """Beats in a thread of its own, so a busy event loop never makes a live daemon look
    dead; tells the loop if its row says another daemon took it over."""

    def __init__(self, cluster: Cluster, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(name="heron-heartbeat", daemon=True)
        self.cluster = cluster
        self.loop = loop
        self.stopping = threading.Event()

    def run(self) -> None:
        cluster = self.cluster
        while not self.stopping.wait(cluster.interval):
            try:
                with cluster.engine.db.engine.begin() as conn:
                    alive = _beat(conn, cluster.executor_id, len(cluster.engine.active))
            except Exception as exc:  # the database is away: beat again next time
                log.warning("heartbeat failed: %s", exc)
                continue
            if not alive and not self.stopping.is_set():
                self.loop.call_soon_threadsafe(cluster.taken_over)
                return


class Cluster:
    """This daemon among those sharing its database: its row, its heartbeat, the takeover
    of the runs of those that die, and the list ``/v1/status`` shows."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        config = engine.config
        self.front = executor_id(config.home) if config.role == "worker" else None
        """A worker's front: the executor id of the daemon that started it."""
        self.executor_id = executor_id(config.home) + config.process_suffix
        """This daemon's DBOS executor id (the same across its restarts); a worker's is
        its front's with ``-w<n>`` after it."""
        self.interval = engine.config.heartbeat
        """Seconds between heartbeats (``HERON_HEARTBEAT``)."""
        self._heart: _Heart | None = None
        self._watch: asyncio.Task[None] | None = None

    @property
    def bound(self) -> float:
        """Seconds of silence after which a daemon is taken for dead."""
        return self.interval * DEAD_AFTER

    async def join(self) -> None:
        """Write this daemon's row and start beating (before DBOS launches: however long
        the launch takes, nobody takes this daemon for dead meanwhile)."""
        config = self.engine.config
        row = {
            "executor_id": self.executor_id,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "home": str(config.home),
            "socket": str(config.socket_path),
            "version": version,
            "role": config.role,
            "front": self.front,
            "stopped_at": None,
            "recovered_by": None,
            "recovered_at": None,
        }
        await self.engine.db.write(_join, row)
        self._heart = _Heart(self, asyncio.get_running_loop())
        self._heart.start()

    async def adopt_legacy(self) -> None:
        """Take over the pending workflows of a daemon from before executor ids were its
        own (DBOS's default, :data:`LEGACY_EXECUTOR`): a daemon upgraded in place resumes
        its runs. Harmless when several daemons do it at once (DBOS hands each workflow
        back to its queue once)."""
        adopted = await self.engine.db.run(_recover, LEGACY_EXECUTOR)
        if adopted:
            log.info("resuming %d runs recorded before executor ids", len(adopted))

    def start(self) -> None:
        """Start looking for gone daemons to take over (once DBOS has launched)."""
        self._watch = asyncio.create_task(self._watching())

    async def stop(self) -> None:
        """Stop taking over other daemons' runs (first thing in a stop); the heartbeat goes
        on until :meth:`leave`, so nobody takes this one's runs while it winds down."""
        if self._watch is not None:
            self._watch.cancel()
            await asyncio.gather(self._watch, return_exceptions=True)
            self._watch = None

    async def leave(self) -> None:
        """Stop the heartbeat and mark this daemon stopped: its pending runs are the others'
        to take at once (call last, once no step or event of it can be written any more)."""
        heart, self._heart = self._heart, None
        try:
            if heart is not None:
                heart.stopping.set()
                await self.engine.db.run(heart.join, 10)
            await self.engine.db.write(_leave, self.executor_id)
        except Exception:
            log.exception("marking this daemon stopped failed")

    def taken_over(self) -> None:
        """Another daemon took this one's runs (it missed its heartbeats): stop, so no run
        goes on in two daemons at once."""
        log.error(
            "this daemon (%s) missed its heartbeats for %.0f s and another daemon took over "
            "its runs: stopping",
            self.executor_id,
            self.bound,
        )
        os.kill(os.getpid(), signal.SIGTERM)

    async def daemons(self) -> list[api.DaemonInfo]:
        """Every daemon listed in the database, the oldest first."""
        now, rows = await self.engine.db.read(_listed)
        return [
            api.DaemonInfo(
                executor_id=r["executor_id"],
                host=r["host"],
                pid=r["pid"],
                home=r["home"],
                socket=r["socket"],
                version=r["version"],
                started_at=when(r["started_at"]),
                heartbeat_at=when(r["heartbeat_at"]),
                running=r["running"],
                this=r["executor_id"] == self.executor_id,
                alive=(
                    r["stopped_at"] is None
                    and r["recovered_by"] is None
                    and now - r["heartbeat_at"] <= self.bound
                ),
                stopped_at=when(r["stopped_at"]) if r["stopped_at"] is not None else None,
                recovered_by=r["recovered_by"],
                role=r["role"],
                front=r["front"],
            )
            for r in rows
        ]

    async def foreign(self, node_runs: Sequence[tuple[str, int]]) -> set[str]:
        """Which of these nodes' latest runs (node id, run) belong to another live daemon
        (their deadlines are its to keep)."""
        if not node_runs:
            return set()
        owners = await self.engine.db.read(
            _executors, [run_workflow_id(n, r) for n, r in node_runs if r > 0]
        )
        live = {d.executor_id for d in await self.daemons() if d.alive and not d.this}
        return {n for n, r in node_runs if owners.get(run_workflow_id(n, r)) in live}

    async def check(self) -> list[str]:
        """Take over every daemon gone silent or stopped that nobody else has (and those
        whose claims it inherits); the executor ids taken over."""
        db, me = self.engine.db, self.executor_id
        tried: set[str] = set()
        taken: list[str] = []
        while todo := [d for d in await db.read(_gone, me, self.bound) if d not in tried]:
            for dead in todo:
                tried.add(dead)
                row = await db.write(claim_recovery, dead, me, self.bound)
                if row is not None:
                    await self._take_over(row)
                    await db.write(_recovered, dead, me)
                    taken.append(dead)
        return taken

    async def _watching(self) -> None:
        beats = 0
        while True:
            try:
                await self.check()
                if beats % 720 == 0:  # every hour at the default heartbeat
                    await self.engine.db.write(_forget)
            except Exception:
                log.exception("looking for dead daemons failed")
            beats += 1
            await asyncio.sleep(self.interval)

    async def _take_over(self, dead: Row) -> None:
        """Resume a dead daemon's runs (its row claimed by this one)."""
        engine = self.engine
        executor = dead["executor_id"]
        if dead["role"] != "daemon":  # a daemon with workers: its runs go to the workers
            await engine.db.write(requeue_direct, executor)
        recovered = await engine.db.run(_recover, executor)
        log.warning(
            "daemon %s (host %s, pid %s) is gone: its %d pending runs resume here or in "
            "another live daemon",
            executor,
            dead["host"],
            dead["pid"],
            len(recovered),
        )
        now = time.time()
        # Node runs' workflow ids are "heron:<node id>:<run>" (run_workflow_id).
        recovered_nodes = {wid.split(":")[1] for wid in recovered if wid.startswith("heron:")}
        # Deadlines were armed only in the dead daemon's memory: those of the nodes whose
        # runs it had, and of the idle nodes whose last run was its.
        query = sa.select(nodes.c.node_id, nodes.c.runs, nodes.c.deadline_at).where(
            nodes.c.status.in_(["running", *_IDLE]),
            nodes.c.deadline_at.is_not(None),
            nodes.c.warm.is_(None),
        )
        timed = await engine.db.all(query)
        idle = [(r["node_id"], r["runs"]) for r in timed if r["node_id"] not in recovered_nodes]
        owners = await engine.db.read(_executors, [run_workflow_id(n, r) for n, r in idle])
        for r in timed:
            last = owners.get(run_workflow_id(r["node_id"], r["runs"]))
            if r["node_id"] in recovered_nodes or last == executor:
                engine._arm_deadline(r["node_id"], r["deadline_at"] - now)
        # A running node whose run has no workflow (the daemon died between the two) or a
        # failed one. Rows touched within the bound are left alone: a live daemon's node
        # between its insert and its workflow's start.
        stuck = sa.select(nodes.c.node_id, nodes.c.runs).where(
            nodes.c.status == "running",
            nodes.c.warm.is_(None),
            nodes.c.updated_at < now - self.bound,
        )
        for r in await engine.db.all(stuck):
            status = await DBOS.get_workflow_status_async(run_workflow_id(r["node_id"], r["runs"]))
            if status is None or status.status in _FAILED:
                await engine._ensure_run(r["node_id"], r["runs"])
