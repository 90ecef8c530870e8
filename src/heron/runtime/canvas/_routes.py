"""Canvas routes: ``/v1/canvas/…`` (attention, snapshot, roster, prune, history)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from fastapi import Body, FastAPI, Query

from ... import api
from ..server import MAX_INTEGER, errors

if TYPE_CHECKING:
    from ._service import Canvas

__all__ = ["add_canvas_routes"]

NodeIdsQuery = Annotated[
    list[str] | None,
    Query(
        alias="node_id",
        max_length=1000,
        description="Only these nodes (repeat the parameter for several).",
        # Documented, but checked by the canvas: a bad id answers 400 invalid_node_id.
        json_schema_extra={"items": {"type": "string", "pattern": api.ID_PATTERN}},
    ),
]
"""Repeated ``node_id`` query parameters."""

ProfileQuery = Annotated[
    str | None, Query(pattern=api.ID_PATTERN, description="Only this profile (its name).")
]
"""A ``profile`` query parameter."""

BODY = errors(400, 413, 415, 422)
"""A canvas route taking a JSON body."""


def add_canvas_routes(app: FastAPI, canvas: Canvas) -> None:
    """Serve ``/v1/canvas/…`` over ``canvas``."""

    @app.get("/v1/canvas/attention", tags=["canvas"], responses=errors(400, 422))
    async def attention(
        node_ids: NodeIdsQuery = None, profile: ProfileQuery = None
    ) -> list[api.AttentionItem]:
        """What needs a person, most urgent first: ``asking``, ``interrupted``, ``failed``,
        ``deadline_exceeded``, ``waiting`` (oldest first within a reason)."""
        return await canvas.attention(node_ids=node_ids, profile=profile)

    @app.post("/v1/canvas/attention-counts", tags=["canvas"], responses=BODY)
    async def attention_counts(
        body: Annotated[api.AttentionCountsRequest, Body()] = api.AttentionCountsRequest(),  # noqa: B008
    ) -> api.AttentionCounts:
        """How many attention items there are, per reason and per node."""
        return await canvas.counts(body)

    @app.get("/v1/canvas/snapshot", tags=["canvas"], responses=errors())
    async def snapshot() -> api.CanvasSnapshot:
        """One consistent read of the canvas: cards, edges, counts, attention, and each
        node's event high-water mark (follow its stream after it: nothing is missed)."""
        return await canvas.snapshot()

    @app.get("/v1/canvas/roster", tags=["canvas"], responses=errors())
    async def roster() -> list[api.RosterEntry]:
        """The live nodes (running, dormant, interrupted) and what each is doing now."""
        return await canvas.roster()

    @app.post("/v1/canvas/prune", tags=["canvas"], responses=BODY)
    async def prune(
        body: Annotated[api.PruneRequest, Body()] = api.PruneRequest(),  # noqa: B008
    ) -> api.PruneResult:
        """Delete settled nodes and everything of theirs (``dry_run`` first to see what);
        never a live node, one with a live descendant or parent; resident roots only
        when named."""
        return await canvas.prune(body)

    @app.post("/v1/canvas/history/search", tags=["canvas"], responses=BODY)
    async def history_search(body: api.HistorySearchRequest) -> api.HistorySearchResult:
        """Messages of the nodes' transcripts holding the query's words, ranked."""
        return await canvas.history.search(body)

    @app.post("/v1/canvas/history/grep", tags=["canvas"], responses=BODY)
    async def history_grep(body: api.HistoryGrepRequest) -> api.HistoryGrepResult:
        """Lines of the transcripts matching a regular expression (``422
        invalid_pattern`` for one that is not)."""
        return await canvas.history.grep(body)

    @app.get("/v1/canvas/history/read", tags=["canvas"], responses=errors(400, 404, 422))
    async def history_read(
        node_id: Annotated[
            str,
            Query(
                description="The node.",
                max_length=128,
                # Documented, but checked by the canvas: a bad id answers 400 invalid_node_id.
                json_schema_extra={"pattern": api.ID_PATTERN},
            ),
        ],
        offset: Annotated[
            int, Query(ge=0, le=MAX_INTEGER, description="The first message (0-based).")
        ] = 0,
        limit: Annotated[
            int, Query(ge=1, le=api.MAX_HISTORY_LIMIT, description="At most this many.")
        ] = 100,
    ) -> api.HistoryPage:
        """A page of one node's transcript, with the offset of the next page."""
        return await canvas.history.read(node_id, offset, limit)

    @app.post("/v1/canvas/history/stats", tags=["canvas"], responses=BODY)
    async def history_stats(
        body: Annotated[api.HistoryStatsRequest, Body()] = api.HistoryStatsRequest(),  # noqa: B008
    ) -> api.HistoryStats:
        """Messages by role, tool calls by tool, turns and tokens of the transcripts."""
        return await canvas.history.stats(body)
