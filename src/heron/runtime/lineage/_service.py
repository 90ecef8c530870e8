"""Node lineage: fork, revive, recycle, relaunch-root, promote and demote."""

from __future__ import annotations

import asyncio
import logging
import shutil
import time
from typing import TYPE_CHECKING

from ... import api
from ..._core import ProviderError, Usage
from ..._core.compaction import compaction_request
from ...agents import AgentState
from .. import jobs, orchestration, worktrees
from ..nodes import DETERMINISTIC, INHERITED, SETTLED, Feature, Kernel, NodeRow, Stop, copy_fields
from ..profiles import given_model
from ..server import ApiError
from ._routes import add_lineage_routes

if TYPE_CHECKING:
    from fastapi import FastAPI


__all__ = ["INVOLUNTARY", "RECYCLE_TIMEOUT", "Lineage"]

log = logging.getLogger("heron.runtime")

INVOLUNTARY = frozenset({"provider_error", "crashed"})
"""Failure reasons ``revive-all`` revives (a decline or a deadline is meant), unless the
failure would repeat (see ``_runs.DETERMINISTIC``)."""

REVIVABLE = ("dormant", "interrupted", "failed")
"""Statuses revive and recycle accept."""

RECYCLE_TIMEOUT = 300.0
"""Seconds recycle waits for the node's model to write its summary."""

STOP_WAIT = 30.0
"""Seconds relaunch-root tries to stop a running root before giving up (tree untouched)."""


class Lineage(Feature):
    """The lineage operations: fork, revive, recycle, relaunch-root, promote."""

    def __init__(self, engine: Kernel) -> None:
        self.engine = engine
        self._relaunching: set[str] = set()

    def check_not_relaunching(self, node_id: str) -> None:
        """``409 node_relaunching`` while relaunch-root is starting ``node_id`` over."""
        if node_id in self._relaunching:
            raise ApiError(
                409,
                "node_relaunching",
                f"node {node_id!r} is being relaunched: try again once it runs",
            )

    # -- fork ------------------------------------------------------------------

    def routes(self, app: FastAPI) -> None:
        """Serve the lineage actions of ``/v1/nodes``."""
        add_lineage_routes(app, self)

    def check_message(self, row: NodeRow) -> None:
        """``409 node_relaunching`` while relaunch-root is starting the node over."""
        self.check_not_relaunching(row["node_id"])

    async def derive(self, row: NodeRow, request: api.NodeCreateRequest) -> None:
        """A fork's row from its original (see :meth:`inherit`)."""
        if request.fork_from is not None:
            await self.inherit(row, request)

    async def inserted(self, row: NodeRow) -> None:
        """A fork's workspace, copied before its first run (see :meth:`copy_workspace`)."""
        await self.copy_workspace(row)

    async def inherit(self, row: NodeRow, request: api.NodeCreateRequest) -> None:
        """Make a new node's ``row`` a fork of ``request.fork_from`` (a create's fork branch).

        The conversation is copied as the original last saved it (for a running
        original: as of its last finished run). Fields the create set win. A fork
        inherits its original's mode, and shares an explicit ``cwd`` (the same
        directory, not a copy); without one it gets a copy of the original's own
        workspace (see :meth:`copy_workspace`).
        """
        assert request.fork_from is not None
        source = await self.engine.row(request.fork_from)
        given = request.model_fields_set
        # A pinned original's fork works in the same directory, pinned too, unless the
        # create pins it elsewhere itself.
        pinned = bool(source["pin_cwd"]) and "pin_cwd" not in given
        if pinned and "cwd" in given and row["cwd"] != source["cwd"]:
            raise ApiError(
                422,
                "invalid_cwd",
                f"node {source['node_id']!r} is pinned to {source['cwd']} (pin_cwd): its "
                "forks work there too; leave cwd out, or give pin_cwd to pin it elsewhere",
            )
        own_cwd = not pinned and ("cwd" in given or "pin_cwd" in given)
        copied = [
            column
            for column in INHERITED
            if (not own_cwd if column in ("cwd", "pin_cwd") else column not in given)
        ]
        copy_fields(row, source, copied)
        if "model" in copied:
            # Only the model the original was given: its kind's or profile's comes
            # again from the fork's own kind and profile (Profiles.apply).
            row["model"] = given_model(source)
        row["state"] = source["state"]
        row["extra"] = {**row["extra"], "forked_from": source["node_id"]}
        # Its own worktree, if the source has one.
        self.engine.features.get(worktrees.Worktrees).inherit(row, source, request.worktree)

    async def copy_workspace(self, row: NodeRow) -> None:
        """Give a just-inserted fork without a ``cwd`` a copy of its original's workspace
        (``$HERON_HOME/nodes/<id>``), before its first run starts."""
        source = row["extra"].get("forked_from")
        if row["cwd"] is not None or source is None:
            return
        original = self.engine.config.home / "nodes" / source
        if not original.is_dir():
            return  # the original never used its workspace
        target = self.engine.config.home / "nodes" / row["node_id"]
        try:
            await asyncio.to_thread(
                shutil.copytree, original, target, symlinks=True, dirs_exist_ok=True
            )
        except OSError:  # the fork still works, in a workspace missing some files
            log.exception("copying the workspace of %s to its fork %s failed", source, target)

    async def fork(self, node_id: str, request: api.ForkRequest) -> api.Node:
        """A new node continuing from a copy of ``node_id``'s conversation (see :meth:`inherit`).

        It sits beside the original (same parent); a ``prompt`` starts it at once.
        """
        source = await self.engine.row(node_id)
        await self._check_ancestors(source, "forked")
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
        that changed is re-read), so a provider that recovered is used. A node that
        never ran (created with ``no_kickoff``) reads its prompt first, then
        ``message``. Refused (409) for a node under a settled parent.
        """
        engine = self.engine
        async with engine.locked(node_id):
            row = await engine.row(node_id)
            _check_stopped(row, "revived")
            self.check_not_relaunching(node_id)
            engine.features.get(worktrees.Worktrees).check_usable(row)
            await self._check_ancestors(row, "revived")
            deadline = row["deadline_at"]
            if deadline is not None and deadline <= time.time():
                # It would be cancelled the moment it ran: say so rather than pretend.
                raise ApiError(
                    409,
                    "deadline_passed",
                    f"node {node_id!r} is past its deadline: give it a new one "
                    "(PATCH …/config) before reviving it",
                )
            await engine.prepare_model(row["model"])
            if row["settled_at"] is not None and row["status"] == "failed":
                await engine.store.unsettle(node_id, status="dormant")
            if deadline is not None:  # a failed node's was disarmed when it settled
                await engine.set_deadline(node_id, deadline - time.time())
            if message is not None:
                await engine.deliver(row, message)  # (the prompt first if never sent)
            else:
                if row["runs"] == 0 and row["prompt"] is not None:
                    await engine.store.add_message(node_id, row["prompt"])  # never sent
                await engine.start_next_run(node_id)
        # Outcomes of children that settled while it was failed reach it now.
        await engine.features.get(orchestration.Orchestration).deliver_pending(node_id)
        return await engine.node(node_id)

    async def revive_all(self) -> api.ReviveAllResult:
        """Revive every node that stopped involuntarily (see :class:`api.ReviveAllResult`)."""
        store = self.engine.store
        revived: list[api.Node] = []
        failed: list[api.ReviveFailure] = []
        for row in await store.list_nodes(status=["interrupted", "failed"]):
            node_id = row["node_id"]
            if not await self._involuntary(row) or await self._settled_ancestor(row):
                continue
            try:
                revived.append(await self.revive(node_id))
            except ApiError as exc:  # its state changed meanwhile, or its model is gone
                error = api.ErrorBody(code=exc.code, message=exc.message, details=exc.details)
                failed.append(api.ReviveFailure(node_id=node_id, error=error))
            except Exception as exc:  # one node's fault must not stop the others
                log.exception("reviving node %s failed", node_id)
                message = f"reviving failed: {type(exc).__name__}: {exc}"
                error = api.ErrorBody(code="revive_failed", message=message)
                failed.append(api.ReviveFailure(node_id=node_id, error=error))
        return api.ReviveAllResult(revived=revived, failed=failed)

    async def _involuntary(self, row: NodeRow) -> bool:
        if row["status"] == "interrupted":
            return bool(row["extra"].get("interrupted_by") != "request")
        outcome = await self.engine.store.outcome(row["node_id"])
        if outcome is None or outcome.get("reason") not in INVOLUNTARY:
            return False
        detail = outcome.get("detail")
        return str(detail.get("error_type") if detail else None) not in DETERMINISTIC

    async def _settled_ancestor(self, row: NodeRow) -> NodeRow | None:
        seen = {row["node_id"]}
        while row["parent"] is not None and row["parent"] not in seen:
            parent = await self.engine.store.node(row["parent"])
            if parent is None:
                return None
            if parent["status"] in SETTLED:
                return parent
            seen.add(parent["node_id"])
            row = parent
        return None

    async def _check_ancestors(self, row: NodeRow, done: str) -> None:
        ancestor = await self._settled_ancestor(row)
        if ancestor is not None:
            raise ApiError(
                409,
                "parent_settled",
                f"node {row['node_id']!r} cannot be {done}: the node above it, "
                f"{ancestor['node_id']!r}, is {ancestor['status']}",
            )

    # -- recycle -------------------------------------------------------------------

    async def recycle(self, node_id: str) -> api.Recycled:
        """Replace the node's context with a summary its own model writes; same id.

        The whole saved state is kept except the working context: ``memory``
        becomes the summary (what the model sees from then on) and the working
        messages are emptied; the full history stays in ``messages_full``. The
        node keeps its status: the summary is used from its next run. The model
        is asked without holding the node (up to :data:`RECYCLE_TIMEOUT`); if the
        node changed meanwhile (a message woke it, say), nothing is written and
        the answer is ``409 node_changed``.
        """
        engine = self.engine
        async with engine.locked(node_id):
            row = await engine.row(node_id)
            _check_stopped(row, "recycled")
            self.check_not_relaunching(node_id)
            if row["state"] is None:
                raise ApiError(
                    409, "no_conversation", f"node {node_id!r} has no saved conversation yet"
                )
            state = AgentState.load(row["state"])
            working = state.working_messages()
            if not working:
                raise ApiError(409, "no_conversation", f"node {node_id!r} has nothing to summarise")
            await engine.prepare_model(row["model"])
        summary, usage = await self._summarise(row["model"], state)
        async with engine.locked(node_id):
            now = await engine.row(node_id)
            if any(now[c] != row[c] for c in ("status", "runs", "state", "model")):
                raise ApiError(
                    409,
                    "node_changed",
                    f"node {node_id!r} changed while its summary was written: recycle it again",
                )
            recycles = int(now["extra"].get("recycles", 0)) + 1
            await engine.store.update_node(
                node_id,
                state=state.with_memory(summary, usage).model_dump(),
                # recycled_at: final reports before it are not this settlement's (_reports).
                extra={**now["extra"], "recycles": recycles, "recycled_at": time.time()},
            )
            await engine.store.add_usage(
                node_id, turns=0, input_tokens=usage.input_tokens, output_tokens=usage.output_tokens
            )
        return api.Recycled(node=await engine.node(node_id), summary=summary)

    async def _summarise(self, model: str | None, state: AgentState) -> tuple[str, Usage]:
        request = compaction_request(state.memory, state.working_messages())
        try:
            async with self.engine.providers.use(model) as provider:  # no key in its errors
                response = await asyncio.wait_for(provider.chat(request), RECYCLE_TIMEOUT)
        except TimeoutError:
            raise ApiError(
                504,
                "summary_timeout",
                f"the node's model wrote no summary within {RECYCLE_TIMEOUT:g} s",
            ) from None
        except ProviderError as exc:
            raise ApiError(
                502, "provider_error", f"the node's model could not summarise: {exc}"
            ) from None
        except Exception as exc:  # a fault outside the provider's own errors
            log.exception("summarising a node's conversation failed")
            raise ApiError(
                502,
                "summary_failed",
                f"summarising failed: {type(exc).__name__}: {exc}",
            ) from None
        summary = response.content.strip()
        if not summary:
            raise ApiError(502, "empty_summary", "the node's model wrote an empty summary")
        usage = Usage(
            input_tokens=response.input_tokens, output_tokens=response.output_tokens, requests=1
        )
        return summary, usage

    # -- relaunch-root ------------------------------------------------------------

    async def relaunch_root(self, node_id: str) -> api.Node:
        """Start the tree ``node_id`` belongs to over; returns its root, running again.

        The root (found by walking ``parent``) is stopped if it is running; every
        node below it is closed (``cancelled``); the root's outcome, if it has
        one, is archived as by revive; its conversation is discarded and it runs
        again, same id, from its original prompt. Messages it had not read are
        kept and read after the prompt. Its model is loaded again first (a changed
        script is re-read; one that no longer loads answers 422 and changes
        nothing). Its deadline, if it has one, is its last given span (at create,
        or a later ``PATCH …/config``) counted again from now. Meanwhile messages
        and revives of the root answer ``409 node_relaunching``. Its background jobs
        are killed; a worktree it works in is kept as the previous attempt left it,
        uncommitted edits included (commit or clean them first if the new attempt
        must not see them).

        A forked root starts over from its own prompt in a fresh conversation:
        the conversation its fork copied is not part of the restart.
        """
        engine = self.engine
        root = await self._root(await engine.row(node_id))
        root_id = root["node_id"]
        if root["prompt"] is None:
            raise ApiError(
                409, "no_prompt", f"root {root_id!r} has no original prompt to start from"
            )
        engine.features.get(worktrees.Worktrees).check_usable(root)
        await engine.prepare_model(root["model"])  # before anything is stopped
        async with engine.locked(root_id):
            self.check_not_relaunching(root_id)
            self._relaunching.add(root_id)
            settled_at = (await engine.row(root_id))["settled_at"]
        try:
            await self._stop_root(root_id)  # 409 while the tree is still untouched
            for child in await engine.store.children(root_id):
                # quiet: the cancelled children's outcomes must not reach the fresh root.
                message = f"its root {root_id} was relaunched"
                await engine.close_subtree(child, "cancelled", message, quiet=True)
            async with engine.locked(root_id):
                root = await engine.row(root_id)
                if root["settled_at"] != settled_at:  # a close (or its deadline) came first
                    raise ApiError(
                        409,
                        "node_settled",
                        f"root {root_id!r} was {root['status']} while being relaunched",
                    )
                await self._restart(root)
        finally:
            self._relaunching.discard(root_id)
        return await engine.node(root_id)

    async def _stop_root(self, root_id: str) -> None:
        engine = self.engine
        give_up = time.monotonic() + STOP_WAIT
        while (row := await engine.row(root_id))["status"] == "running":
            if time.monotonic() > give_up:
                raise ApiError(409, "node_running", f"root {root_id!r} did not stop; try again")
            await engine.stop_run(root_id, row["runs"], Stop(kind="interrupted"))

    async def _restart(self, root: NodeRow) -> None:
        """Start the stopped ``root`` again from its prompt (under its lock)."""
        engine, root_id, extra = self.engine, root["node_id"], root["extra"]
        if "deadline_seconds" in extra:
            span = extra["deadline_seconds"]
        else:  # a node from before the span was kept
            at = root["deadline_at"]
            span = at - root["created_at"] if at is not None else None
        relaunches = int(extra.get("relaunches", 0)) + 1
        await engine.store.unsettle(
            root_id,
            status="dormant",
            state=None,
            pending_result=None,
            extra={**extra, "relaunches": relaunches, "relaunched_at": time.time()},
        )
        prompt = root["prompt"]
        assert prompt is not None  # (relaunch refuses a root without one)
        await engine.store.queue_first(root_id, prompt)
        # The previous attempt's jobs end with it.
        await engine.features.get(jobs.Jobs).release(root_id)
        await engine.set_deadline(root_id, span)
        await engine.start_next_run(root_id)

    async def _root(self, row: NodeRow) -> NodeRow:
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
        """Record ``mode`` on the node (from its next run); ``message`` is then sent to it.

        A refusal (409) changes nothing: the checks come before the mode is written.
        """
        engine = self.engine
        async with engine.locked(node_id):
            row = await engine.row(node_id)
            status = row["status"]
            if status in SETTLED:
                hint = "revive it first" if status == "failed" else "fork it to go on"
                raise ApiError(
                    409, "node_settled", f"node {node_id!r} is {status}: it runs no more ({hint})"
                )
            if message is not None:
                self.check_not_relaunching(node_id)
            if row["mode"] != mode:
                await engine.store.update_node(node_id, mode=mode)
            if message is not None:
                await engine.deliver(row, message)
        return await engine.node(node_id)


def _check_stopped(row: NodeRow, done: str) -> None:
    """``409`` unless the node is dormant, interrupted or failed."""
    node_id, status = row["node_id"], row["status"]
    if status == "running":
        raise ApiError(409, "node_running", f"node {node_id!r} is running: it cannot be {done}")
    if status not in REVIVABLE:
        raise ApiError(409, "node_settled", f"node {node_id!r} is {status}: it cannot be {done}")
