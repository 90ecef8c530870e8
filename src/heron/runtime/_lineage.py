"""Node lineage: fork, revive, recycle, relaunch-root, promote and demote.

- **fork** makes a new node that continues from a copy of another's saved
  conversation (``POST …/fork``, or ``fork_from`` on create); the original is
  left exactly as it was.
- **revive** starts a new run of a node that stopped: dormant, interrupted, or
  failed (its outcome is taken back and archived; it settles again later).
- **recycle** keeps the node's identity but replaces its context with a summary
  its own model writes.
- **relaunch-root** starts a whole tree over: the root's descendants are closed
  and the root runs again from its original prompt in a fresh conversation.
- **promote / demote** switch a node between ``orchestrator`` and ``base`` mode,
  effective from its next run.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from .. import api
from .._core import ProviderError
from .._core.tokens import estimate_tokens
from ..agents import AgentState
from ..agents._compaction import compaction_request
from ._errors import ApiError
from ._store import Row

if TYPE_CHECKING:
    from ._engine import Engine

__all__ = ["INHERITED", "INVOLUNTARY", "Lineage"]

INHERITED = (
    "model",
    "kind",
    "profile",
    "cwd",
    "pin_cwd",
    "scopes",
    "mode",
    "output_schema",
    "situational_context",
    "root_lifecycle",
)
"""Row columns a fork copies from its original unless its create sets them."""

INVOLUNTARY = frozenset({"provider_error", "crashed"})
"""Failure reasons ``revive-all`` revives (a decline or a deadline is meant)."""

REVIVABLE = ("dormant", "interrupted", "failed")
"""Statuses revive and recycle accept."""


class Lineage:
    """The lineage operations of one engine (``engine.lineage``)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    # -- fork ------------------------------------------------------------------

    async def inherit(self, row: Row, request: api.NodeCreateRequest) -> None:
        """Make a new node's ``row`` a fork of ``request.fork_from`` (a create's fork branch).

        The conversation is copied as the original last saved it (for a running
        original: as of its last finished run). Fields the create set win.
        """
        assert request.fork_from is not None
        source = await self.engine.row(request.fork_from)
        given = request.model_fields_set
        own_cwd = "cwd" in given or "pin_cwd" in given
        for column in INHERITED:
            if column in ("cwd", "pin_cwd"):
                if not own_cwd:
                    row[column] = source[column]
            elif column not in given:
                row[column] = source[column]
        row["state"] = source["state"]
        row["extra"] = {**row["extra"], "forked_from": source["node_id"]}
        self.engine.worktrees.inherit(row, source, request.worktree)  # its own, if source has one

    async def fork(self, node_id: str, request: api.ForkRequest) -> api.Node:
        """A new node continuing from a copy of ``node_id``'s conversation (see :meth:`inherit`).

        It sits beside the original (same parent); a ``prompt`` starts it at once.
        """
        source = await self.engine.row(node_id)
        create = api.NodeCreateRequest(
            **request.model_dump(exclude_unset=True),
            fork_from=node_id,
            parent=source["parent"],
            root=source["root"] and source["parent"] is None,
        )
        return await self.engine.create(create)

    # -- revive ------------------------------------------------------------------

    async def revive(self, node_id: str, message: str | None = None) -> api.Node:
        """Start a new run of a dormant, interrupted or failed node from its saved state.

        A failed node is un-settled first (its outcome moves to
        ``extra["previous_outcomes"]``); its model is loaded again (a script file
        that changed is re-read), so a provider that recovered is used.
        """
        engine = self.engine
        async with engine.locked(node_id):
            row = await engine.row(node_id)
            _check_stopped(row, "revived")
            engine.worktrees.check_usable(row)
            if row["deadline_at"] is not None and row["deadline_at"] <= time.time():
                # It would be cancelled the moment it ran: say so rather than pretend.
                raise ApiError(
                    409,
                    "deadline_passed",
                    f"node {node_id!r} is past its deadline: give it a new one "
                    "(PATCH …/config) before reviving it",
                )
            await engine._prepare_model(row["model"])
            if row["settled_at"] is not None and row["status"] == "failed":
                await engine.store.unsettle(node_id, status="dormant")
            if message is not None:
                await engine.store.add_message(node_id, message)
            await engine._wake(node_id)
        if row["deadline_at"] is not None:
            engine._arm_deadline(node_id, row["deadline_at"] - time.time())
        return await engine.node(node_id)

    async def revive_all(self) -> api.ReviveAllResult:
        """Revive every node that stopped involuntarily (see :class:`api.ReviveAllResult`)."""
        store = self.engine.store
        revived: list[api.Node] = []
        failed: list[api.ReviveFailure] = []
        for row in await store.list_nodes(status=["interrupted", "failed"]):
            node_id = row["node_id"]
            if row["status"] == "failed":
                outcome = await store.outcome(node_id)
                if outcome is None or outcome.get("reason") not in INVOLUNTARY:
                    continue
            try:
                revived.append(await self.revive(node_id))
            except ApiError as exc:  # its state changed meanwhile, or its model is gone
                error = api.ErrorBody(code=exc.code, message=exc.message, details=exc.details)
                failed.append(api.ReviveFailure(node_id=node_id, error=error))
        return api.ReviveAllResult(revived=revived, failed=failed)

    # -- recycle -------------------------------------------------------------------

    async def recycle(self, node_id: str) -> api.Recycled:
        """Replace the node's context with a summary its own model writes; same id.

        The whole saved state is kept except the working context: ``memory``
        becomes the summary (what the model sees from then on) and the working
        messages are emptied; the full history stays in ``messages_full``. The
        node keeps its status: the summary is used from its next run. The node's
        lock is held meanwhile, so a message waits for the summary.
        """
        engine = self.engine
        async with engine.locked(node_id):
            row = await engine.row(node_id)
            _check_stopped(row, "recycled")
            if row["state"] is None:
                raise ApiError(
                    409, "no_conversation", f"node {node_id!r} has no saved conversation yet"
                )
            state = AgentState.load(row["state"])
            working = state.working_messages()
            if not working:
                raise ApiError(409, "no_conversation", f"node {node_id!r} has nothing to summarise")
            await engine._prepare_model(row["model"])
            try:
                response = await engine.providers.get(row["model"]).chat(
                    compaction_request(state.memory, working)
                )
            except ProviderError as exc:
                raise ApiError(
                    502, "provider_error", f"the node's model could not summarise: {exc}"
                ) from None
            summary = response.content.strip()
            if not summary:
                raise ApiError(502, "empty_summary", "the node's model wrote an empty summary")
            fresh = state.model_copy(
                update={
                    "memory": summary,
                    "messages": [],
                    "context_tokens": estimate_tokens(summary),
                    "compactions": state.compactions + 1,
                    "input_tokens": state.input_tokens + response.input_tokens,
                    "output_tokens": state.output_tokens + response.output_tokens,
                    "requests": state.requests + 1,
                }
            )
            extra = {**row["extra"], "recycles": int(row["extra"].get("recycles", 0)) + 1}
            await engine.store.update_node(node_id, state=fresh.model_dump(), extra=extra)
            await engine.store.add_usage(
                node_id,
                turns=0,
                input_tokens=response.input_tokens,
                output_tokens=response.output_tokens,
            )
        return api.Recycled(node=await engine.node(node_id), summary=summary)

    # -- relaunch-root ------------------------------------------------------------

    async def relaunch_root(self, node_id: str) -> api.Node:
        """Start the tree ``node_id`` belongs to over; returns its root, running again.

        The root (found by walking ``parent``) is stopped if it is running; every
        node below it is closed (``cancelled``); the root's outcome, if it has
        one, is archived as by revive; its conversation is discarded and it runs
        again, same id, from its original prompt (messages it never read are
        delivered with it). Its model is loaded again first (a changed script is
        re-read; one that no longer loads answers 422 and changes nothing). A
        deadline it had is counted again from now. Its background jobs are killed;
        a worktree it works in is kept as the previous attempt left it, uncommitted
        edits included (commit or clean them first if the new attempt must not see them).
        """
        from ._engine import Stop  # _engine imports this module

        engine = self.engine
        root = await self._root(await engine.row(node_id))
        root_id = root["node_id"]
        if root["prompt"] is None:
            raise ApiError(
                409, "no_prompt", f"root {root_id!r} has no original prompt to start from"
            )
        engine.worktrees.check_usable(root)
        await engine._prepare_model(root["model"])  # before anything is stopped
        if root["status"] == "running":
            await engine._stop_run(root_id, root["runs"], Stop(kind="interrupted"))
        for child in await engine.store.children(root_id):
            await engine._close(child, "cancelled", f"its root {root_id} was relaunched")
        async with engine.locked(root_id):
            root = await engine.row(root_id)
            if root["status"] == "running":
                raise ApiError(409, "node_running", f"root {root_id!r} did not stop; try again")
            extra = {**root["extra"], "relaunches": int(root["extra"].get("relaunches", 0)) + 1}
            await engine.store.unsettle(
                root_id, status="dormant", state=None, pending_result=None, extra=extra
            )
            await engine.store.add_message(root_id, root["prompt"])
            await engine.jobs.release(root_id)  # the previous attempt's jobs end with it
            await engine._wake(root_id)
        if root["deadline_at"] is not None:
            span = root["deadline_at"] - root["created_at"]
            await engine.store.update_node(root_id, deadline_at=time.time() + span)
            engine._arm_deadline(root_id, span)
        return await engine.node(root_id)

    async def _root(self, row: Row) -> Row:
        seen = {row["node_id"]}
        while row["parent"] is not None and row["parent"] not in seen:
            parent = await self.engine.store.node(row["parent"])
            if parent is None:  # an orphan: the highest node still there is the root
                break
            seen.add(parent["node_id"])
            row = parent
        return row

    # -- mode ------------------------------------------------------------------------

    async def set_mode(self, node_id: str, mode: str, message: str | None = None) -> api.Node:
        """Record ``mode`` on the node (from its next run); ``message`` is then sent to it."""
        engine = self.engine
        async with engine.locked(node_id):
            row = await engine.row(node_id)
            if row["status"] in ("completed", "failed", "cancelled"):
                raise ApiError(
                    409,
                    "node_settled",
                    f"node {node_id!r} is {row['status']}: it runs no more (revive it first)",
                )
            if row["mode"] != mode:
                await engine.store.update_node(node_id, mode=mode)
        if message is not None:
            await engine.message(node_id, message)
        return await engine.node(node_id)


def _check_stopped(row: Row, done: str) -> None:
    """``409`` unless the node is dormant, interrupted or failed."""
    node_id, status = row["node_id"], row["status"]
    if status == "running":
        raise ApiError(409, "node_running", f"node {node_id!r} is running: it cannot be {done}")
    if status not in REVIVABLE:
        raise ApiError(409, "node_settled", f"node {node_id!r} is {status}: it cannot be {done}")
