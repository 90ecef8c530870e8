"""The human requests' own store: ``heron_human_requests``, the questions put to a person.

A request filed for a node, and an answer queued to it, read and write the node's
row and messages in the same transaction (a node settling meanwhile never leaves a
request open; an answer is never recorded without reaching the node)."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from typing import Any, NotRequired, TypedDict, cast

import sqlalchemy as sa

from ... import api
from ..db import Database, messages, nodes
from ..nodes import locked_status, queue_in
from ._tables import human_requests

__all__ = [
    "Change",
    "HumanStore",
    "NodeSettled",
    "NotOpen",
    "ProgressEntry",
    "RequestRow",
    "StoredAnswer",
    "StoredQuestion",
    "StoredResponse",
    "changed",
]

RESOLVED = ("answered", "dismissed", "cancelled")
"""The statuses of a request that is no longer open."""

SETTLED = ("completed", "failed", "cancelled")
"""A node's statuses it never leaves (``_runs.SETTLED``; not imported: it imports the store)."""


class StoredQuestion(TypedDict):
    """A question as a request keeps it (spacing normalised)."""

    question: str
    context: str
    choices: list[str]
    multiple: bool
    free_text: NotRequired[bool]
    """Whether an answer may be words of its own (kept since it was added: else ``True``)."""


class StoredAnswer(TypedDict):
    """The answer to one question: the choices picked and the words given."""

    question: str
    choices: list[str]
    text: str | None


class StoredResponse(TypedDict):
    """A person's response to a request."""

    answers: list[StoredAnswer] | None
    text: str | None
    responded_by: str | None
    responded_at: float


class ProgressEntry(TypedDict):
    """A progress note a person kept on an open request."""

    note: str
    percent: NotRequired[float | None]
    by: NotRequired[str | None]
    at: float


class RequestRow(TypedDict):
    """A row of ``heron_human_requests``."""

    request_id: str
    node_id: str | None
    """The node the answer wakes (``None``: filed by an application for nobody)."""
    profile: str
    status: api.HumanRequestStatus
    title: str
    questions: list[StoredQuestion]
    body: str | None
    response: StoredResponse | None
    progress: list[ProgressEntry]
    reason: str | None
    """Why it was dismissed or cancelled."""
    revision: int
    call_key: str | None
    created_at: float
    updated_at: float
    resolved_at: float | None


Change = Callable[[RequestRow], tuple[dict[str, Any], str | None]]
"""``change(row)`` -> the columns to set on an open request and a message for its node."""


def changed(row: RequestRow, values: Mapping[str, Any]) -> RequestRow:
    """``row`` with the columns ``values`` set (as a change writes them)."""
    return cast(RequestRow, {**row, **values})


def _request(found: sa.Row[Any]) -> RequestRow:
    return cast(RequestRow, dict(found._mapping))


class NotOpen(Exception):
    """The request is not open (any more): nothing was changed."""

    def __init__(self, row: RequestRow) -> None:
        super().__init__(row["request_id"])
        self.row = row
        """The request as it stands."""


class NodeSettled(Exception):
    """The node a request is filed for has settled (or is gone): nothing was filed."""

    def __init__(self, status: str | None) -> None:
        super().__init__(status)
        self.status = status
        """Its status (``None``: no such node)."""


class HumanStore:
    """Reads and writes ``heron_human_requests``."""

    def __init__(self, database: Database) -> None:
        self.db = database
        """The daemon's database."""

    async def add_request(self, row: RequestRow) -> RequestRow:
        """File a request; with a ``call_key``, the one that call filed already (if any)
        is returned instead (a tool call DBOS runs again after a crash)."""
        return await self.db.run(self._add_request, row)

    def _add_request(self, row: RequestRow) -> RequestRow:
        key = row.get("call_key")
        try:
            with self.db.engine.begin() as conn:
                if key is not None:
                    found = _by_key(conn, row["node_id"], key)
                    if found is not None:
                        return found
                if row["node_id"] is not None:
                    # Read (and held, on PostgreSQL) in this transaction: a node settling
                    # meanwhile either commits first (refused here) or finds this request
                    # when its settle hook looks for open ones. Never one left open.
                    status = locked_status(conn, row["node_id"])
                    if status is None or status in SETTLED:
                        raise NodeSettled(status)
                conn.execute(human_requests.insert().values(**row))
                return row.copy()
        except sa.exc.IntegrityError:
            # Filed by the same call at the same moment (PostgreSQL runs both at once).
            with self.db.engine.connect() as conn:
                found = _by_key(conn, row["node_id"], key) if key is not None else None
            if found is None:
                raise
            return found

    async def human_request(self, request_id: str) -> RequestRow | None:
        """The request's row, or ``None``."""
        return await self.db.run(self._human_request, request_id)

    def _human_request(self, request_id: str) -> RequestRow | None:
        query = sa.select(human_requests).where(human_requests.c.request_id == request_id)
        with self.db.engine.connect() as conn:
            found = conn.execute(query).first()
        return _request(found) if found is not None else None

    async def human_requests(
        self,
        *,
        statuses: Collection[str],
        node_ids: Collection[str] | None = None,
        profile: str | None = None,
        limit: int | None = None,
        order: str = "created_at",
    ) -> list[RequestRow]:
        """Requests with one of ``statuses`` (of those nodes, that profile), newest first
        by ``order`` (``created_at`` or ``resolved_at``), at most ``limit``."""
        return await self.db.run(
            self._human_requests, list(statuses), node_ids, profile, limit, order
        )

    def _human_requests(
        self,
        statuses: list[str],
        node_ids: Collection[str] | None,
        profile: str | None,
        limit: int | None,
        order: str,
    ) -> list[RequestRow]:
        c = human_requests.c
        query = sa.select(human_requests).where(c.status.in_(statuses))
        if node_ids is not None:
            query = query.where(c.node_id.in_(list(node_ids)))
        if profile is not None:
            query = query.where(c.profile == profile)
        query = query.order_by(c[order].desc(), c.request_id.desc())
        if limit is not None:
            query = query.limit(limit)
        with self.db.engine.connect() as conn:
            return [_request(r) for r in conn.execute(query)]

    async def change_request(self, request_id: str, change: Change) -> RequestRow:
        """Change an open request in one transaction; returns its new row.

        ``change(row)`` gets the request as it stands and returns the columns to
        set (``revision: "bump"`` adds one; ``progress: ("add", entry)`` appends)
        and a message for its node, or ``None``; it may refuse by raising (nothing
        changes). :class:`NotOpen` (nothing changed) if it is not open, ``KeyError``
        if there is no such request. The message is queued in the same
        transaction (a node that never ran reads its prompt first): a response is
        never recorded without reaching the node, even if the daemon dies right after.
        """
        return await self.db.run(self._change_request, request_id, change)

    def _change_request(self, request_id: str, change: Change) -> RequestRow:
        where = human_requests.c.request_id == request_id
        with self.db.engine.begin() as conn:
            # FOR UPDATE: PostgreSQL holds the row (SQLite locks at BEGIN), so of two
            # responses at once one finds it answered already.
            found = conn.execute(sa.select(human_requests).where(where).with_for_update()).first()
            if found is None:
                raise KeyError(request_id)
            row = _request(found)
            if row["status"] != "open":
                raise NotOpen(row)
            values, message = change(row)
            now = time.time()
            update = dict(values)
            if update.get("revision") == "bump":
                update["revision"] = row["revision"] + 1
            if isinstance(update.get("progress"), tuple):
                update["progress"] = [*(row["progress"] or []), update["progress"][1]]
            update["updated_at"] = now
            if update.get("status", "open") != "open":
                update["resolved_at"] = now
            conn.execute(human_requests.update().where(where).values(**update))
            if message is not None and row["node_id"] is not None:
                queue_in(conn, row["node_id"], message, now)
            return changed(row, update)

    async def orphaned_requests(self) -> list[str]:
        """Open requests whose node has settled or is gone: nobody waits for them (the
        node settled with no new outcome, or the daemon died before its settle hook)."""
        return await self.db.run(self._orphaned_requests)

    def _orphaned_requests(self) -> list[str]:
        c = human_requests.c
        live = (
            sa.select(nodes.c.node_id)
            .where(nodes.c.node_id == c.node_id, nodes.c.status.not_in(SETTLED))
            .exists()
        )
        query = sa.select(c.request_id).where(
            c.status == "open", c.node_id.is_not(None), sa.not_(live)
        )
        with self.db.engine.connect() as conn:
            return list(conn.execute(query).scalars())

    async def requests_to_wake(self) -> list[str]:
        """Dormant nodes with unread messages and a resolved request: the daemon died
        between a response (queued with it) and waking the node."""
        return await self.db.run(self._requests_to_wake)

    def _requests_to_wake(self) -> list[str]:
        unread = (
            sa.select(messages.c.node_id)
            .where(messages.c.claimed_run.is_(None))
            .where(messages.c.node_id == nodes.c.node_id)
            .exists()
        )
        query = (
            sa.select(nodes.c.node_id)
            .distinct()
            .join(human_requests, human_requests.c.node_id == nodes.c.node_id)
            .where(
                # Withdrawn ones too: a withdrawal is queued to the node like an answer.
                human_requests.c.status.in_(RESOLVED),
                # Not settled_at: a resident root keeps its outcome while it waits again.
                # Not interrupted ones: one may hold messages its stop left unread on purpose.
                nodes.c.status == "dormant",
                unread,
            )
        )
        with self.db.engine.connect() as conn:
            return list(conn.execute(query).scalars())


def _by_key(conn: sa.Connection, node_id: str | None, key: str) -> RequestRow | None:
    c = human_requests.c
    found = conn.execute(
        sa.select(human_requests).where(c.node_id == node_id, c.call_key == key)
    ).first()
    return _request(found) if found is not None else None
