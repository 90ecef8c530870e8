"""The kernel's node records (nodes, outcomes, messages) over SQLAlchemy Core.

Every method is a coroutine that runs its statements on the database's thread pool
(:class:`~heron.runtime.db._handle.Database`), so the event loop never waits on the
database; each method is one transaction. Features keep their own tables in their
own stores; they read nodes through this one's public methods. The events' table is
the event log's (``events/_store.py``).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Collection, Mapping, Sequence
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from ..db import Database, messages, nodes, outcomes
from ._types import NodeRow, Outcome, StopRequest, as_outcome

__all__ = [
    "COMMANDS_CHANNEL",
    "DuplicateNode",
    "NodeStore",
    "locked_status",
    "queue_in",
    "settle_idle",
]

log = logging.getLogger("heron.runtime")


class DuplicateNode(Exception):
    """A node with that id already exists."""


class NodeStore:
    """Reads and writes the kernel's tables; see the module docstring."""

    def __init__(self, database: Database) -> None:
        self.db = database
        """The daemon's database."""

    # -- nodes ------------------------------------------------------------

    async def insert_node(self, row: NodeRow, first_message: str | None) -> None:
        """Insert a node (and its kickoff message); :class:`DuplicateNode` if the id is taken."""
        await self.db.run(self._insert_node, row, first_message)

    def _insert_node(self, row: NodeRow, first_message: str | None) -> None:
        try:
            with self.db.engine.begin() as conn:
                conn.execute(nodes.insert().values(**row))
                if first_message is not None:
                    conn.execute(
                        messages.insert().values(
                            node_id=row["node_id"], body=first_message, created_at=row["created_at"]
                        )
                    )
        except sa.exc.IntegrityError:
            raise DuplicateNode(row["node_id"]) from None

    async def node(self, node_id: str) -> NodeRow | None:
        """The node's row, or ``None``."""
        found = await self.db.first(sa.select(nodes).where(nodes.c.node_id == node_id))
        return _node_row(found) if found is not None else None

    async def list_nodes(
        self,
        *,
        status: Sequence[str] | None = None,
        root: bool | None = None,
        limit: int | None = None,
        after: tuple[float, str] | None = None,
    ) -> list[NodeRow]:
        """Nodes, oldest first, optionally only those with one of ``status`` and ``root``;
        at most ``limit``, and only those listed after ``after`` (``(created_at, node_id)``
        of the last one already seen)."""
        query = (
            sa.select(nodes)
            .where(nodes.c.warm.is_(None))  # warm-pool nodes are nobody's yet
            .order_by(nodes.c.created_at, nodes.c.node_id)
        )
        if status:
            query = query.where(nodes.c.status.in_(list(status)))
        if root is not None:
            query = query.where(nodes.c.root == root)
        if after is not None:
            created, node_id = after
            query = query.where(
                sa.or_(
                    nodes.c.created_at > created,
                    sa.and_(nodes.c.created_at == created, nodes.c.node_id > node_id),
                )
            )
        if limit is not None:
            query = query.limit(limit)
        return [_node_row(r) for r in await self.db.all(query)]

    async def update_node(self, node_id: str, **values: Any) -> None:
        """Set columns of a node (``updated_at`` too)."""
        await self.db.run(self._update_node, node_id, values)

    def _update_node(self, node_id: str, values: Mapping[str, Any]) -> None:
        with self.db.engine.begin() as conn:
            conn.execute(
                nodes.update()
                .where(nodes.c.node_id == node_id)
                .values(**values, updated_at=time.time())
            )

    async def merge_extra(self, node_id: str, **values: Any) -> None:
        """Set keys of the node's ``extra`` JSON (``None`` removes one), in one transaction
        (so concurrent writers of other keys are not undone)."""
        await self.db.run(self._merge_extra, node_id, values)

    def _merge_extra(self, node_id: str, values: Mapping[str, Any]) -> None:
        with self.db.engine.begin() as conn:
            self._merge_extra_in(conn, node_id, values)

    @staticmethod
    def _merge_extra_in(conn: sa.Connection, node_id: str, values: Mapping[str, Any]) -> None:
        where = nodes.c.node_id == node_id
        # FOR UPDATE: PostgreSQL holds the row until the write (SQLite locks at BEGIN).
        query = sa.select(nodes.c.extra).where(where).with_for_update()
        extra = dict(conn.execute(query).scalar() or {})
        for key, value in values.items():
            if value is None:
                extra.pop(key, None)
            else:
                extra[key] = value
        conn.execute(nodes.update().where(where).values(extra=extra, updated_at=time.time()))

    async def begin_next_run(self, node_id: str, runs: int) -> bool:
        """Mark the node running its run ``runs + 1``, if it is still not running and its
        last run is ``runs``; ``False`` if another wake-up took it first (one statement:
        of two daemons waking it at once, one wins)."""
        return await self.db.write(_begin_next_run, node_id, runs)

    async def request_stop(self, node_id: str, run: int, stop: Mapping[str, Any]) -> None:
        """Ask the daemon running the node's run ``run`` to stop it with ``stop`` (a
        :class:`~._runs.Stop`'s fields): kept as ``extra["stop_request"]`` and, on
        PostgreSQL, notified on :data:`COMMANDS_CHANNEL`, in one transaction."""
        await self.db.write(_request_stop, node_id, run, stop)

    async def stop_requests(self, node_ids: Collection[str]) -> dict[str, StopRequest]:
        """The stop requests kept on those nodes (see :meth:`request_stop`), by node."""
        rows = await self.nodes_by_id(node_ids)
        found: dict[str, StopRequest] = {}
        for node_id, row in rows.items():
            request = (row["extra"] or {}).get("stop_request")
            if isinstance(request, dict):
                found[node_id] = request
        return found

    async def claim_delivery(
        self, node_id: str, settled_at: float, how: str, by: str | None = None
    ) -> bool:
        """Claim the delivery of the node's outcome of ``settled_at`` to its parent, once.

        One transaction: ``extra["delivered"]`` is set to ``{settled_at, how, by}``
        unless it already holds a claim on that settlement. ``True`` for the one
        winner (and for the same ``by`` asking again: a step DBOS runs again after a
        crash); ``False`` otherwise. A ``closed`` claim made before the node settled
        (``settled_at`` ``None``) is bound to its next settlement, which it takes.
        """
        return await self.db.run(self._claim_delivery, node_id, settled_at, how, by)

    def _claim_delivery(self, node_id: str, settled_at: float, how: str, by: str | None) -> bool:
        with self.db.engine.begin() as conn:
            where = nodes.c.node_id == node_id
            # FOR UPDATE: PostgreSQL holds the row until the write (SQLite locks at BEGIN),
            # so two claimers never both see "not yet claimed".
            query = sa.select(nodes.c.extra).where(where).with_for_update()
            extra = dict(conn.execute(query).scalar() or {})
            claim = extra.get("delivered")
            if isinstance(claim, dict):
                if claim.get("settled_at") == settled_at:
                    return by is not None and claim.get("by") == by
                if claim.get("settled_at") is None and claim.get("how") == "closed":
                    extra["delivered"] = {**claim, "settled_at": settled_at}
                    conn.execute(nodes.update().where(where).values(extra=extra))
                    return False
            extra["delivered"] = {"settled_at": settled_at, "how": how, "by": by}
            conn.execute(nodes.update().where(where).values(extra=extra))
            return True

    async def add_usage(
        self, node_id: str, *, turns: int, input_tokens: int, output_tokens: int
    ) -> None:
        """Count a finished model turn's tokens on the node."""
        await self.db.run(self._add_usage, node_id, turns, input_tokens, output_tokens)

    def _add_usage(self, node_id: str, turns: int, input_tokens: int, output_tokens: int) -> None:
        with self.db.engine.begin() as conn:
            conn.execute(
                nodes.update()
                .where(nodes.c.node_id == node_id)
                .values(
                    turns=nodes.c.turns + turns,
                    input_tokens=nodes.c.input_tokens + input_tokens,
                    output_tokens=nodes.c.output_tokens + output_tokens,
                    updated_at=time.time(),
                )
            )

    async def nodes_by_id(self, node_ids: Collection[str]) -> dict[str, NodeRow]:
        """The rows of those nodes (that exist), by id, in one query."""
        ids = list(node_ids)
        if not ids:
            return {}
        query = sa.select(nodes).where(nodes.c.node_id.in_(ids))
        return {r["node_id"]: _node_row(r) for r in await self.db.all(query)}

    async def counts_by_status(self) -> dict[str, int]:
        """How many nodes are in each status."""
        return await self.db.run(self._counts)

    def _counts(self) -> dict[str, int]:
        query = (
            sa.select(nodes.c.status, sa.func.count())
            .where(nodes.c.warm.is_(None))  # warm-pool nodes are nobody's yet
            .group_by(nodes.c.status)
        )
        with self.db.engine.connect() as conn:
            return {status: count for status, count in conn.execute(query)}

    async def unsettled(self) -> list[NodeRow]:
        """Nodes without an outcome (for deadlines and wake-ups after a restart)."""
        query = sa.select(nodes).where(nodes.c.settled_at.is_(None), nodes.c.warm.is_(None))
        return [_node_row(r) for r in await self.db.all(query)]

    async def children(self, node_id: str) -> list[str]:
        """Ids of the nodes whose parent is ``node_id``."""
        # A warm-pool node pre-started for a parent's children is not its child yet.
        query = sa.select(nodes.c.node_id).where(nodes.c.parent == node_id, nodes.c.warm.is_(None))
        return [r["node_id"] for r in await self.db.all(query)]

    async def child_rows(self, node_id: str) -> list[NodeRow]:
        """The rows of the nodes whose parent is ``node_id``, oldest first (one query)."""
        query = (
            sa.select(nodes)
            .where(nodes.c.parent == node_id, nodes.c.warm.is_(None))
            .order_by(nodes.c.created_at, nodes.c.node_id)
        )
        return [_node_row(r) for r in await self.db.all(query)]

    # -- the warm pool ------------------------------------------------------

    async def claim_warm(self, key: str, row: Mapping[str, Any], prompt: str) -> bool:
        """Give the warm node ``row["node_id"]`` (of launch tuple ``key``) the create's
        fields and its prompt, in one transaction; ``False`` if it is no longer a warm
        node of ``key`` (discarded)."""
        return await self.db.write(_claim_warm, key, row, prompt)

    async def delete_warm(self, node_ids: Sequence[str] | None) -> int:
        """Delete warm rows (those listed, or all): they never had a message or event."""
        return await self.db.write(_delete_warm, node_ids)

    async def warm_without_cwd(self) -> list[str]:
        """Ids of the stored warm nodes without a ``cwd`` (working in their own workspace)."""
        query = sa.select(nodes.c.node_id).where(nodes.c.warm.is_not(None), nodes.c.cwd.is_(None))
        return [r["node_id"] for r in await self.db.all(query)]

    # -- messages ---------------------------------------------------------

    async def add_message(
        self, node_id: str, body: str, *, extra: Mapping[str, Any] | None = None
    ) -> int:
        """Queue a message for a node; returns its id.

        ``extra`` keys are set on the node (as :meth:`merge_extra` does) in the same
        transaction: a message that ends a state (a wait) is queued exactly when the
        state ends, even if the daemon dies right after.
        """
        return await self.db.run(self._add_message, node_id, body, extra)

    def _add_message(self, node_id: str, body: str, extra: Mapping[str, Any] | None) -> int:
        with self.db.engine.begin() as conn:
            result = conn.execute(
                messages.insert().values(node_id=node_id, body=body, created_at=time.time())
            )
            if extra:
                self._merge_extra_in(conn, node_id, extra)
            key = result.inserted_primary_key
            assert key is not None
            return int(key[0])

    async def queue_prompt(self, node_id: str, prompt: str) -> None:
        """Queue the prompt of a node created with ``no_kickoff`` unless it has messages
        already (two daemons messaging it at once queue it once: the node's row is held)."""
        await self.db.write(_queue_prompt, node_id, prompt)

    async def queue_first(self, node_id: str, body: str) -> None:
        """Queue ``body`` ahead of the node's unread messages (relaunch-root's prompt).

        The unread messages are queued again after it, in their order, with new ids.
        """
        await self.db.run(self._queue_first, node_id, body)

    def _queue_first(self, node_id: str, body: str) -> None:
        unread = messages.c.node_id == node_id, messages.c.claimed_run.is_(None)
        with self.db.engine.begin() as conn:
            stale = conn.execute(
                sa.select(messages.c.body, messages.c.created_at)
                .where(*unread)
                .order_by(messages.c.message_id)
            ).all()
            conn.execute(messages.delete().where(*unread))
            rows = [{"body": body, "created_at": time.time()}]
            rows += [{"body": r.body, "created_at": r.created_at} for r in stale]
            conn.execute(messages.insert(), [{"node_id": node_id, **r} for r in rows])

    async def claim_messages(self, node_id: str, run: int, step: int = 0) -> list[str]:
        """Take every unclaimed message of a node into ``run`` at ``step``, oldest first.

        Idempotent per ``(run, step)``: asked again, it returns what it claimed then.
        """
        return await self.db.run(self._claim, node_id, run, step)

    def _claim(self, node_id: str, run: int, step: int) -> list[str]:
        with self.db.engine.begin() as conn:
            return _claim(conn, node_id, run, step)

    async def read_inbox(self, node_id: str, run: int, key: int, *, claim: bool) -> list[str]:
        """The messages a run takes between two turns, oldest first: those it claimed
        under ``key`` before (the same answer again), else, with ``claim``, every
        unclaimed one, claimed now under ``key``. Only a read when there is none.

        Not a workflow step: a run replaying what it recorded passes ``claim=False``
        and gets exactly what it took then (``key`` is its count of such reads, the
        same each time), so it never takes a message its recorded turns did not see.
        """
        return await self.db.run(self._read_inbox, node_id, run, key, claim)

    def _read_inbox(self, node_id: str, run: int, key: int, claim: bool) -> list[str]:
        with self.db.engine.begin() as conn:
            found = conn.execute(
                sa.select(messages.c.message_id, messages.c.body, messages.c.claimed_run).where(
                    messages.c.node_id == node_id,
                    sa.or_(
                        messages.c.claimed_run.is_(None),
                        sa.and_(messages.c.claimed_run == run, messages.c.claimed_step == key),
                    ),
                )
            ).all()
            taken = sorted((r for r in found if r.claimed_run is not None), key=_by_id)
            if taken:
                return [r.body for r in taken]
            if not claim or not found:
                return []
            return _claim(conn, node_id, run, key)

    async def withdraw_queued(
        self, workflow_id: str, node_id: str, *, status: str | None = None
    ) -> bool:
        """Take a run's workflow out of the run queue if it is still waiting there (no
        daemon has taken it up): it never runs. With ``status``, the node takes it in the
        same transaction. Whether it was withdrawn.

        DBOS has no "cancel unless started": this is its cancel, made conditional on
        the workflow being ``ENQUEUED``, so it cannot race a daemon dequeuing it.
        """
        return await self.db.run(self._withdraw_queued, workflow_id, node_id, status)

    def _withdraw_queued(self, workflow_id: str, node_id: str, status: str | None) -> bool:
        schema = "dbos." if self.db.engine.dialect.name == "postgresql" else ""
        now_ms = int(time.time() * 1000)
        withdraw = sa.text(
            f"UPDATE {schema}workflow_status SET status = 'CANCELLED', owner_xid = NULL, "
            "queue_name = NULL, deduplication_id = NULL, started_at_epoch_ms = NULL, "
            "updated_at = :now, completed_at = :now "
            "WHERE workflow_uuid = :id AND status = 'ENQUEUED'"
        )
        with self.db.engine.begin() as conn:
            if conn.execute(withdraw, {"id": workflow_id, "now": now_ms}).rowcount != 1:
                return False
            if status is not None:
                conn.execute(
                    nodes.update()
                    .where(nodes.c.node_id == node_id)
                    .values(status=status, updated_at=time.time())
                )
        return True

    async def recorded_steps(self, workflow_id: str) -> int:
        """How many steps DBOS has recorded for a workflow (a plain read, not a step)."""
        return await self.db.run(self._recorded_steps, workflow_id)

    def _recorded_steps(self, workflow_id: str) -> int:
        schema = "dbos." if self.db.engine.dialect.name == "postgresql" else ""
        query = sa.text(f"SELECT count(*) FROM {schema}operation_outputs WHERE workflow_uuid = :id")
        with self.db.engine.connect() as conn:
            return int(conn.execute(query, {"id": workflow_id}).scalar() or 0)

    # -- runs and outcomes -------------------------------------------------

    async def end_run(
        self,
        node_id: str,
        run: int,
        *,
        state: Any,
        status: str,
        outcome: Outcome | None,
        continue_with_messages: bool,
        step: int = 0,
        record: Mapping[str, Any] | None = None,
    ) -> list[str]:
        """Save a finished run: the conversation, the status and (maybe) the outcome.

        When ``continue_with_messages`` and messages arrived that the run never
        read, they are claimed and returned instead, and the node keeps running;
        otherwise ``[]`` and the node takes ``status`` (settling ``outcome``,
        unless one is already settled — a settled outcome never changes), and
        ``record`` is kept in the node's ``extra["ended"]`` in the same transaction
        (so the run's end step, if run again, can return what it decided).
        """
        return await self.db.run(
            self._end_run,
            node_id,
            run,
            state,
            status,
            outcome,
            continue_with_messages,
            step,
            record,
        )

    def _end_run(
        self,
        node_id: str,
        run: int,
        state: Any,
        status: str,
        outcome: Outcome | None,
        continue_with_messages: bool,
        step: int,
        record: Mapping[str, Any] | None,
    ) -> list[str]:
        now = time.time()
        with self.db.engine.begin() as conn:
            values: dict[str, Any] = {"state": state, "updated_at": now}
            if continue_with_messages:
                unread = _claim(conn, node_id, run, step)
                if unread:
                    conn.execute(nodes.update().where(nodes.c.node_id == node_id).values(**values))
                    return unread
            values["status"] = status
            if outcome is not None:
                # The accepted result is spent once an outcome is settled (or kept).
                values["pending_result"] = None
                if _settle(conn, node_id, outcome, now):
                    values["settled_at"] = now
            if record is not None:  # (read after _settle, which may archive into it)
                extra = conn.execute(
                    sa.select(nodes.c.extra).where(nodes.c.node_id == node_id)
                ).scalar()
                values["extra"] = {**(extra or {}), "ended": dict(record)}
            conn.execute(nodes.update().where(nodes.c.node_id == node_id).values(**values))
        return []

    async def settle(self, node_id: str, outcome: Outcome, status: str) -> bool:
        """Settle a node that is not running; ``False`` if it had already settled."""
        return await self.db.run(self._settle_now, node_id, outcome, status)

    def _settle_now(self, node_id: str, outcome: Outcome, status: str) -> bool:
        with self.db.engine.begin() as conn:
            return settle_idle(conn, node_id, outcome, status)

    async def unsettle(self, node_id: str, **values: Any) -> Outcome | None:
        """Take back a node's outcome (revive, relaunch) and set ``values``, in one transaction.

        The outcome row is deleted and kept, with when it settled and the status the
        node had, at the end of the node's ``extra["previous_outcomes"]``; the node's
        ``settled_at`` is cleared. Returns the outcome taken back (``None`` if there was
        none: then only ``values`` are set).
        """
        return await self.db.run(self._unsettle, node_id, values)

    def _unsettle(self, node_id: str, values: Mapping[str, Any]) -> Outcome | None:
        with self.db.engine.begin() as conn:
            found = conn.execute(
                sa.select(outcomes.c.outcome, outcomes.c.settled_at).where(
                    outcomes.c.node_id == node_id
                )
            ).first()
            update: dict[str, Any] = {**values, "updated_at": time.time()}
            if found is not None:
                # FOR UPDATE (PostgreSQL; SQLite's one writer needs none): no other
                # writer's ``extra`` lands between this read and the write below.
                row = conn.execute(
                    sa.select(nodes.c.extra, nodes.c.status)
                    .where(nodes.c.node_id == node_id)
                    .with_for_update()
                ).one()
                kept = dict(row.extra or {})
                archived = {
                    "outcome": dict(found.outcome),
                    "settled_at": found.settled_at,
                    "status": row.status,
                }
                # The archive is the database's, whatever ``extra`` the caller passes.
                extra = {**kept, **update.get("extra", {})}
                extra["previous_outcomes"] = [*kept.get("previous_outcomes", []), archived]
                update["extra"] = extra
                update["settled_at"] = None
                conn.execute(outcomes.delete().where(outcomes.c.node_id == node_id))
            conn.execute(nodes.update().where(nodes.c.node_id == node_id).values(**update))
        return as_outcome(found.outcome) if found is not None else None

    async def outcome(self, node_id: str) -> Outcome | None:
        """A node's settled outcome, or ``None``."""
        query = sa.select(outcomes.c.outcome).where(outcomes.c.node_id == node_id)
        value = await self.db.scalar(query)
        return as_outcome(value) if value is not None else None

    async def step_mark(self, node_id: str) -> str | None:
        """The node's last step whose events were written (with them, by the event log)."""
        value = await self.db.scalar(sa.select(nodes.c.step_mark).where(nodes.c.node_id == node_id))
        return None if value is None else str(value)


COMMANDS_CHANNEL = "heron_commands"
"""The PostgreSQL ``NOTIFY`` channel of stop requests (``{"node_id", "run"}``)."""


def _queue_prompt(conn: sa.Connection, node_id: str, prompt: str) -> None:
    locked_status(conn, node_id)
    queued = sa.select(messages.c.message_id).where(messages.c.node_id == node_id).limit(1)
    if conn.execute(queued).first() is None:
        conn.execute(messages.insert().values(node_id=node_id, body=prompt, created_at=time.time()))


def _begin_next_run(conn: sa.Connection, node_id: str, runs: int) -> bool:
    woken = conn.execute(
        nodes.update()
        .where(nodes.c.node_id == node_id, nodes.c.runs == runs, nodes.c.status != "running")
        .values(status="running", runs=runs + 1, updated_at=time.time())
        .returning(nodes.c.node_id)
    ).first()
    return woken is not None


def _request_stop(conn: sa.Connection, node_id: str, run: int, stop: Mapping[str, Any]) -> None:
    request: StopRequest = {"run": run, "stop": dict(stop)}
    NodeStore._merge_extra_in(conn, node_id, {"stop_request": request})
    if conn.dialect.name == "postgresql":
        payload = json.dumps({"node_id": node_id, "run": run})
        conn.execute(sa.select(sa.func.pg_notify(COMMANDS_CHANNEL, payload)))


_WARM_KEPT = ("node_id", "warm", "events_reserved", "step_mark")
"""Columns a claim leaves as the warm node has them (``warm`` is cleared on its own)."""


def locked_status(conn: sa.Connection, node_id: str) -> str | None:
    """The node's status (``None``: no such node), its row held until the caller's
    transaction ends (PostgreSQL; SQLite's writers lock at ``BEGIN``): a feature writing
    rows of its own only while the node has not settled reads it so."""
    query = sa.select(nodes.c.status).where(nodes.c.node_id == node_id).with_for_update()
    status = conn.execute(query).scalar()
    return None if status is None else str(status)


def queue_in(conn: sa.Connection, node_id: str, body: str, now: float) -> None:
    """Queue a message for the node in the caller's transaction (nothing if it is gone);
    one created with ``no_kickoff`` that never ran gets its prompt queued first."""
    node = conn.execute(
        sa.select(nodes.c.status, nodes.c.runs, nodes.c.prompt).where(nodes.c.node_id == node_id)
    ).first()
    if node is None:
        return  # the node is gone: nobody to tell
    if node.status != "running" and node.runs == 0 and node.prompt is not None:
        # Created with no_kickoff: its brief was never sent, and comes first.
        conn.execute(messages.insert().values(node_id=node_id, body=node.prompt, created_at=now))
    conn.execute(messages.insert().values(node_id=node_id, body=body, created_at=now))


def _node_row(values: Mapping[Any, Any]) -> NodeRow:
    """A row read from ``heron_nodes``, typed."""
    return cast(NodeRow, dict(values))


def _claim_warm(conn: sa.Connection, key: str, row: Mapping[str, Any], prompt: str) -> bool:
    # The create's fields: not the warm run's own bookkeeping (its event numbers, step).
    values = {k: v for k, v in row.items() if k not in _WARM_KEPT}
    done = conn.execute(
        nodes.update()
        .where(nodes.c.node_id == row["node_id"], nodes.c.warm == key)
        .values(**values, warm=None)
    )
    if done.rowcount != 1:
        return False
    conn.execute(
        messages.insert().values(node_id=row["node_id"], body=prompt, created_at=row["created_at"])
    )
    return True


def _delete_warm(conn: sa.Connection, node_ids: Sequence[str] | None) -> int:
    warm = nodes.c.warm.is_not(None)
    where = warm if node_ids is None else sa.and_(warm, nodes.c.node_id.in_(list(node_ids)))
    return conn.execute(nodes.delete().where(where)).rowcount


def _by_id(row: Any) -> int:
    return int(row.message_id)


def _claim(conn: sa.Connection, node_id: str, run: int, step: int) -> list[str]:
    before = conn.execute(
        sa.select(messages.c.message_id, messages.c.body).where(
            messages.c.node_id == node_id,
            messages.c.claimed_run == run,
            messages.c.claimed_step == step,
        )
    ).all()
    if before:  # this step ran before (DBOS re-ran it after a crash): same answer
        return [r.body for r in sorted(before, key=lambda r: r.message_id)]
    # One statement: concurrent claimers (PostgreSQL runs them side by side) each
    # take a message only while it is still unclaimed, so none is delivered twice.
    claimed = conn.execute(
        messages.update()
        .where(messages.c.node_id == node_id, messages.c.claimed_run.is_(None))
        .values(claimed_run=run, claimed_step=step)
        .returning(messages.c.message_id, messages.c.body)
    ).all()
    return [r.body for r in sorted(claimed, key=lambda r: r.message_id)]


_SETTLED_STATUSES = ("completed", "failed", "cancelled")
"""Statuses a node never leaves (``_runs.SETTLED``)."""


def settle_idle(conn: sa.Connection, node_id: str, outcome: Outcome, status: str) -> bool:
    """Settle a node no run of which is going (its outcome, status and ``settled_at``),
    in ``conn``'s transaction; ``False`` if it keeps the outcome it has (it has settled
    for good)."""
    now = time.time()
    settled = _settle(conn, node_id, outcome, now)
    values: dict[str, Any] = {"status": status, "updated_at": now}
    if settled:
        values["settled_at"] = now
    conn.execute(nodes.update().where(nodes.c.node_id == node_id).values(**values))
    return settled


def _settle(conn: sa.Connection, node_id: str, outcome: Outcome, now: float) -> bool:
    """Record ``outcome`` as the node's; ``False`` if it keeps the one it has.

    A node that has settled for good keeps its first outcome. One that has an outcome
    but lives on (a resident root that answered, dormant for the next message) takes
    the new one: its outcome is its latest answer, and a close or a failure after an
    answer replaces it, so the outcome and the status agree. An answer replaced by a
    failure is kept at the end of ``extra["previous_outcomes"]``.
    """
    # Insert-unless-present in one statement: two settlements racing on PostgreSQL
    # (no database-wide write lock as on SQLite) must not both pass a "not yet"
    # check and have the loser fail on the primary key; the first simply wins.
    insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
    inserted = conn.execute(
        insert(outcomes)
        .values(node_id=node_id, outcome=dict(outcome), settled_at=now)
        .on_conflict_do_nothing(index_elements=[outcomes.c.node_id])
        # RETURNING, not rowcount: psycopg's rowcount is -1 for this statement.
        .returning(outcomes.c.node_id)
    ).first()
    if inserted is not None:
        return True
    node = conn.execute(
        sa.select(nodes.c.status, nodes.c.extra).where(nodes.c.node_id == node_id).with_for_update()
    ).first()
    if node is None or node.status in _SETTLED_STATUSES:
        return False
    kept = conn.execute(
        sa.select(outcomes.c.outcome, outcomes.c.settled_at).where(outcomes.c.node_id == node_id)
    ).one()
    if kept.outcome.get("kind") == "result" and outcome.get("kind") == "failure":
        extra = dict(node.extra or {})
        archived = {
            "outcome": dict(kept.outcome),
            "settled_at": kept.settled_at,
            "status": node.status,
        }
        extra["previous_outcomes"] = [*extra.get("previous_outcomes", []), archived]
        conn.execute(nodes.update().where(nodes.c.node_id == node_id).values(extra=extra))
    conn.execute(
        outcomes.update()
        .where(outcomes.c.node_id == node_id)
        .values(outcome=dict(outcome), settled_at=now)
    )
    return True
