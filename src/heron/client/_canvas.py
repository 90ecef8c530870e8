"""``client.canvas``: the graph of the daemon's nodes as a person's UI shows it."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from .. import api
from ._flow import Flow
from ._options import RequestOptions
from ._resource import M, Resource, check_id, endpoint

if TYPE_CHECKING:
    from ._drivers import Driver

__all__ = ["Canvas", "CanvasHistory", "Dashboard"]

RECENT_FAILURES = 10
"""How many recent failures :meth:`Canvas.dashboard` lists by default."""


class Dashboard(BaseModel):
    """``client.canvas.dashboard()``: the daemon at a glance, composed from
    ``GET /v1/nodes`` and ``GET /v1/status``."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    counts: dict[str, int]
    """Nodes per status (every status, zeros included)."""
    total: int
    """Every node."""
    running: list[api.Node]
    """The nodes running now, oldest first."""
    recent_failures: list[api.Node]
    """The nodes that failed, most recently settled first."""
    status: api.SystemStatus
    """The daemon's own status (version, uptime, listeners, event streams)."""


STATUSES: tuple[str, ...] = (
    "running",
    "dormant",
    "interrupted",
    "completed",
    "failed",
    "cancelled",
)
"""Every node status, in the order a dashboard shows them."""


def _ids(node_ids: Sequence[str] | None) -> builtins.list[str] | None:
    if node_ids is None:
        return None
    if isinstance(node_ids, str):
        raise TypeError("node_ids is a list of node ids, not one string")
    return [check_id(n) for n in node_ids]


def _limit(value: int, top: int = api.MAX_HISTORY_LIMIT, name: str = "limit") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
        raise ValueError(f"{name} must be a whole number from 1 to {top}, got {value!r}")
    return value


def _body(**fields: Any) -> dict[str, Any]:
    """A request body without the fields left out (``None``)."""
    return {k: v for k, v in fields.items() if v is not None}


class CanvasHistory(Resource[M]):
    """``client.canvas.history``: search, grep, read and count every node's transcript."""

    @endpoint
    def search(
        self,
        query: str,
        *,
        node_ids: Sequence[str] | None = None,
        profile: str | None = None,
        limit: int = 20,
        options: RequestOptions | None = None,
    ) -> Flow[api.HistorySearchResult]:
        """``POST /v1/canvas/history/search``: messages holding the query's words, ranked
        (more words, rarer words and the whole phrase rank higher).

        Example::

            for hit in client.canvas.history.search("migration plan").hits:
                print(hit.node_id, hit.index, hit.snippet)
        """
        body = _body(query=query, node_ids=_ids(node_ids), profile=profile, limit=_limit(limit))
        path = "/v1/canvas/history/search"
        return self._call("POST", path, api.HistorySearchResult, body=body, options=options)

    @endpoint
    def grep(
        self,
        pattern: str,
        *,
        node_ids: Sequence[str] | None = None,
        profile: str | None = None,
        ignore_case: bool = False,
        context: int = 0,
        limit: int = 100,
        options: RequestOptions | None = None,
    ) -> Flow[api.HistoryGrepResult]:
        """``POST /v1/canvas/history/grep``: transcript lines matching a regular
        expression, with ``context`` lines around each; an invalid pattern raises
        ``UnprocessableEntityError`` (``invalid_pattern``), a runaway one stops at the
        daemon's time limit (``timed_out``)."""
        body = _body(
            pattern=pattern,
            node_ids=_ids(node_ids),
            profile=profile,
            ignore_case=ignore_case,
            context=context,
            limit=_limit(limit),
        )
        path = "/v1/canvas/history/grep"
        return self._call("POST", path, api.HistoryGrepResult, body=body, options=options)

    @endpoint
    def read(
        self,
        node_id: str,
        *,
        offset: int = 0,
        limit: int = 100,
        options: RequestOptions | None = None,
    ) -> Flow[api.HistoryPage]:
        """``GET /v1/canvas/history/read``: a page of the node's transcript; follow
        ``next_offset`` until it is ``None``."""
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValueError(f"offset must be a whole number from 0, got {offset!r}")
        query = {"node_id": check_id(node_id), "offset": offset, "limit": _limit(limit)}
        path = "/v1/canvas/history/read"
        return self._call("GET", path, api.HistoryPage, query=query, options=options)

    @endpoint
    def stats(
        self,
        *,
        node_ids: Sequence[str] | None = None,
        profile: str | None = None,
        since: datetime | None = None,
        options: RequestOptions | None = None,
    ) -> Flow[api.HistoryStats]:
        """``POST /v1/canvas/history/stats``: messages by role, tool calls by tool, turns
        and tokens of the nodes chosen (``profile``: only its nodes; ``since``: only
        those active since then)."""
        if since is not None and since.tzinfo is None:
            raise ValueError("since must be an aware datetime (give it a timezone)")
        body = _body(
            node_ids=_ids(node_ids),
            profile=profile,
            since=since.isoformat() if since is not None else None,
        )
        path = "/v1/canvas/history/stats"
        return self._call("POST", path, api.HistoryStats, body=body, options=options)


class Canvas(Resource[M]):
    """``client.canvas``: what needs a person, the whole graph at once, the live roster,
    pruning settled nodes, and (``client.canvas.history``) every transcript."""

    history: CanvasHistory[M]
    """Search, grep, read and count the nodes' transcripts."""

    def __init__(self, driver: Driver[M]) -> None:
        super().__init__(driver)
        self.history = CanvasHistory(driver)

    @endpoint
    def attention(
        self,
        *,
        node_ids: Sequence[str] | None = None,
        profile: str | None = None,
        options: RequestOptions | None = None,
    ) -> Flow[builtins.list[api.AttentionItem]]:
        """``GET /v1/canvas/attention``: what needs a person, most urgent first
        (``asking``, ``interrupted``, ``failed``, ``deadline_exceeded``, ``waiting``).

        Example::

            for item in client.canvas.attention():
                print(item.reason, item.node_id, item.summary)
        """
        query = {"node_id": _ids(node_ids), "profile": profile}
        result = builtins.list[api.AttentionItem]
        return self._call("GET", "/v1/canvas/attention", result, query=query, options=options)

    @endpoint
    def attention_counts(
        self,
        *,
        node_ids: Sequence[str] | None = None,
        profile: str | None = None,
        options: RequestOptions | None = None,
    ) -> Flow[api.AttentionCounts]:
        """``POST /v1/canvas/attention-counts``: attention items per reason and per node."""
        body = _body(node_ids=_ids(node_ids), profile=profile)
        path = "/v1/canvas/attention-counts"
        return self._call("POST", path, api.AttentionCounts, body=body, options=options)

    @endpoint
    def snapshot(self, *, options: RequestOptions | None = None) -> Flow[api.CanvasSnapshot]:
        """``GET /v1/canvas/snapshot``: every card, edge, count and attention item, with
        each node's event high-water mark: stream a node's events after its mark and
        nothing is missed."""
        return self._call("GET", "/v1/canvas/snapshot", api.CanvasSnapshot, options=options)

    @endpoint
    def roster(
        self, *, options: RequestOptions | None = None
    ) -> Flow[builtins.list[api.RosterEntry]]:
        """``GET /v1/canvas/roster``: the live nodes and what each is doing now."""
        result = builtins.list[api.RosterEntry]
        return self._call("GET", "/v1/canvas/roster", result, options=options)

    @endpoint
    def prune(
        self,
        *,
        older_than: str | None = None,
        statuses: Sequence[api.SettledStatus] | None = None,
        node_ids: Sequence[str] | None = None,
        dry_run: bool = False,
        options: RequestOptions | None = None,
    ) -> Flow[api.PruneResult]:
        """``POST /v1/canvas/prune``: delete settled nodes and everything of theirs.

        ``older_than`` (``7d``, ``12h``; default ``7d`` unless ``node_ids`` are named),
        ``statuses`` (settled ones), ``node_ids`` (resident roots go only when named
        here). Never a live node, one with a live descendant or a live parent; a node
        goes with its descendants. Try ``dry_run=True`` first.
        """
        body = _body(
            older_than=older_than,
            statuses=list(statuses) if statuses is not None else None,
            node_ids=_ids(node_ids),
            dry_run=dry_run,
        )
        return self._call("POST", "/v1/canvas/prune", api.PruneResult, body=body, options=options)

    @endpoint
    def dashboard(
        self, *, recent_failures: int = RECENT_FAILURES, options: RequestOptions | None = None
    ) -> Flow[Dashboard]:
        """``GET /v1/nodes``, then ``GET /v1/status``: counts by status, the running
        nodes, the most recent failures and the daemon's status, in one value.

        Example::

            board = client.canvas.dashboard()
            print(board.counts["running"], "running;", len(board.recent_failures), "failed")
        """
        _limit(recent_failures, 1000, "recent_failures")
        return self._dashboard(recent_failures, options)

    def _dashboard(self, recent: int, options: RequestOptions | None) -> Flow[Dashboard]:
        listed: builtins.list[api.Node] = yield from self._call(
            "GET", "/v1/nodes", builtins.list[api.Node], options=options
        )
        status: api.SystemStatus = yield from self._call(
            "GET", "/v1/status", api.SystemStatus, options=options
        )
        counts = dict.fromkeys(STATUSES, 0)
        for node in listed:
            counts[node.status] = counts.get(node.status, 0) + 1
        failed = [n for n in listed if n.status == "failed"]
        failed.sort(key=lambda n: n.settled_at or n.updated_at, reverse=True)
        return Dashboard(
            counts=counts,
            total=len(listed),
            running=[n for n in listed if n.status == "running"],
            recent_failures=failed[:recent],
            status=status,
        )
