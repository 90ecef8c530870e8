"""The canvas's store: whole-graph reads and prune.

It owns no table: it reads the whole node graph (nodes, their events, messages and
outcomes) in one snapshot, and a prune deletes a subtree's rows in one transaction
with its checks: the kernel's and every feature's that belong to a node
(``Database.forget_nodes``, which each schema's ``per_node`` tables say)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import TypedDict, cast

import sqlalchemy as sa

from ... import api
from ..db import Database, Row, events, nodes, outcomes
from ..nodes import NodeExtra, Outcome, as_outcome

__all__ = ["CARD_COLUMNS", "CanvasStore", "CardRow", "PrunePlan"]

SETTLED_STATUSES = ("completed", "failed", "cancelled")
"""Statuses a node never leaves (the store's copy: it imports nothing of the engine)."""

CARD_COLUMNS = (
    nodes.c.node_id,
    nodes.c.name,
    nodes.c.kind,
    nodes.c.mode,
    nodes.c.status,
    nodes.c.root,
    nodes.c.root_lifecycle,
    nodes.c.parent,
    nodes.c.creator,
    nodes.c.profile,
    nodes.c.cwd,
    nodes.c.created_at,
    nodes.c.updated_at,
    nodes.c.settled_at,
    nodes.c.deadline_at,
    nodes.c.runs,
    nodes.c.turns,
    nodes.c.input_tokens,
    nodes.c.output_tokens,
    nodes.c.extra,
)
"""What the canvas reads of a node: everything but its prompt and conversation."""


class CardRow(TypedDict):
    """A node's row as the canvas reads it (:data:`CARD_COLUMNS`)."""

    node_id: str
    name: str | None
    kind: str | None
    mode: api.NodeMode
    status: api.NodeStatus
    root: bool
    root_lifecycle: api.RootLifecycle
    parent: str | None
    creator: str | None
    profile: str | None
    cwd: str | None
    created_at: float
    updated_at: float
    settled_at: float | None
    deadline_at: float | None
    runs: int
    turns: int
    input_tokens: int
    output_tokens: int
    extra: NodeExtra


_CHUNK = 500
"""Ids per ``IN (...)`` list (SQLite allows a few thousand parameters per statement)."""


@dataclass(kw_only=True, slots=True)
class PrunePlan:
    """What a prune deletes and leaves: worked out and carried out in one transaction."""

    pruned: list[str] = field(default_factory=list)
    """Nodes deleted (or to be deleted, on a dry run), named ones' descendants included."""
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """``(node_id, reason)`` of nodes left alone."""
    own_workspaces: list[str] = field(default_factory=list)
    """Pruned nodes that worked in their own directory under ``HERON_HOME`` (no ``cwd``)."""


class CanvasStore:
    """Reads the node graph at once and deletes settled nodes."""

    def __init__(self, database: Database) -> None:
        self.db = database
        """The daemon's database."""

    async def canvas_rows(self) -> tuple[list[CardRow], dict[str, Outcome], dict[str, int]]:
        """Every node's card columns (oldest first), outcomes by node and each node's
        highest logged event number, read in one transaction (one consistent picture)."""
        return await self.db.run(self._canvas_rows)

    def _canvas_rows(self) -> tuple[list[CardRow], dict[str, Outcome], dict[str, int]]:
        query = (
            sa.select(*CARD_COLUMNS)
            .where(nodes.c.warm.is_(None))
            .order_by(nodes.c.created_at, nodes.c.node_id)
        )
        last = sa.select(events.c.node_id, sa.func.max(events.c.sequence_number)).group_by(
            events.c.node_id
        )
        with self.db.engine.begin() as conn:
            _read_snapshot(conn)
            rows = [cast(CardRow, dict(r._mapping)) for r in conn.execute(query)]
            found = {r.node_id: as_outcome(r.outcome) for r in conn.execute(sa.select(outcomes))}
            numbers = {node_id: int(n) for node_id, n in conn.execute(last)}
        return rows, found, numbers

    async def attention_rows(
        self, node_ids: Collection[str] | None, profile: str | None
    ) -> tuple[list[CardRow], dict[str, Outcome]]:
        """Card columns of the nodes that may need a person (interrupted, failed,
        cancelled, and resident roots dormant with an outcome), oldest first, with their
        outcomes: the others (most of a daemon's nodes) are not read."""
        return await self.db.run(self._attention_rows, node_ids, profile)

    def _attention_rows(
        self, node_ids: Collection[str] | None, profile: str | None
    ) -> tuple[list[CardRow], dict[str, Outcome]]:
        waiting = sa.and_(
            nodes.c.status == "dormant",
            nodes.c.root.is_(True),
            nodes.c.root_lifecycle == "resident",
            nodes.c.settled_at.is_not(None),
        )
        query = (
            sa.select(*CARD_COLUMNS)
            .where(
                nodes.c.warm.is_(None),
                sa.or_(nodes.c.status.in_(("interrupted", "failed", "cancelled")), waiting),
            )
            .order_by(nodes.c.created_at, nodes.c.node_id)
        )
        if node_ids is not None:
            query = query.where(nodes.c.node_id.in_(list(node_ids)))
        if profile is not None:
            query = query.where(_of_profile(profile))
        with self.db.engine.begin() as conn:
            rows = [cast(CardRow, dict(r._mapping)) for r in conn.execute(query)]
            ids = [r["node_id"] for r in rows]
            found: dict[str, Outcome] = {}
            for start in range(0, len(ids), _CHUNK):
                chunk = ids[start : start + _CHUNK]
                taken = sa.select(outcomes).where(outcomes.c.node_id.in_(chunk))
                found.update((r.node_id, as_outcome(r.outcome)) for r in conn.execute(taken))
        return rows, found

    async def live_rows(self, statuses: Sequence[str]) -> list[CardRow]:
        """Card columns of the nodes with one of ``statuses``, oldest first."""
        query = (
            sa.select(*CARD_COLUMNS)
            .where(nodes.c.warm.is_(None), nodes.c.status.in_(list(statuses)))
            .order_by(nodes.c.created_at, nodes.c.node_id)
        )
        return cast(list[CardRow], await self.db.all(query))

    async def last_events(self, node_ids: Collection[str]) -> dict[str, tuple[str, float]]:
        """Each node's last logged event: ``(type, created_at)`` (nodes with none left out)."""
        return await self.db.run(self._last_events, list(node_ids))

    def _last_events(self, node_ids: list[str]) -> dict[str, tuple[str, float]]:
        found: dict[str, tuple[str, float]] = {}
        with self.db.engine.connect() as conn:
            for start in range(0, len(node_ids), _CHUNK):
                chunk = node_ids[start : start + _CHUNK]
                newest = (
                    sa.select(events.c.node_id, sa.func.max(events.c.sequence_number).label("n"))
                    .where(events.c.node_id.in_(chunk))
                    .group_by(events.c.node_id)
                    .subquery()
                )
                query = sa.select(events.c.node_id, events.c.type, events.c.created_at).join(
                    newest,
                    sa.and_(
                        events.c.node_id == newest.c.node_id,
                        events.c.sequence_number == newest.c.n,
                    ),
                )
                for node_id, type_, created_at in conn.execute(query):
                    found[node_id] = (type_, created_at)
        return found

    async def transcript_ids(
        self,
        *,
        node_ids: Collection[str] | None,
        profile: str | None,
        since: float | None,
        limit: int,
        containing: Sequence[str] | None = None,
        always: Collection[str] = (),
    ) -> tuple[list[str], bool, int]:
        """Ids of the nodes whose transcripts a history request reads, most recently
        active first, at most ``limit``; whether more matched; and how many nodes the
        filters take in all (``containing`` aside).

        ``containing``: only nodes whose saved conversation or prompt holds one of these
        ASCII strings, in any case (a cheap pre-filter: the JSON text is matched, so it
        may let through a node the caller then finds nothing in, never the reverse);
        ``always``: nodes taken whatever ``containing`` says (those running here, whose
        live conversation is not saved yet)."""
        return await self.db.run(
            self._transcript_ids, node_ids, profile, since, limit, containing, always
        )

    def _transcript_ids(
        self,
        node_ids: Collection[str] | None,
        profile: str | None,
        since: float | None,
        limit: int,
        containing: Sequence[str] | None,
        always: Collection[str],
    ) -> tuple[list[str], bool, int]:
        scope: list[sa.ColumnElement[bool]] = [nodes.c.warm.is_(None)]
        if node_ids is not None:
            scope.append(nodes.c.node_id.in_(list(node_ids)))
        if profile is not None:
            scope.append(_of_profile(profile))
        if since is not None:
            scope.append(nodes.c.updated_at >= since)
        query = sa.select(nodes.c.node_id).where(*scope)
        if containing is not None:
            text = sa.cast(nodes.c.state, sa.Text)
            held = [
                sa.or_(
                    text.ilike(_like(s), escape="\\"), nodes.c.prompt.ilike(_like(s), escape="\\")
                )
                for s in containing
            ]
            if always:
                held.append(nodes.c.node_id.in_(list(always)))
            query = query.where(sa.or_(*held))
        query = query.order_by(nodes.c.updated_at.desc(), nodes.c.node_id).limit(limit + 1)
        with self.db.engine.connect() as conn:
            ids = [r.node_id for r in conn.execute(query)]
            if containing is None and len(ids) <= limit:
                total = len(ids)
            else:
                counted = sa.select(sa.func.count()).select_from(nodes).where(*scope)
                total = int(conn.execute(counted).scalar_one())
        return ids[:limit], len(ids) > limit, total

    async def transcripts(self, node_ids: Sequence[str]) -> list[Row]:
        """``node_id``, ``prompt``, ``state`` and counters of these nodes, in the given order."""
        query = sa.select(
            nodes.c.node_id,
            nodes.c.prompt,
            nodes.c.state,
            nodes.c.profile,
            nodes.c.turns,
            nodes.c.input_tokens,
            nodes.c.output_tokens,
        ).where(nodes.c.node_id.in_(list(node_ids)))
        rows = {r["node_id"]: r for r in await self.db.all(query)}
        return [rows[n] for n in node_ids if n in rows]

    async def forget_workflows(self, node_ids: Sequence[str]) -> None:
        """Delete DBOS's records of the nodes' runs (their steps hold the conversation too)."""
        await self.db.write(_forget_workflows, node_ids)

    async def prune(
        self,
        *,
        node_ids: Sequence[str] | None,
        statuses: Collection[str],
        settled_before: float | None,
        dry_run: bool,
        busy: Collection[str] = (),
    ) -> PrunePlan:
        """Delete settled nodes and every row of theirs in every schema (events,
        messages, outcome, reports, human requests ...), in one transaction with the
        checks: see ``PruneSkip``
        for what is left alone; ``busy`` nodes count as live whatever their status.
        Files are the caller's to remove (``own_workspaces``, report folders)."""
        return await self.db.run(self._prune, node_ids, statuses, settled_before, dry_run, busy)

    def _prune(
        self,
        named: Sequence[str] | None,
        statuses: Collection[str],
        settled_before: float | None,
        dry_run: bool,
        busy: Collection[str],
    ) -> PrunePlan:
        columns = (
            nodes.c.node_id,
            nodes.c.status,
            nodes.c.parent,
            nodes.c.root,
            nodes.c.root_lifecycle,
            nodes.c.settled_at,
            nodes.c.updated_at,
            nodes.c.cwd,
        )
        query = sa.select(*columns).where(nodes.c.warm.is_(None))
        if not dry_run:
            # PostgreSQL: no revive un-settles a node between the checks and the delete.
            query = query.with_for_update()
        with self.db.engine.begin() as conn:
            if not dry_run and conn.dialect.name == "sqlite":
                # SQLite's driver begins the transaction (BEGIN IMMEDIATE: the one
                # writer's lock) only at a first write, so the checks would read outside
                # it and a revive could land before the deletes: a write changing
                # nothing takes the lock first.
                conn.execute(nodes.update().where(sa.false()).values(status=nodes.c.status))
            rows = {r.node_id: dict(r._mapping) for r in conn.execute(query)}
            for node_id in busy:
                if node_id in rows:
                    rows[node_id]["status"] = "running"
            plan = _plan(rows, named, statuses, settled_before)
            if not dry_run:
                for start in range(0, len(plan.pruned), _CHUNK):
                    chunk = plan.pruned[start : start + _CHUNK]
                    self.db.forget_nodes(conn, chunk)
        return plan


def _forget_workflows(conn: sa.Connection, node_ids: Sequence[str]) -> None:
    schema = "dbos." if conn.dialect.name == "postgresql" else ""
    for node_id in node_ids:
        # Ids may hold "_", a LIKE wildcard: escaped, or "n_1" would reach "nx1"'s.
        escaped = node_id.replace("_", "\\_")
        like = {"pattern": f"heron:{escaped}:%"}
        # operation_outputs first: on PostgreSQL it refers to workflow_status.
        for table in ("operation_outputs", "workflow_status"):
            conn.execute(
                sa.text(
                    f"DELETE FROM {schema}{table} WHERE workflow_uuid LIKE :pattern ESCAPE '\\'"
                ),
                like,
            )


def _read_snapshot(conn: sa.Connection) -> None:
    """Make the transaction's reads one moment of the database.

    SQLite's driver begins a transaction only at a first write: each read would see
    the database as it is then. A plain ``BEGIN`` (deferred: no lock; WAL keeps the
    snapshot of the first read) makes them one. PostgreSQL reads in its transaction
    already; ``REPEATABLE READ`` is what makes them one snapshot there.
    """
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql("BEGIN")
    else:
        conn.exec_driver_sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")


def _of_profile(profile: str) -> sa.ColumnElement[bool]:
    """Nodes of this profile (``default`` takes those that named none too)."""
    if profile == "default":
        return sa.or_(nodes.c.profile.is_(None), nodes.c.profile == profile)
    return nodes.c.profile == profile


def _like(text: str) -> str:
    """A ``LIKE`` pattern finding ``text`` anywhere (its wildcards escaped)."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _plan(
    rows: dict[str, Row],
    named: Sequence[str] | None,
    statuses: Collection[str],
    settled_before: float | None,
) -> PrunePlan:
    children: dict[str, list[str]] = {}
    for each in rows.values():
        if each["parent"] is not None:
            children.setdefault(each["parent"], []).append(each["node_id"])

    def subtree(node_id: str) -> list[str]:
        found, stack = [], [node_id]
        while stack:
            current = stack.pop()
            found.append(current)
            stack.extend(children.get(current, ()))
        return found

    def matches(row: Row) -> bool:
        when = row["settled_at"] if row["settled_at"] is not None else row["updated_at"]
        return row["status"] in statuses and (settled_before is None or when < settled_before)

    plan = PrunePlan()
    if named is not None:
        candidates = list(dict.fromkeys(named))
    else:
        candidates = [n for n, r in rows.items() if r["status"] in SETTLED_STATUSES and matches(r)]
    taken: set[str] = set()
    for node_id in candidates:
        if node_id in taken:
            continue  # pruned already, with a node above it
        row = rows.get(node_id)
        parent = rows.get(row["parent"] or "") if row is not None else None
        below = subtree(node_id) if row is not None else []
        if row is None:
            reason = "not_found"
        elif row["status"] not in SETTLED_STATUSES:
            reason = "live"
        elif not matches(row):
            reason = "not_matching"
        elif named is None and row["root"] and row["root_lifecycle"] == "resident":
            reason = "resident_root"
        elif parent is not None and parent["status"] not in SETTLED_STATUSES:
            reason = "live_parent"
        elif any(rows[n]["status"] not in SETTLED_STATUSES for n in below):
            reason = "live_descendant"
        else:
            for n in below:
                if n not in taken:
                    taken.add(n)
                    plan.pruned.append(n)
                    if rows[n]["cwd"] is None:
                        plan.own_workspaces.append(n)
            continue
        plan.skipped.append((node_id, reason))
    # A named node outside the filters still goes with a named node above it.
    plan.skipped = [(n, why) for n, why in plan.skipped if n not in taken]
    return plan
