"""The nested resources of ``client.nodes``: reports, jobs, worktree and result."""

from __future__ import annotations

import builtins
from typing import Any

from .. import api
from ._flow import Flow
from ._options import RequestOptions
from ._resource import M, Resource, check_id, endpoint

__all__ = ["MAX_REPORTS", "Jobs", "Reports", "Result", "Worktree"]

MAX_REPORTS = 1000
"""The most reports one ``nodes.reports.list`` returns."""


def _path(node_id: object, suffix: str) -> str:
    return f"/v1/nodes/{check_id(node_id)}{suffix}"


class Reports(Resource[M]):
    """``client.nodes.reports``: the progress reports a node pushed."""

    @endpoint
    def list(
        self,
        node_id: str,
        *,
        limit: int | None = None,
        tier: api.ReportTier | None = None,
        options: RequestOptions | None = None,
    ) -> Flow[builtins.list[api.Report]]:
        """``GET /v1/nodes/{id}/reports``: the node's reports, newest first (a plain list).

        ``limit`` (1-1000, default 50 by the daemon) caps how many; ``tier`` keeps
        one tier (``progress``, ``milestone``, ``final``). ``ValueError`` (nothing
        sent) for a ``limit`` out of range.

        Example::

            for report in client.nodes.reports.list(node_id, limit=10):
                print(report.tier, report.body)
        """
        path = _path(node_id, "/reports")
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_REPORTS
        ):
            raise ValueError(f"limit must be a whole number from 1 to {MAX_REPORTS}, got {limit!r}")
        query = {"limit": limit, "tier": tier}
        result = builtins.list[api.Report]
        return self._call("GET", path, result, query=query, options=options)


class Jobs(Resource[M]):
    """``client.nodes.jobs``: the background commands a node started (``bash-start``)."""

    @endpoint
    def list(
        self, node_id: str, *, options: RequestOptions | None = None
    ) -> Flow[builtins.list[api.Job]]:
        """``GET /v1/nodes/{id}/jobs``: the node's jobs, oldest first (never their output;
        known to this daemon process only)."""
        path = _path(node_id, "/jobs")
        return self._call("GET", path, builtins.list[api.Job], options=options)

    @endpoint
    def cancel(
        self, node_id: str, job_id: str, *, options: RequestOptions | None = None
    ) -> Flow[api.Job]:
        """``POST /v1/nodes/{id}/jobs/{job_id}/cancel``: kill the job and everything it
        started; ``ConflictError`` once it has ended."""
        path = _path(node_id, f"/jobs/{check_id(job_id, 'job id')}/cancel")
        return self._call("POST", path, api.Job, options=options)


class Worktree(Resource[M]):
    """``client.nodes.worktree``: remove the managed git worktree a node works in."""

    @endpoint
    def close(self, node_id: str, *, options: RequestOptions | None = None) -> Flow[api.Node]:
        """``POST /v1/nodes/{id}/worktree/close``: remove the worktree, keep its branch
        (``ConflictError`` ``worktree_dirty`` with uncommitted changes)."""
        return self._call("POST", _path(node_id, "/worktree/close"), api.Node, options=options)

    @endpoint
    def abandon(self, node_id: str, *, options: RequestOptions | None = None) -> Flow[api.Node]:
        """``POST /v1/nodes/{id}/worktree/abandon``: remove the worktree, discarding its
        changes, and delete its branch."""
        return self._call("POST", _path(node_id, "/worktree/abandon"), api.Node, options=options)


class Result(Resource[M]):
    """``client.nodes.result``: what a node's ``submit-result`` tool sends (an agent
    inside a run calls this, rarely an application)."""

    @endpoint
    def submit(
        self, node_id: str, result: Any, *, options: RequestOptions | None = None
    ) -> Flow[api.ResultAccepted]:
        """``POST /v1/nodes/{id}/result``: the node's structured result; it must satisfy
        the node's ``output_schema`` (``UnprocessableEntityError`` otherwise)."""
        path = _path(node_id, "/result")
        body = {"result": result}
        return self._call("POST", path, api.ResultAccepted, body=body, options=options)
