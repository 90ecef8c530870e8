"""Orchestration: children, outcome delivery (exactly once), yield and wait: what the
orchestrator tools (``._tools``) and the ``…/yield`` and ``…/wait`` routes share."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from collections.abc import Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from ... import api
from ..._core import ToolError
from ..nodes import (
    SETTLED,
    Feature,
    Kernel,
    NodeRow,
    Outcome,
    RunSetup,
    RunTools,
    Section,
    maybe_when,
)
from ..server import ApiError
from ._routes import add_orchestration_routes

if TYPE_CHECKING:
    from fastapi import FastAPI

    from ...tools import Tool


__all__ = ["Orchestration", "answer", "child_summary", "claimed", "outcome_limit", "outcome_text"]

log = logging.getLogger("heron.runtime")

MAX_FIELD = 2000
"""Longest string kept in an outcome shown to a parent (longer ones are cut)."""

MAX_OUTCOME = 6000
"""Longest outcome JSON shown to a parent in one block."""

OUTCOMES_BUDGET = 200_000
"""Characters the outcomes of one wait (or one ``wait-children`` answer) share, well
under the 256 KiB message cap: with many children each one's JSON is cut shorter."""

MIN_OUTCOME = 300
"""The least outcome JSON a child keeps however many share the budget."""


def outcome_limit(children: int) -> int:
    """How long each outcome's JSON may be when ``children`` share one answer."""
    return max(MIN_OUTCOME, min(MAX_OUTCOME, OUTCOMES_BUDGET // max(children, 1)))


Taken = tuple[NodeRow | None, Outcome | Literal["elsewhere"] | None]
"""A child's row and the outcome a waiter took (``elsewhere``: it went another way, as a
message; ``None``: not settled)."""


@dataclass(eq=False)
class _Watch:
    """One ``wait-children`` call waiting on a child."""

    settled: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when the child settles."""
    done: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when the call has claimed what it takes (or gave up)."""


ORCHESTRATOR_INSTRUCTION = (
    "You are an orchestrator: split the work and delegate it to child nodes with "
    "`spawn-child` (each prompt is that child's entire brief), follow up with "
    "`message-child`, collect outcomes with `wait-children` (or end your turn: the "
    "outcomes of children still working arrive as messages and wake you), see them with "
    "`list-children` and stop one with `close-child`. Report your progress with "
    "`push-report`; finish with a `final` report and your answer."
)
"""What an orchestrator's instruction adds."""


class Orchestration(Feature):
    """Parents and children; see the module docstring."""

    def __init__(self, engine: Kernel) -> None:
        self.engine = engine
        self._watchers: dict[str, list[_Watch]] = {}
        """Children ``wait-children`` calls wait on, and those calls."""
        self._locks: dict[str, asyncio.Lock] = {}
        self._spawning: dict[str, asyncio.Lock] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._background: set[asyncio.Task[None]] = set()

    def _lock(self, parent: str) -> asyncio.Lock:
        return self._locks.setdefault(parent, asyncio.Lock())

    def setup(self, run: RunSetup) -> None:
        """An orchestrator's instruction says how it works with its children."""
        if not run.small and run.plan.get("mode") == "orchestrator":
            run.say(Section.ROLE, ORCHESTRATOR_INSTRUCTION)

    def routes(self, app: FastAPI) -> None:
        """Serve ``…/yield`` and ``…/wait``."""
        add_orchestration_routes(app, self)

    def tools(self, run: RunTools) -> list[Tool]:
        """An orchestrator's child tools (a plan recorded before modes has none: no tools)."""
        if run.plan.get("mode") != "orchestrator":
            return []
        from ._tools import orchestrator_tools  # (it imports this module)

        return orchestrator_tools(self, run.node_id, run.run)

    def check_create(self, request: api.NodeCreateRequest) -> None:
        """Refuse a malformed ``outcome_delivery`` (see :meth:`check_delivery`)."""
        self.check_delivery(request)

    async def start(self) -> None:
        """Resume what a restart interrupted (see :meth:`resume`)."""
        await self.resume()

    async def settled(self, node_id: str, outcome: Outcome) -> None:
        """Deliver the node's outcome to its parent and wake its waits."""
        await self._on_settled(node_id, outcome)

    def spawning(self, parent: str) -> asyncio.Lock:
        """Held while ``parent`` spawns a child: calls of one turn run side by side, and
        two children must not both take a free name."""
        return self._spawning.setdefault(parent, asyncio.Lock())

    # -- create --------------------------------------------------------------

    @staticmethod
    def check_delivery(request: api.NodeCreateRequest) -> None:
        """Refuse an ``outcome_delivery`` that is malformed, unknown or has no parent (422)."""
        raw = request.outcome_delivery
        if raw is None:
            return
        try:
            api.OutcomeDelivery.model_validate(raw)
        except ValidationError as exc:
            details = [
                {"loc": ["outcome_delivery", *e["loc"]], "msg": e["msg"]} for e in exc.errors()
            ]
            raise ApiError(
                422,
                "invalid_outcome_delivery",
                "outcome_delivery must be {action: 'message' | 'none', payload?: string}",
                details,
            ) from None
        if request.parent is None:
            raise ApiError(
                422,
                "invalid_outcome_delivery",
                "outcome_delivery needs a parent to deliver to: set parent, or drop it",
            )

    # -- children ------------------------------------------------------------

    async def children(self, parent: str) -> list[NodeRow]:
        """The rows of the nodes whose parent is ``parent``, oldest first."""
        return await self.engine.store.child_rows(parent)

    async def child(self, parent: str, ref: str) -> NodeRow:
        """The parent's child named ``ref`` (an id or a name); a :class:`ToolError` otherwise."""
        ref = ref.strip()
        if api.is_valid_id(ref):
            row = await self.engine.store.node(ref)
            if row is not None:
                if row["parent"] != parent:
                    owner = f"its parent is {row['parent']}" if row["parent"] else "it is a root"
                    raise ToolError(
                        f"node {ref} is not a child of yours ({owner}): you can only manage "
                        "the children you spawned"
                    )
                return row
        children = await self.children(parent)
        named = [r for r in children if r["name"] == ref]
        if named:
            return named[-1]
        known = ", ".join(_label(r) for r in children) or "none yet"
        raise ToolError(f"you have no child {ref!r} (your children: {known})")

    async def holds(self, node_id: str) -> bool:
        """A node is held dormant while outcomes of its children are to be delivered to it
        (see :meth:`hears_from_children`)."""
        return await self.hears_from_children(node_id)

    async def hears_from_children(self, node_id: str) -> bool:
        """Whether outcomes of children are still to be delivered to ``node_id`` as
        messages: children still working, or settled with their outcome not yet claimed."""
        hears = False
        for row in await self.children(node_id):
            if _delivery(row) != "message":
                continue
            if row["settled_at"] is None:
                hears = True
            elif not claimed(row):
                # Normally its settlement hook is delivering it right now; should that
                # have failed, this makes sure the node does not sleep for nothing.
                self._start(self.deliver_pending(node_id))
                return True
        return hears

    async def quiet(self, child: str) -> None:
        """Do not deliver ``child``'s outcome (its parent is closing it): claimed
        ``closed`` in the database, bound to the settlement the close brings."""
        await self.engine.store.merge_extra(
            child, delivered={"settled_at": None, "how": "closed", "by": None}
        )

    async def collect(self, children: Sequence[str], seconds: float, by: str) -> dict[str, Taken]:
        """Wait up to ``seconds`` for the children to settle and claim their outcomes
        (as ``by``: the same answer when a replayed call asks again).

        Per child: its row and outcome if this call took it; ``(row, None)`` if it is
        still working. A settled child whose outcome went another way (a message) is left
        out of the answer's values: ``(row, "elsewhere")`` (see :data:`Taken`).
        """
        watches = {c: _Watch() for c in dict.fromkeys(children)}
        for child, watch in watches.items():
            self._watchers.setdefault(child, []).append(watch)
        try:
            # Registered before reading: a settlement in between still sets the event.
            store = self.engine.store
            pending = [w.settled.wait() for c, w in watches.items() if not await store.outcome(c)]
            if pending:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(seconds):
                        await asyncio.gather(*pending)
            taken: dict[str, Taken] = {}
            for child in watches:
                taken[child] = await self._take(child, "wait-children", by)
            return taken
        finally:
            for child, watch in watches.items():
                watch.done.set()
                watchers = self._watchers.get(child, [])
                with contextlib.suppress(ValueError):
                    watchers.remove(watch)
                if not watchers:
                    self._watchers.pop(child, None)

    async def _take(self, child: str, how: str, by: str) -> Taken:
        """Claim the child's current outcome: ``(row, outcome)`` if won, ``(row,
        "elsewhere")`` if it went another way, ``(row, None)`` if the child has not
        settled (``row`` ``None``: it is gone)."""
        row = await self.engine.store.node(child)
        outcome = await self.engine.store.outcome(child)
        if row is None or outcome is None or row["settled_at"] is None:
            return row, None
        won = await self.engine.store.claim_delivery(child, row["settled_at"], how, by)
        return (row, outcome) if won else (row, "elsewhere")

    # -- yield and wait --------------------------------------------------------

    async def yield_turn(self, node_id: str, request: api.YieldRequest | None) -> api.Node:
        """Hand the turn back: a running node ends its run ``dormant`` (not interrupted)."""
        row = await self.engine.row(node_id)
        _refuse_settled(row, "yield")
        if request is not None and request.reason is not None:
            await self.engine.store.merge_extra(
                node_id, yielded={"reason": request.reason, "at": time.time()}
            )
        if row["status"] == "running":
            await self._yield(node_id, row["runs"])
        return await self.engine.node(node_id)

    async def _yield(self, node_id: str, run: int) -> None:
        """Stop the node's running turn; its run ends ``dormant`` (``Stop(kind="yielded")``)."""
        from ..nodes import Stop

        await self.engine.stop_run(node_id, run, Stop(kind="yielded"))

    async def wait(self, node_id: str, request: api.WaitRequest) -> api.WaitStatus:
        """Park the node until the named children settle; they then arrive as one message."""
        row = await self.engine.row(node_id)
        _refuse_settled(row, "wait")
        wanted = list(dict.fromkeys(request.children))
        strangers = []
        for child in wanted:
            found = await self.engine.store.node(child)
            if found is None or found["parent"] != node_id:
                strangers.append(child)
        if strangers:
            raise ApiError(
                422,
                "not_a_child",
                f"node {node_id!r} can only wait for its own children; not its children: "
                + ", ".join(strangers),
                {"not_children": strangers},
            )
        timeout = request.timeout_seconds
        deadline = time.time() + timeout if timeout is not None else None
        token = secrets.token_hex(6)
        waiting = {"children": wanted, "token": token, "deadline_at": deadline}
        async with self._lock(node_id):
            await self.engine.store.merge_extra(node_id, waiting=waiting)
        if row["status"] == "running":
            await self._yield(node_id, row["runs"])
        outcomes = {c: await self.engine.store.outcome(c) for c in wanted}
        settled = [c for c, o in outcomes.items() if o is not None]
        pending = [c for c, o in outcomes.items() if o is None]
        if pending and timeout is not None:
            self._arm(node_id, token, timeout)
        else:
            async with self._lock(node_id):
                await self._finish_wait(node_id, token, timed_out=False)
        return api.WaitStatus(
            node_id=node_id,
            status=(await self.engine.node(node_id)).status,
            pending=pending,
            settled=settled,
            deadline_at=maybe_when(deadline) if pending else None,
        )

    async def resume(self) -> None:
        """After a restart: end the waits whose children settled while the daemon was
        down, re-arm the timeouts of the others, and deliver the outcomes nobody did."""
        for row in await self.engine.store.list_nodes(status=["dormant", "interrupted"]):
            waiting = (row["extra"] or {}).get("waiting")
            if not isinstance(waiting, dict):
                continue
            node_id, token, deadline = row["node_id"], waiting["token"], waiting["deadline_at"]
            async with self._lock(node_id):
                await self._finish_wait(node_id, token, timed_out=False)
            if deadline is not None:
                self._arm(node_id, token, max(deadline - time.time(), 0.0))
        parents = {
            row["parent"]
            for row in await self.engine.store.list_nodes(status=sorted(SETTLED))
            if row["parent"] is not None and _delivery(row) == "message" and not claimed(row)
        }
        for parent in sorted(parents):
            await self.deliver_pending(parent)

    async def deliver_pending(self, parent: str) -> None:
        """Deliver the settled outcomes of ``parent``'s ``message`` children nobody has
        delivered (after a restart, or once a settled parent is revived)."""
        for row in await self.children(parent):
            if row["settled_at"] is None or _delivery(row) != "message" or claimed(row):
                continue
            outcome = await self.engine.store.outcome(row["node_id"])
            if outcome is not None:
                try:
                    await self._deliver(row["node_id"], outcome)
                except Exception:
                    log.exception("delivering the outcome of node %s failed", row["node_id"])

    async def stop(self) -> None:
        """Cancel wait timeouts and background work (the daemon is stopping): no wait
        timeout fires into a stopping engine."""
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        for task in list(self._background):
            task.cancel()

    def _arm(self, node_id: str, token: str, delay: float) -> None:
        old = self._timers.pop(node_id, None)
        if old is not None:
            old.cancel()
        loop = asyncio.get_running_loop()
        self._timers[node_id] = loop.call_later(
            delay, lambda: self._start(self._expire(node_id, token))
        )

    def _start(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _expire(self, node_id: str, token: str) -> None:
        self._timers.pop(node_id, None)
        try:
            async with self._lock(node_id):
                await self._finish_wait(node_id, token, timed_out=True)
        except Exception:
            log.exception("ending the wait of node %s failed", node_id)

    async def _finish_wait(self, node_id: str, token: str, *, timed_out: bool) -> None:
        """End the wait ``token`` if it is still the node's and it is over (under the lock)."""
        row = await self.engine.store.node(node_id)
        waiting = (row["extra"] or {}).get("waiting") if row is not None else None
        if row is None or waiting is None or waiting.get("token") != token:
            return  # ended already, or replaced by a newer wait
        children: list[str] = waiting["children"]
        outcomes = {c: await self.engine.store.outcome(c) for c in children}
        if not timed_out and any(o is None for o in outcomes.values()):
            return
        if not timed_out:
            timer = self._timers.pop(node_id, None)
            if timer is not None:
                timer.cancel()
        if row["status"] in SETTLED:
            await self.engine.store.merge_extra(node_id, waiting=None)
            return
        if timed_out:
            head = "[heron] Your wait for your children timed out."
        else:
            head = "[heron] Every child you waited for has settled."
        blocks = [head]
        limit = outcome_limit(len(children))
        for child in children:
            # Claimed by the wait's token: asking again after a crash wins again.
            taken = await self._take(child, "wait", token)
            blocks.append(answer(child, taken, limit))
        # The wait ends in the transaction that queues its message: a daemon dying in
        # between neither loses the message nor sends it twice (a restart ends it again).
        if not await self._send(node_id, "\n\n".join(blocks), extra={"waiting": None}):
            await self.engine.store.merge_extra(node_id, waiting=None)

    # -- delivery ------------------------------------------------------------

    async def _on_settled(self, node_id: str, outcome: Outcome) -> None:
        # A wait-children call waiting on this node takes the outcome: let it claim
        # first (it gives up its claim by ending without one: then this delivers).
        watches = list(self._watchers.get(node_id, []))
        for watch in watches:
            watch.settled.set()
        await asyncio.gather(*(w.done.wait() for w in watches))
        await self._deliver(node_id, outcome)

    async def _deliver(self, node_id: str, outcome: Outcome) -> None:
        row = await self.engine.store.node(node_id)
        if row is None or row["parent"] is None or row["settled_at"] is None:
            return
        parent = row["parent"]
        async with self._lock(parent):
            parent_row = await self.engine.store.node(parent)
            if parent_row is None or parent_row["status"] in SETTLED:
                return  # unclaimed: delivered if the parent is revived (deliver_pending)
            waiting = (parent_row["extra"] or {}).get("waiting")
            if waiting is not None and node_id in waiting["children"]:
                await self._finish_wait(parent, waiting["token"], timed_out=False)
                return
            if _delivery(row) != "message":
                return
            # The claim decides (a quiet close's claim is bound to this settlement here).
            settled_at = row["settled_at"]
            if not await self.engine.store.claim_delivery(node_id, settled_at, "message"):
                return
            text = outcome_text(row, outcome, _payload(row))
            if waiting is not None:
                # Parked on other children: held in the inbox until the wait ends.
                await self.engine.store.add_message(parent, text)
            elif not await self._send(parent, text):
                # The parent settled meanwhile: give the claim back for a revive.
                await self.engine.store.merge_extra(node_id, delivered=None)

    async def _send(
        self, node_id: str, text: str, *, extra: Mapping[str, Any] | None = None
    ) -> bool:
        """Message the node (setting ``extra`` keys with it); ``False`` if it settled in the
        meantime (nobody left to tell)."""
        try:
            await self.engine.message(node_id, text, extra=extra)
        except ApiError as exc:
            log.info("outcome not delivered to %s: %s", node_id, exc.message)
            return False
        return True


def _refuse_settled(row: NodeRow, action: str) -> None:
    if row["status"] in SETTLED:
        raise ApiError(
            409,
            "node_settled",
            f"node {row['node_id']!r} is {row['status']}: there is no turn to {action}",
        )


def _delivery(row: NodeRow) -> str | None:
    delivery = (row["extra"] or {}).get("outcome_delivery")
    return delivery.get("action") if isinstance(delivery, dict) else None


def _payload(row: NodeRow) -> str | None:
    delivery = (row["extra"] or {}).get("outcome_delivery")
    return delivery.get("payload") if isinstance(delivery, dict) else None


def claimed(row: NodeRow) -> bool:
    """Whether the node's current settlement's outcome is claimed (or closed quietly)."""
    claim = (row["extra"] or {}).get("delivered")
    if not isinstance(claim, dict):
        return False
    if claim.get("settled_at") is None:
        return claim.get("how") == "closed"
    return bool(claim.get("settled_at") == row["settled_at"])


def answer(child: str, taken: Taken, limit: int) -> str:
    """What a parent is told of one child it waited for (see :meth:`Orchestration._take`)."""
    row, outcome = taken
    if row is None or outcome is None:
        status = row["status"] if row is not None else "gone"
        return f"Child {child} is still working ({status})."
    if outcome == "elsewhere":
        return f"Child {child} {row['status']}: its outcome already reached you as a message."
    return outcome_text(row, outcome, limit=limit)


def _label(row: NodeRow) -> str:
    return f"{row['node_id']} ({row['name']!r})" if row["name"] else row["node_id"]


def outcome_text(
    row: NodeRow, outcome: Outcome, note: str | None = None, *, limit: int = MAX_OUTCOME
) -> str:
    """A child's outcome as its parent reads it: one line saying what happened, then the
    outcome as compact JSON (long strings cut, ``None`` fields dropped)."""
    how = row["status"] if row["status"] in SETTLED else outcome.get("kind", "settled")
    lines = [f"Child {_label(row)} {how}."]
    if note:
        lines.append(f"Note: {note}")
    compact = json.dumps(_trim(outcome), ensure_ascii=False, separators=(",", ":"))
    if len(compact) > limit:
        compact = compact[:limit] + " … (cut; the whole outcome is at GET /v1/nodes/"
        compact += f"{row['node_id']}/outcome)"
    lines.append(f"Outcome: {compact}")
    return "\n".join(lines)


def _trim(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _trim(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_trim(v) for v in value]
    if isinstance(value, str) and len(value) > MAX_FIELD:
        return value[:MAX_FIELD] + f" … ({len(value) - MAX_FIELD} more characters)"
    return value


def child_summary(rows: Iterable[NodeRow]) -> list[dict[str, Any]]:
    """Children as ``list-children`` shows them."""
    return [
        {"node_id": r["node_id"], "name": r["name"], "status": r["status"], "turns": r["turns"]}
        for r in rows
    ]
