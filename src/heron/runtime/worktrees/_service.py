"""Managed git worktrees: a node working on a branch of its own, beside the user's checkout."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from ... import api
from .. import jobs
from ..nodes import Feature, Kernel, NodeRow, RunPlan, RunSetup, Section, WorktreeRecord
from ..server import ApiError
from ._routes import add_worktrees_routes

if TYPE_CHECKING:
    from fastapi import FastAPI


__all__ = [
    "BRANCH_PREFIX",
    "GIT_TIMEOUT",
    "GitError",
    "Worktrees",
    "active_worktree",
    "to_worktree",
]

BRANCH_PREFIX = "heron/"
"""The branch a worktree gets is this plus its name."""

GIT_TIMEOUT = 60.0
"""Seconds one git command may take (a checkout of a large tree takes a while)."""

_SHOWN_CHANGES = 50  # uncommitted paths a worktree_dirty error lists

log = logging.getLogger("heron.runtime")


class GitError(Exception):
    """A git command failed, timed out or could not start; the message says which and why."""


def active_worktree(row: NodeRow) -> WorktreeRecord | None:
    """The node's worktree record (``workdir``, ``branch`` ...) while it is active."""
    tree = (row["extra"] or {}).get("worktree")
    return tree if isinstance(tree, dict) and tree["state"] == "active" else None


def to_worktree(row: NodeRow) -> api.NodeWorktree | None:
    """The node's worktree as the API shows it, if it was made one."""
    tree = (row["extra"] or {}).get("worktree")
    return api.NodeWorktree(**tree) if isinstance(tree, dict) else None


async def git(*args: str, cwd: str | Path, seconds: float = GIT_TIMEOUT) -> str:
    """Run ``git args`` in ``cwd``; its stdout, or :class:`GitError` with its stderr."""
    shown = " ".join(("git", *args))
    try:
        process = await asyncio.create_subprocess_exec(
            "git",
            *args,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            # No prompt can be answered here, and messages must read the same everywhere.
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"},
            # A group of its own: a timeout or a cancellation stops its hooks too.
            start_new_session=True,
        )
    except OSError as exc:
        raise GitError(f"could not run {shown} in {cwd}: {exc}") from None
    try:
        out, err = await asyncio.wait_for(process.communicate(), seconds)
    except TimeoutError:
        await _stop(process)
        raise GitError(f"{shown} took longer than {seconds:g} s and was stopped") from None
    except BaseException:
        await asyncio.shield(_stop(process))
        raise
    if process.returncode != 0:
        text = err.decode(errors="replace").strip() or f"exit code {process.returncode}"
        raise GitError(f"{shown} failed: {text}")
    return out.decode(errors="replace")


async def _stop(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    await process.wait()


def _check_name(name: str) -> None:
    # Also a path component and a branch name: the id pattern, minus what git refuses.
    if not api.is_valid_id(name) or ".." in name or name.endswith((".", ".lock")):
        raise ApiError(
            422,
            "invalid_worktree_name",
            f"not a valid worktree name: {name!r} (letters, digits, '_', '.', '-'; up to 128; "
            "no '..', not ending in '.' or '.lock')",
        )


class Worktrees(Feature):
    """Makes and removes nodes' git worktrees."""

    def __init__(self, engine: Kernel) -> None:
        self._engine = engine
        self._made: dict[str, WorktreeRecord] = {}
        """Worktrees made for creates not yet inserted, by node id (see :meth:`provision`)."""
        self.root = engine.config.home / "worktrees"
        """Where worktrees are made: ``$HERON_HOME/worktrees/<name>``."""
        self._making = asyncio.Lock()  # two creates must not both take one name

    def begin(self, row: NodeRow, plan: RunPlan) -> None:
        """While it has a worktree, the node works in it, on its branch."""
        tree = active_worktree(row)
        if tree is not None:
            plan["cwd"], plan["branch"] = tree["workdir"], tree["branch"]

    def setup(self, run: RunSetup) -> None:
        """A node in a worktree is told whose branch it is on."""
        branch = run.plan.get("branch")  # (a plan recorded before worktrees has no such key)
        if not run.small and branch:
            run.say(
                Section.WORKSPACE,
                f"That directory is in a git worktree made for this task, on branch "
                f"{branch}: commit your work on it (nothing is merged for you).",
            )

    def routes(self, app: FastAPI) -> None:
        """Serve the worktree close and abandon routes."""
        add_worktrees_routes(app, self)

    async def complete(self, row: NodeRow) -> None:
        """A node pinned to its directory (``pin_cwd``: it works there and nowhere else)
        takes no worktree, which would move it elsewhere: ``422``."""
        worktree = row["extra"]["worktree"]
        if row["pin_cwd"] and worktree is not None and worktree is not False:
            raise ApiError(
                422,
                "invalid_request",
                f"the node is pinned to {row['cwd']} (pin_cwd): it takes no worktree, "
                "which would move it elsewhere; drop one of the two",
            )

    async def inserted(self, row: NodeRow) -> None:
        """The node owns the worktree :meth:`provision` made for it now."""
        self._made.pop(row["node_id"], None)

    def check_message(self, row: NodeRow) -> None:
        """A node whose worktree was removed takes no message that would start a run."""
        if row["status"] != "running":
            self.check_usable(row)

    async def provision(self, row: NodeRow) -> None:
        """Make the worktree a new node asks for (the create's, or a fork's: see
        :meth:`inherit`) before its row exists, so its first run works in it."""
        requested = row["extra"]["worktree"]
        if requested is not None and requested is not False and not isinstance(requested, dict):
            record = row["extra"]["worktree"] = await self.make(row, requested)
            self._made[row["node_id"]] = record

    async def unprovision(self, row: NodeRow) -> None:
        """Remove the worktree :meth:`provision` made: no node owns it."""
        record = self._made.pop(row["node_id"], None)
        if record is not None:
            await self.discard(record)

    async def make(self, row: NodeRow, requested: bool | str) -> WorktreeRecord:
        """Make the worktree a new node asked for; its record, for the node's ``extra``."""
        node_id, cwd = row["node_id"], row["cwd"]
        name = node_id if requested is True else str(requested)
        _check_name(name)
        if cwd is None:
            raise ApiError(
                422,
                "worktree_needs_cwd",
                "a worktree is made from the repository holding the node's cwd: give cwd",
            )
        try:
            found = await git("rev-parse", "--show-toplevel", "--show-prefix", cwd=cwd)
        except GitError as exc:
            raise ApiError(
                422, "not_a_git_repository", f"cwd {cwd!r} is not in a git checkout: {exc}"
            ) from None
        top, prefix = [*found.split("\n"), ""][:2]  # the prefix line is empty at the top
        source = (row["extra"] or {}).get("worktree_from")  # a fork's: its original's branch
        ref = source if isinstance(source, str) else "HEAD"
        try:
            base = (
                await git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", cwd=top)
            ).strip()
        except GitError:
            raise ApiError(
                422,
                "not_a_git_repository",
                f"the repository at {top} has no commit {ref} to branch from"
                + (": commit first" if ref == "HEAD" else ""),
            ) from None
        branch = BRANCH_PREFIX + name
        path = self.root / name
        async with self._making:
            if await self._engine.store.node(node_id) is not None:
                # Checked here too: a taken id must not cost a worktree first.
                raise ApiError(409, "node_id_exists", f"a node with id {node_id!r} already exists")
            if path.exists() or await _has_branch(top, branch):
                raise ApiError(
                    409,
                    "worktree_exists",
                    f"worktree name {name!r} is in use "
                    f"({path} or branch {branch} of {top} exists): choose another name",
                )
            self.root.mkdir(parents=True, exist_ok=True)
            try:
                await git("worktree", "add", "-b", branch, str(path), base, cwd=top)
            except BaseException as exc:
                # Half made (a failing hook, a timeout): the branch is ours, it did not exist.
                await asyncio.shield(_undo_add(top, path, branch))
                if isinstance(exc, GitError):
                    raise ApiError(422, "worktree_failed", str(exc)) from None
                raise
        where = path / prefix
        where.mkdir(parents=True, exist_ok=True)
        return {
            "name": name,
            "path": str(path),
            "branch": branch,
            "repository": top,
            "base_commit": base,
            "workdir": str(where),
            "state": "active",
            "head_commit": None,
        }

    async def discard(self, record: WorktreeRecord) -> None:
        """Undo :meth:`make` for a node that was not created after all (never raises)."""
        await _undo_add(record["repository"], Path(record["path"]), record["branch"])

    def inherit(self, row: NodeRow, source: NodeRow, requested: bool | str | None) -> None:
        """Make a fork of ``source`` ask for a worktree of its own if ``source`` works in one
        (and the fork's create did not say otherwise): branched from ``source``'s branch tip."""
        tree = active_worktree(source)
        if tree is None or requested is False:
            return
        row["extra"]["worktree"] = True if requested is None else requested
        row["extra"]["worktree_from"] = tree["branch"]

    def check_usable(self, row: NodeRow) -> None:
        """``409 worktree_removed`` if the node's worktree was removed: it runs no more."""
        tree = to_worktree(row)
        if tree is not None and tree.state != "active":
            raise ApiError(
                409,
                "worktree_removed",
                f"node {row['node_id']!r} worked in a worktree that was {tree.state} (branch "
                f"{tree.branch}): it runs no more, rather than in the user's checkout; fork it "
                "to go on",
            )

    async def close(self, node_id: str) -> api.Node:
        """Remove the node's worktree, keeping its branch; ``409 worktree_dirty`` if it has
        uncommitted changes (nothing is touched then)."""
        return await self._remove(node_id, keep=True)

    async def abandon(self, node_id: str) -> api.Node:
        """Remove the node's worktree and delete its branch, discarding every change."""
        return await self._remove(node_id, keep=False)

    async def _remove(self, node_id: str, *, keep: bool) -> api.Node:
        engine = self._engine
        # Under the node's lock: a message cannot start a run in the worktree meanwhile.
        async with engine.locked(node_id):
            row = await engine.row(node_id)
            tree = active_worktree(row)
            if tree is None:
                old = to_worktree(row)
                what = f"no worktree (it was {old.state})" if old else "no worktree"
                raise ApiError(404, "no_worktree", f"node {node_id!r} has {what}")
            if row["status"] == "running":
                raise ApiError(
                    409,
                    "node_running",
                    f"node {node_id!r} is running in its worktree: interrupt it or wait",
                )
            if keep and not _is_dir(tree["repository"]):
                raise ApiError(
                    409,
                    "git_failed",
                    f"the repository {tree['repository']} is gone: nothing can be kept; "
                    "abandon the worktree instead",
                )
            await engine.features.get(jobs.Jobs).release(node_id)  # they run in the worktree: first
            try:
                if keep:
                    await _check_clean(tree)
                head = await _head(tree)
                await _remove(tree, force=not keep)
            except GitError as exc:
                if keep:  # changed since the check (a file written meanwhile ...)
                    raise ApiError(409, "worktree_dirty", str(exc)) from None
                raise ApiError(409, "git_failed", str(exc)) from None
            # Recorded before the branch goes: the worktree is gone whatever follows.
            tree = {**tree, "state": "closed" if keep else "abandoned", "head_commit": head}
            await engine.store.update_node(
                node_id, extra={**(row["extra"] or {}), "worktree": tree}
            )
            if not keep and _is_dir(tree["repository"]):
                try:
                    await _delete_branch(tree)
                except GitError as exc:
                    raise ApiError(
                        409,
                        "git_failed",
                        f"the worktree was removed, but its branch was not deleted: {exc}",
                    ) from None
        return await engine.node(node_id)


async def _has_branch(top: str, branch: str) -> bool:
    try:
        await git("show-ref", "--verify", "--quiet", f"refs/heads/{branch}", cwd=top)
    except GitError:
        return False
    return True


async def _check_clean(tree: WorktreeRecord) -> None:
    if not _exists(tree):
        return  # deleted by hand: nothing uncommitted is left to lose
    status = await git("status", "--porcelain", "--untracked-files=all", cwd=tree["path"])
    changes = status.splitlines()
    if changes:
        raise ApiError(
            409,
            "worktree_dirty",
            f"the worktree at {tree['path']} has {len(changes)} uncommitted change(s): commit "
            "them on its branch, or abandon the worktree to discard them",
            changes[:_SHOWN_CHANGES],
        )


async def _head(tree: WorktreeRecord) -> str | None:
    """The commit the worktree has checked out (its branch's tip), if it can be found."""
    here = _exists(tree)
    ref = "HEAD" if here else tree["branch"]  # deleted by hand: the branch still says
    try:
        found = await git(
            "rev-parse",
            "--verify",
            "--quiet",
            f"{ref}^{{commit}}",
            cwd=tree["path"] if here else tree["repository"],
        )
    except GitError:
        return None
    return found.strip()


async def _delete_branch(tree: WorktreeRecord) -> None:
    # Gone already (deleted by hand) is as good as deleted.
    if await _has_branch(tree["repository"], tree["branch"]):
        await git("branch", "-D", tree["branch"], cwd=tree["repository"])


async def _undo_add(top: str, path: Path, branch: str) -> None:
    """Remove what a ``git worktree add`` made, as far as it got; failures are logged."""
    try:
        if _is_dir(path):
            await git("worktree", "remove", "--force", str(path), cwd=top)
    except GitError as exc:
        log.warning("could not remove the unfinished worktree %s: %s", path, exc)
        await asyncio.to_thread(shutil.rmtree, path, True)
    for args in (("worktree", "prune"), ("branch", "-D", branch)):
        if args[0] == "branch" and not await _has_branch(top, branch):
            continue
        try:
            await git(*args, cwd=top)
        except GitError as exc:
            log.warning("could not clean up after a failed worktree add: %s", exc)


async def _remove(tree: WorktreeRecord, *, force: bool) -> None:
    if not _is_dir(tree["repository"]):
        # The repository itself is gone: there is no git to ask, only a directory left.
        if force:
            await asyncio.to_thread(shutil.rmtree, tree["path"], True)
            return
        raise GitError(f"the repository {tree['repository']} is gone: abandon the worktree")
    if _exists(tree):
        force_flags = ["--force"] if force else []
        await git("worktree", "remove", *force_flags, tree["path"], cwd=tree["repository"])
    else:
        # Deleted by hand: git still lists it until pruned.
        await git("worktree", "prune", cwd=tree["repository"])


def _exists(tree: WorktreeRecord) -> bool:
    return _is_dir(tree["path"])


def _is_dir(path: str | Path) -> bool:
    # A stat, not worth a thread: it answers from the cache the git commands just warmed.
    return Path(path).is_dir()
