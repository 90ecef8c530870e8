"""Orchestration: children, outcome delivery, yield and wait.

A node in ``orchestrator`` mode gets tools to spawn children and manage them
(``_orchestrator_tools``); this module holds what those tools and the
``…/yield`` and ``…/wait`` routes share (``engine.orchestration``).

How a child's outcome reaches its parent, exactly once:

- while the parent's ``wait-children`` tool waits on the child, the tool hands it
  the outcome (as the tool's result);
- else, while the parent is parked by ``POST …/wait`` on the child, the outcome
  is held until every awaited child has settled, then all arrive in one message
  that wakes the parent;
- else, if the child's ``outcome_delivery`` action is ``message`` (what
  ``spawn-child`` arms by default), it is sent to the parent as a message, which
  wakes a dormant parent (one parked on other children only gets it queued);
- a child its parent closed (``close-child``) is not reported back.

An orchestrator whose turn ends while children it will hear from are still
working goes ``dormant`` rather than settling: it wakes with their outcomes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from collections.abc import Coroutine, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from .. import api
from .._core import ToolError
from ._errors import ApiError
from ._rows import maybe_when
from ._store import Row

if TYPE_CHECKING:
    from ._engine import Engine

__all__ = ["Orchestration", "outcome_text"]

log = logging.getLogger("heron.runtime")

_SETTLED = frozenset({"completed", "failed", "cancelled"})

MAX_FIELD = 2000
"""Longest string kept in an outcome shown to a parent (longer ones are cut)."""

MAX_OUTCOME = 6000
"""Longest outcome JSON shown to a parent in one block."""


class Orchestration:
    """Parents and children of one engine; see the module docstring."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        engine.settle_hooks.append(self._on_settled)
        self._watchers: dict[str, list[asyncio.Event]] = {}
        """Children a ``wait-children`` call waits on, and the events that wake it."""
        self._quiet: set[str] = set()
        self._in_flight: dict[str, asyncio.Event] = {}
        """Children whose settlement is being handled (set once it is)."""
        """Children their parent closed: their outcome is not delivered back."""
        self._locks: dict[str, asyncio.Lock] = {}
        self._spawning: dict[str, asyncio.Lock] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._background: set[asyncio.Task[None]] = set()

    def _lock(self, parent: str) -> asyncio.Lock:
        return self._locks.setdefault(parent, asyncio.Lock())

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

    async def children(self, parent: str) -> list[Row]:
        """The rows of the nodes whose parent is ``parent``, oldest first."""
        rows = [await self.engine.store.node(c) for c in await self.engine.store.children(parent)]
        found = [r for r in rows if r is not None]
        return sorted(found, key=lambda r: (r["created_at"], r["node_id"]))

    async def child(self, parent: str, ref: str) -> Row:
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

    async def hears_from_children(self, node_id: str) -> bool:
        """Whether children whose outcomes will be delivered to ``node_id`` are still working."""
        for row in await self.children(node_id):
            if row["status"] not in _SETTLED and _delivery(row) == "message":
                return True
        return False

    def quiet(self, child: str) -> None:
        """Do not deliver ``child``'s outcome (its parent is closing it)."""
        self._quiet.add(child)

    async def collect(self, children: Sequence[str], seconds: float) -> dict[str, Any]:
        """Wait up to ``seconds`` for the children to settle; their outcomes (``None``:
        still working). Outcomes arriving meanwhile are taken here, not delivered as messages."""
        events = {c: asyncio.Event() for c in dict.fromkeys(children)}
        for child, event in events.items():
            self._watchers.setdefault(child, []).append(event)
        try:
            # Registered before reading: a settlement in between still sets the event.
            outcomes = {c: await self.engine.store.outcome(c) for c in events}
            pending = [events[c].wait() for c, o in outcomes.items() if o is None]
            if pending:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(seconds):
                        await asyncio.gather(*pending)
                outcomes = {c: await self.engine.store.outcome(c) for c in events}
            # A settlement handled before this call began may be delivering its
            # outcome as a message right now: let it finish, so the caller can tell
            # (``delivered`` in the child's extra) and not hand it over twice.
            for child in events:
                flight = self._in_flight.get(child)
                if flight is not None and outcomes[child] is not None:
                    await flight.wait()
            return outcomes
        finally:
            for child, event in events.items():
                watchers = self._watchers.get(child, [])
                with contextlib.suppress(ValueError):
                    watchers.remove(event)
                if not watchers:
                    self._watchers.pop(child, None)

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
        from ._engine import Stop  # _engine imports this module

        await self.engine._stop_run(node_id, run, Stop(kind="yielded"))

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
        down, and re-arm the timeouts of the others."""
        for row in await self.engine.store.list_nodes(status=["dormant", "interrupted"]):
            waiting = (row["extra"] or {}).get("waiting")
            if not isinstance(waiting, dict):
                continue
            node_id, token, deadline = row["node_id"], waiting["token"], waiting["deadline_at"]
            async with self._lock(node_id):
                await self._finish_wait(node_id, token, timed_out=False)
            if deadline is not None:
                self._arm(node_id, token, max(deadline - time.time(), 0.0))

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
        await self.engine.store.merge_extra(node_id, waiting=None)
        if not timed_out:
            timer = self._timers.pop(node_id, None)
            if timer is not None:
                timer.cancel()
        if row["status"] in _SETTLED:
            return
        rows = {c: await self.engine.store.node(c) for c in children}
        if timed_out:
            head = "[heron] Your wait for your children timed out."
        else:
            head = "[heron] Every child you waited for has settled."
        blocks = [head]
        for child in children:
            outcome, child_row = outcomes[child], rows[child]
            if outcome is not None and child_row is not None:
                blocks.append(outcome_text(child_row, outcome))
                await self.engine.store.merge_extra(child, delivered="wait")
            else:
                status = child_row["status"] if child_row is not None else "gone"
                blocks.append(f"Child {child} is still working ({status}).")
        await self._send(node_id, "\n\n".join(blocks))

    # -- delivery ------------------------------------------------------------

    async def _on_settled(self, node_id: str, outcome: dict[str, Any]) -> None:
        # Synchronously first: a wait-children call waiting on this node takes the
        # outcome, and nothing else must deliver it again.
        watchers = self._watchers.get(node_id, [])
        taken = bool(watchers)
        for event in watchers:
            event.set()
        quiet = node_id in self._quiet
        self._quiet.discard(node_id)
        flight = self._in_flight[node_id] = asyncio.Event()
        try:
            await self._deliver(node_id, outcome, taken=taken or quiet)
        finally:
            flight.set()
            if self._in_flight.get(node_id) is flight:
                del self._in_flight[node_id]

    async def _deliver(self, node_id: str, outcome: dict[str, Any], *, taken: bool) -> None:
        row = await self.engine.store.node(node_id)
        if row is None or row["parent"] is None:
            return
        parent = row["parent"]
        async with self._lock(parent):
            parent_row = await self.engine.store.node(parent)
            if parent_row is None or parent_row["status"] in _SETTLED:
                return
            waiting = (parent_row["extra"] or {}).get("waiting")
            if waiting is not None and node_id in waiting["children"]:
                await self._finish_wait(parent, waiting["token"], timed_out=False)
                return
            if taken or _delivery(row) != "message":
                return
            text = outcome_text(row, outcome, _payload(row))
            await self.engine.store.merge_extra(node_id, delivered="message")
            if waiting is not None:
                # Parked on other children: held in the inbox until the wait ends.
                await self.engine.store.add_message(parent, text)
            else:
                await self._send(parent, text)

    async def _send(self, node_id: str, text: str) -> None:
        try:
            await self.engine.message(node_id, text)
        except ApiError as exc:  # settled in the meantime: nobody left to tell
            log.info("outcome not delivered to %s: %s", node_id, exc.message)


def _refuse_settled(row: Row, action: str) -> None:
    if row["status"] in _SETTLED:
        raise ApiError(
            409,
            "node_settled",
            f"node {row['node_id']!r} is {row['status']}: there is no turn to {action}",
        )


def _delivery(row: Row) -> str | None:
    delivery = (row["extra"] or {}).get("outcome_delivery")
    return delivery.get("action") if isinstance(delivery, dict) else None


def _payload(row: Row) -> str | None:
    delivery = (row["extra"] or {}).get("outcome_delivery")
    return delivery.get("payload") if isinstance(delivery, dict) else None


def _label(row: Row) -> str:
    return f"{row['node_id']} ({row['name']!r})" if row["name"] else row["node_id"]


def outcome_text(row: Row, outcome: dict[str, Any], note: str | None = None) -> str:
    """A child's outcome as its parent reads it: one line saying what happened, then the
    outcome as compact JSON (long strings cut, ``None`` fields dropped)."""
    how = row["status"] if row["status"] in _SETTLED else outcome.get("kind", "settled")
    lines = [f"Child {_label(row)} {how}."]
    if note:
        lines.append(f"Note: {note}")
    compact = json.dumps(_trim(outcome), ensure_ascii=False, separators=(",", ":"))
    if len(compact) > MAX_OUTCOME:
        compact = compact[:MAX_OUTCOME] + " … (cut; the whole outcome is at GET /v1/nodes/"
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


def child_summary(rows: Iterable[Row]) -> list[dict[str, Any]]:
    """Children as ``list-children`` shows them."""
    return [
        {"node_id": r["node_id"], "name": r["name"], "status": r["status"], "turns": r["turns"]}
        for r in rows
    ]
