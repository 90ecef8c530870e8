"""The canvas: the graph of the daemon's nodes as a person's UI shows it (attention, snapshot,
roster, prune)."""

from __future__ import annotations

import asyncio
import logging
import shutil
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Collection, Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from ... import api
from .. import jobs, reports
from ..nodes import SETTLED, Feature, Kernel, Outcome, maybe_when, when
from ..server import ApiError, parse_duration
from ._history import History
from ._routes import add_canvas_routes
from ._store import CanvasStore, CardRow

if TYPE_CHECKING:
    from fastapi import FastAPI


__all__ = [
    "DEFAULT_OLDER_THAN",
    "URGENCY",
    "AttentionSource",
    "Canvas",
    "OpenRequest",
    "PruneHook",
    "asking_from",
]

log = logging.getLogger("heron.runtime")

URGENCY: tuple[str, ...] = ("asking", "interrupted", "failed", "deadline_exceeded", "waiting")
"""Attention reasons, most urgent first: a person is being asked something; a node was
stopped mid-turn and waits to be resumed; a node failed; a deadline ran out; a resident
root answered and waits for the next message."""

DEFAULT_OLDER_THAN = "7d"
"""How long ago a node must have settled for a prune naming no nodes to take it."""

LIVE = ("running", "dormant", "interrupted")
"""Statuses of nodes not settled."""

SUMMARY = 200
"""The longest attention summary (characters)."""

AttentionSource = Callable[[Collection[str] | None], Awaitable[Iterable[api.AttentionItem]]]
"""Supplies attention items (``asking``): called with the node ids asked about (``None``:
all), returns the items (it may return others too: they are filtered)."""

PruneHook = Callable[[list[str]], Awaitable[None]]
"""Called with the ids a prune deleted, so a feature deletes its own rows of them."""


class OpenRequest(Protocol):
    """What :func:`asking_from` reads of an open human request."""

    @property
    def request_id(self) -> str:
        """The request's id."""

    @property
    def node_id(self) -> str | None:
        """The node that asked (``None``: filed from outside any node)."""

    @property
    def profile(self) -> str | None:
        """The profile it belongs to."""

    @property
    def title(self) -> str:
        """What is asked, in one line."""

    @property
    def created_at(self) -> datetime:
        """When it was filed."""


def asking_from(
    open_requests: Callable[[Collection[str] | None], Awaitable[Iterable[OpenRequest]]],
) -> AttentionSource:
    """An attention source of ``asking`` items from a function listing open requests
    (``Human.open_requests``)::

        canvas.attention_sources.append(asking_from(human.open_requests))
    """

    async def source(node_ids: Collection[str] | None) -> list[api.AttentionItem]:
        return [
            api.AttentionItem(
                node_id=r.node_id,
                reason="asking",
                since=r.created_at,
                summary=_line(r.title),
                request_id=r.request_id,
                profile=r.profile or "default",
            )
            for r in await open_requests(node_ids)
        ]

    return source


class Canvas(Feature):
    """Attention, snapshot, roster, prune and history."""

    def __init__(self, engine: Kernel) -> None:
        self.engine = engine
        self.store = CanvasStore(engine.db)
        """Whole-graph reads and prune."""
        self.history = History(engine, self.store)
        """Search, grep, read and stats over the nodes' transcripts."""
        self.attention_sources: list[AttentionSource] = []
        """Where ``asking`` items come from (see :data:`AttentionSource`)."""
        self.prune_hooks: list[PruneHook] = []
        """Features' own deletes of pruned nodes' rows (see :data:`PruneHook`)."""

    def routes(self, app: FastAPI) -> None:
        """Serve ``/v1/canvas/…``."""
        add_canvas_routes(app, self)

    # -- attention -------------------------------------------------------------

    async def attention(
        self, *, node_ids: Collection[str] | None = None, profile: str | None = None
    ) -> list[api.AttentionItem]:
        """What needs a person, most urgent first (oldest first within a reason)."""
        ids = _checked(node_ids)
        rows, outcomes = await self.store.attention_rows(ids, profile)
        items = _node_items(rows, outcomes)
        items += await self._asked(ids)
        return _ordered(_filtered(items, ids, profile))

    async def counts(self, request: api.AttentionCountsRequest) -> api.AttentionCounts:
        """How many attention items there are, per reason and per node."""
        items = await self.attention(node_ids=request.node_ids, profile=request.profile)
        by_node: dict[str, Counter[str]] = {}
        for item in items:
            by_node.setdefault(item.node_id or "", Counter())[item.reason] += 1
        by_reason: Counter[str] = Counter(item.reason for item in items)
        return api.AttentionCounts(
            total=len(items),
            by_reason={reason: by_reason[reason] for reason in URGENCY},
            by_node={node: dict(counts) for node, counts in by_node.items()},
        )

    async def _asked(self, node_ids: Collection[str] | None) -> list[api.AttentionItem]:
        items: list[api.AttentionItem] = []
        for source in self.attention_sources:
            try:
                items.extend(await source(node_ids))
            except Exception:  # one failing source must not hide everything else
                log.exception("an attention source failed")
        return items

    # -- snapshot and roster -----------------------------------------------------

    async def snapshot(self) -> api.CanvasSnapshot:
        """Every node's card, edges, counts, attention and event high-water marks.

        The high-water marks of nodes whose events this daemon numbers are read first,
        then the cards: an event after a mark may already be reflected in a card (a UI
        applies it again, harmlessly) but no change to a card comes without an event
        after its mark. The other nodes' marks are read with the cards, in one
        transaction.
        """
        taken = time.time()
        live_marks = {}
        for row in await self.store.live_rows(LIVE):
            try:
                live_marks[row["node_id"]] = self.engine.events.last_number(row["node_id"])
            except KeyError:  # not numbered here yet: its logged events are all there are
                pass
        rows, outcomes, logged = await self.store.canvas_rows()
        ids = {r["node_id"] for r in rows}
        edges = []
        for row in rows:
            parent, creator = row["parent"], row["creator"]
            if parent is not None and parent in ids:
                edges.append(api.CanvasEdge(source=parent, target=row["node_id"], kind="parent"))
            if creator is not None and creator != parent and creator in ids:
                edges.append(api.CanvasEdge(source=creator, target=row["node_id"], kind="creator"))
        items = _node_items(rows, outcomes) + await self._asked(None)
        return api.CanvasSnapshot(
            taken_at=when(taken),
            nodes=[_card(r, outcomes.get(r["node_id"])) for r in rows],
            edges=edges,
            counts=dict(Counter(r["status"] for r in rows)),
            attention=_ordered(_filtered(items, None, None)),
            event_sequences={
                r["node_id"]: live_marks.get(r["node_id"], logged.get(r["node_id"], 0))
                for r in rows
            },
        )

    async def roster(self) -> list[api.RosterEntry]:
        """The live nodes, oldest first, with what each is doing now."""
        await self.engine.events.flush()  # the last events are in the log, not just queued
        rows = await self.store.live_rows(LIVE)
        last = await self.store.last_events([r["node_id"] for r in rows])
        children = Counter(r["parent"] for r in rows if r["parent"] is not None)
        entries = []
        for row in rows:
            node_id, status = row["node_id"], row["status"]
            if status == "completed" or status == "failed" or status == "cancelled":
                continue  # (never: live_rows reads only live nodes; narrows the type)
            event = last.get(node_id)
            entries.append(
                api.RosterEntry(
                    node_id=node_id,
                    name=row["name"],
                    status=status,
                    profile=row["profile"] or "default",
                    parent=row["parent"],
                    run=row["runs"],
                    run_active=node_id in self.engine.active,
                    since=when(row["updated_at"]),
                    last_event_type=event[0] if event else None,
                    last_event_at=when(event[1]) if event else None,
                    open_jobs=self.engine.features.get(jobs.Jobs).running(node_id),
                    live_children=children[node_id],
                    turns=row["turns"],
                    deadline_at=maybe_when(row["deadline_at"]),
                )
            )
        return entries

    # -- prune -----------------------------------------------------------------------

    async def prune(self, request: api.PruneRequest) -> api.PruneResult:
        """Delete settled nodes and everything of theirs (see the module docstring)."""
        older_than = request.older_than
        if older_than is None and request.node_ids is None:
            older_than = DEFAULT_OLDER_THAN
        try:
            age = parse_duration(older_than) if older_than is not None else None
        except ValueError as exc:
            raise ApiError(422, "invalid_duration", str(exc)) from None
        # Events published before now are written first: none lands after the delete.
        await self.engine.events.flush()
        plan = await self.store.prune(
            node_ids=request.node_ids,
            statuses=set(request.statuses or SETTLED),
            settled_before=time.time() - age if age is not None else None,
            dry_run=request.dry_run,
            # A run that saved its end but has not announced it yet still writes events.
            busy=set(self.engine.active),
        )
        if not request.dry_run and plan.pruned:
            await self._forget(plan.pruned, plan.own_workspaces)
        return api.PruneResult(
            pruned=plan.pruned,
            skipped=[
                api.PruneSkip.model_validate({"node_id": n, "reason": why})
                for n, why in plan.skipped
            ],
            dry_run=request.dry_run,
        )

    async def _forget(self, pruned: list[str], own_workspaces: list[str]) -> None:
        """After the rows: files, DBOS's records of their runs, in-memory state, hooks."""
        engine = self.engine
        home = engine.config.home
        for node_id in pruned:
            await engine.features.get(jobs.Jobs).discard(node_id)
            engine.events.forget(node_id)
            await asyncio.to_thread(
                shutil.rmtree, engine.features.get(reports.Reports).directory(node_id), True
            )
        for node_id in own_workspaces:
            await asyncio.to_thread(shutil.rmtree, home / "nodes" / node_id, True)
        await self.store.forget_workflows(pruned)
        for hook in self.prune_hooks:
            try:
                await hook(pruned)
            except Exception:
                log.exception("a prune hook failed")


def _checked(node_ids: Collection[str] | None) -> Collection[str] | None:
    if node_ids is not None:
        for node_id in node_ids:
            if not api.is_valid_id(node_id):
                raise ApiError(400, "invalid_node_id", f"not a valid node id: {node_id!r}")
    return node_ids


def _node_items(rows: list[CardRow], outcomes: dict[str, Outcome]) -> list[api.AttentionItem]:
    """The attention items the nodes' own states make."""
    items = []
    for row in rows:
        status, outcome = row["status"], outcomes.get(row["node_id"])
        reason: api.AttentionReason | None = None
        since = row["settled_at"] or row["updated_at"]
        summary = ""
        if status == "interrupted":
            reason, since = "interrupted", row["updated_at"]
            by = (row["extra"] or {}).get("interrupted_by")
            summary = (
                "interrupted on request" if by in (None, "request") else f"interrupted by {by}"
            )
        elif status == "failed":
            reason, summary = "failed", _failure(outcome)
        elif status == "cancelled" and outcome and outcome.get("reason") == "deadline_exceeded":
            reason, summary = "deadline_exceeded", _failure(outcome)
        elif (
            status == "dormant"
            and row["root"]
            and row["root_lifecycle"] == "resident"
            and row["settled_at"] is not None
            and outcome is not None
        ):
            reason = "waiting"
            summary = (outcome.get("output_text") or "answered") if outcome else "answered"
        if reason is not None:
            items.append(
                api.AttentionItem(
                    node_id=row["node_id"],
                    reason=reason,
                    since=when(since),
                    summary=_line(summary),
                    profile=row["profile"] or "default",
                    name=row["name"],
                )
            )
    return items


def _failure(outcome: Outcome | None) -> str:
    if not outcome or outcome.get("kind") != "failure":
        return "failed"
    declined = outcome.get("declined")
    if declined:
        return f"declined: {declined.get('reason', '')}"
    detail = outcome.get("detail")
    return f"{outcome.get('reason')}: {detail.get('message', '') if detail else ''}"


def _line(text: str) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= SUMMARY else flat[: SUMMARY - 1] + "…"


def _filtered(
    items: list[api.AttentionItem], node_ids: Collection[str] | None, profile: str | None
) -> list[api.AttentionItem]:
    wanted = set(node_ids) if node_ids is not None else None
    return [
        i
        for i in items
        if (wanted is None or i.node_id in wanted) and (profile is None or i.profile == profile)
    ]


def _ordered(items: list[api.AttentionItem]) -> list[api.AttentionItem]:
    return sorted(items, key=lambda i: (URGENCY.index(i.reason), i.since, i.node_id or ""))


def _card(row: CardRow, outcome: Outcome | None) -> api.CanvasCard:
    return api.CanvasCard(
        node_id=row["node_id"],
        name=row["name"],
        kind=row["kind"],
        mode=row["mode"],
        status=row["status"],
        root=row["root"],
        parent=row["parent"],
        creator=row["creator"],
        profile=row["profile"] or "default",
        created_at=when(row["created_at"]),
        updated_at=when(row["updated_at"]),
        turns=row["turns"],
        input_tokens=row["input_tokens"],
        output_tokens=row["output_tokens"],
        outcome_kind=outcome.get("kind") if outcome else None,
        outcome_reason=outcome.get("reason") if outcome else None,
    )
