"""The warm pool: pre-started nodes that serve ``prefer_warm`` creates."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import logging
import secrets
import shutil
import time
from collections import OrderedDict

from ... import api
from .. import jobs, kinds
from ..kinds import Kind
from ..nodes import LAUNCH_FIELDS, Feature, Kernel, NodeRow, RunPlan, fields_of

__all__ = ["MAX_TUPLES", "WarmPool", "launch_key"]

log = logging.getLogger("heron.runtime")

MAX_TUPLES = 8
"""How many launch tuples the pool keeps nodes ready for (least recently asked dropped)."""


def launch_key(row: NodeRow, kind: Kind, default_model: str) -> str:
    """The launch tuple of a node row as a digest; it covers the kind's definition too,
    so a warm node made before its kind file changed serves no create after, and the
    daemon's ``default_model`` for a row naming none, so one prepared on the default
    before it changed (``PUT /v1/model-config``) serves no create after either. Scopes
    are a set: their order does not matter."""
    fields = fields_of(row, LAUNCH_FIELDS)
    fields["model"] = fields["model"] or default_model
    if fields["scopes"] is not None:
        fields["scopes"] = sorted(fields["scopes"])
    tuple_ = [fields, dataclasses.asdict(kind)]
    text = json.dumps(tuple_, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


class WarmPool(Feature):
    """The daemon's warm nodes, by launch tuple."""

    def __init__(self, engine: Kernel) -> None:
        self.engine = engine
        # A worker keeps none: a warm run waits in the process serving creates (the front).
        self.size = 0 if engine.config.role == "worker" else engine.config.warm_pool
        """Warm nodes kept ready per launch tuple (0: no pool)."""
        self._ready: OrderedDict[str, list[str]] = OrderedDict()
        self._templates: dict[str, NodeRow] = {}
        self._waiters: dict[str, asyncio.Future[bool]] = {}
        self._refilling: set[str] = set()

    def ready(self, key: str | None = None) -> int:
        """How many warm nodes are waiting (for one launch tuple, or in all)."""
        if key is not None:
            return len(self._ready.get(key, ()))
        return sum(len(ids) for ids in self._ready.values())

    def eligible(self, request: api.NodeCreateRequest, prompt: str | None) -> bool:
        """Whether a create (starting with ``prompt``) could be served warm; else it is
        created cold, as documented on ``prefer_warm``."""
        return (
            self.size > 0
            and request.prefer_warm
            and prompt is not None
            and request.node_id is None
            and request.fork_from is None
            and request.worktree in (None, False)
        )

    # -- serving a create ---------------------------------------------------------

    async def claim(
        self, request: api.NodeCreateRequest, row: NodeRow, prompt: str | None
    ) -> NodeRow | None:
        """Hand a warm node matching ``row``'s tuple the create's fields and first message.

        Returns the node's row (its id is the warm node's), or ``None`` when the create
        is not to be served warm or nothing is ready (the caller creates cold); an
        eligible create has the tuple's pool refilled either way.
        """
        if not self.eligible(request, prompt):
            return None
        assert prompt is not None and row["kind"] is not None  # (the profile set the kind)
        kind = await self.engine.features.get(kinds.Kinds).find(row["kind"], status=422)
        key = launch_key(row, kind, self.engine.providers.default)
        await self._prune()
        self._want(key, row)
        ready = self._ready.get(key, [])
        while ready:
            node_id = ready.pop(0)
            claimed: NodeRow = {
                **row,
                "node_id": node_id,
                "extra": {**row["extra"], "served_warm": True},
            }
            if await self.engine.store.claim_warm(key, claimed, prompt):
                self._spawn_refill(key)
                return claimed
            self._waiters.pop(node_id, None)  # its row vanished: nothing waits on it any more
        self._spawn_refill(key)
        return None

    async def before_launch(self) -> None:
        """Discard the warm nodes a previous daemon left, before DBOS resumes their runs
        (the front's, not a worker's: they are the front's)."""
        if self.engine.config.role != "worker":
            await self.discard_stored()

    def serve(self, node_id: str) -> None:
        """Let a claimed node's waiting run go on to its prompt."""
        waiter = self._waiters.pop(node_id, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(True)

    async def warm(self, node_id: str, plan: RunPlan, failure: str | None) -> bool:
        """A warm node's run is set up: it waits until a create claims it (``True``), or is
        discarded, what its run left removed. One whose run could not be set up
        (``failure``) is discarded unless a create claimed it first (that create's node
        then fails as it would have made cold)."""
        if (failure is not None and await self.unprepared(node_id, failure)) or (
            not await self.claimed(node_id)
        ):
            await self.cleanup(node_id, plan["cwd"])
            return False
        return True

    async def claimed(self, node_id: str) -> bool:
        """Wait (in the node's run) until the warm node is claimed (``True``) or discarded.

        A run resumed after a restart has no waiter here: its row says which.
        """
        waiter = self._waiters.get(node_id)
        if waiter is not None:
            return await asyncio.shield(waiter)
        row = await self.engine.store.node(node_id)
        return row is not None and row.get("warm") is None

    async def unprepared(self, node_id: str, reason: str | None) -> bool:
        """Take a warm node whose run could not be set up out of the pool, so no create
        gets it; ``False`` if a create claimed it first (it then fails as a cold one)."""
        for ids in self._ready.values():
            if node_id in ids:
                ids.remove(node_id)
        if not await self.engine.store.delete_warm([node_id]):
            return False
        log.warning("warm node %s discarded: its run could not be set up: %s", node_id, reason)
        self._waiters.pop(node_id, None)
        return True

    async def cleanup(self, node_id: str, cwd: str | None) -> None:
        """Remove what a discarded warm node's run left (called by that run, at its end):
        its shell, its event numbering, and its own workspace (when it had no ``cwd``)."""
        await self.engine.features.get(jobs.Jobs).discard(node_id)
        self.engine.events.forget(node_id)
        if cwd is None:
            path = self.engine.config.home / "nodes" / node_id
            await asyncio.to_thread(shutil.rmtree, path, ignore_errors=True)

    # -- filling ------------------------------------------------------------------

    async def _prune(self) -> None:
        """Discard the nodes of tuples whose kind (or the daemon's default model) changed
        or vanished since they were made (no create can match them any more)."""
        if self._templates:
            default = self.engine.providers.default
            for key in await asyncio.to_thread(self._stale, dict(self._templates), default):
                self._drop(key)

    def _stale(self, templates: dict[str, NodeRow], default: str) -> list[str]:
        """The keys of ``templates`` their kind as it is now (and the ``default`` model) no
        longer gives (one scan)."""
        known, _ = self.engine.features.get(kinds.Kinds).scan()
        return [
            key
            for key, template in templates.items()
            if template["kind"] not in known
            or launch_key(template, known[template["kind"]], default) != key
        ]

    def _drop(self, key: str) -> None:
        """Stop keeping nodes ready for ``key``, and discard those it has."""
        ids = self._ready.pop(key, [])
        self._templates.pop(key, None)
        for node_id in ids:
            self.engine.spawn(self._discard(node_id))

    def _want(self, key: str, row: NodeRow) -> None:
        """Note that creates ask for ``key`` (``row`` its template), most recent last;
        past :data:`MAX_TUPLES` the least recently asked tuple is dropped."""
        self._ready.setdefault(key, [])
        self._ready.move_to_end(key)
        self._templates.setdefault(key, row.copy())
        while len(self._ready) > MAX_TUPLES:
            self._drop(next(iter(self._ready)))

    def _spawn_refill(self, key: str) -> None:
        """Refill ``key``'s nodes in the background, unless that is going on or not needed."""
        if key not in self._refilling and self.ready(key) < self.size:
            self._refilling.add(key)
            self.engine.spawn(self._refill(key))

    async def _refill(self, key: str) -> None:
        """Pre-start nodes for ``key`` until it has :attr:`size` (or is dropped)."""
        try:
            while key in self._ready and self.ready(key) < self.size:
                node_id = await self._make(key)
                if key in self._ready:
                    self._ready[key].append(node_id)
                else:  # dropped from the pool while it was being made
                    await self._discard(node_id)
        except Exception:
            log.exception("pre-starting a warm node failed")
        finally:
            self._refilling.discard(key)

    async def _make(self, key: str) -> str:
        """Insert a warm node for ``key`` (from its template row) and launch its run."""
        now = time.time()
        node_id = f"n-{secrets.token_hex(8)}"
        row: NodeRow = {
            **self._templates[key],
            "node_id": node_id,
            "status": "running",
            "runs": 1,
            "prompt": None,
            "name": None,
            "description": None,
            "deadline_at": None,
            "extra": {},
            "created_at": now,
            "updated_at": now,
            "warm": key,
        }
        await self.engine.store.insert_node(row, None)
        self.engine.events.fresh(node_id)
        self._waiters[node_id] = asyncio.get_running_loop().create_future()
        # Here, also in a daemon with workers: the create that claims it wakes it here.
        await self.engine.launch(node_id, 1, here=True)
        return node_id

    async def _discard(self, node_id: str) -> None:
        """Delete a warm node; its run, waiting to be claimed, ends and cleans up."""
        waiter = self._waiters.pop(node_id, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(False)
        await self.engine.store.delete_warm([node_id])

    async def discard_stored(self) -> None:
        """Delete the warm nodes a previous daemon left (before DBOS resumes workflows)."""
        homes = [
            self.engine.config.home / "nodes" / node_id
            for node_id in await self.engine.store.warm_without_cwd()
        ]
        count = await self.engine.store.delete_warm(None)
        for path in homes:  # (their runs never get to clean up: they are skipped)
            await asyncio.to_thread(shutil.rmtree, path, ignore_errors=True)
        if count:
            log.info("discarded %d warm nodes of the previous daemon", count)
