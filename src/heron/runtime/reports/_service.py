"""Reports: the ``push-report`` tool every node gets, the report list, final reports on disk."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ... import api
from ..._core import ToolError
from ..._core.files import write_text_atomically
from ...tools import Tool, ToolContext
from ..nodes import NodeRow, call_key, when
from ._routes import add_report_routes
from ._store import ReportRow, ReportStore
from ._tables import REPORTS_SCHEMA

if TYPE_CHECKING:
    from fastapi import FastAPI
from ..nodes import Feature, Kernel, RunTools

__all__ = ["PUSH_REPORT", "PushReportTool", "Reports"]

PUSH_REPORT = "push-report"
"""The report tool's name."""

TIERS: tuple[api.ReportTier, ...] = ("progress", "milestone", "final")
"""Every report tier, least to most important."""

MAX_BODY = 256 * 1024
"""The longest report body accepted (characters)."""


class Reports(Feature):
    """Keeps, lists and writes out nodes' reports."""

    schema = REPORTS_SCHEMA

    def __init__(self, engine: Kernel) -> None:
        self.engine = engine
        self.store = ReportStore(engine.db)
        """The reports' rows."""
        # One writer per node at a time: final reports are numbered by counting.
        self._locks: dict[str, asyncio.Lock] = {}

    def routes(self, app: FastAPI) -> None:
        """Serve ``GET /v1/nodes/{id}/reports``."""
        add_report_routes(app, self)

    def tools(self, run: RunTools) -> Sequence[Tool]:
        """``push-report``, which every node gets."""
        return [self.tool(run.node_id, run.run)]

    def directory(self, node_id: str) -> Path:
        """Where the node's final reports are written."""
        return self.engine.config.home / "reports" / node_id

    async def push(
        self, node_id: str, tier: str, title: str | None, body: str, call_key: str | None = None
    ) -> api.Report:
        """Keep a report, write it out if ``final``, and publish ``node.report.pushed``.

        ``call_key`` names the pushing tool call: the report that call pushed already,
        if any, is returned as it is (a call run again after a crash).
        """
        known = next((t for t in TIERS if t == tier), None)
        if known is None:
            raise ValueError(f"unknown report tier {tier!r}: use one of {', '.join(TIERS)}")
        lock = self._locks.setdefault(node_id, asyncio.Lock())
        async with lock:
            if call_key is not None:
                done = await self.store.report_by_key(node_id, call_key)
                if done is not None:
                    return to_report(done)
            path = None
            if tier == "final":
                finals = await self.store.reports(node_id, tier="final")
                path = self.directory(node_id) / f"final-{len(finals) + 1}.md"
                await asyncio.to_thread(write_text_atomically, path, _markdown(title, body))
            row = await self.store.add_report(
                node_id,
                tier=known,
                title=title,
                body=body,
                path=str(path) if path else None,
                call_key=call_key,
            )
        report = to_report(row)
        await self.engine.events.prime(node_id)
        self.engine.events.publish(
            node_id, "node.report.pushed", {"report": report.model_dump(mode="json")}
        )
        return report

    async def list(self, node_id: str, *, limit: int, tier: str | None) -> list[api.Report]:
        """The node's reports, newest first (``404`` if there is no such node)."""
        await self.engine.row(node_id)
        rows = await self.store.reports(node_id, limit=limit, tier=tier)
        return [to_report(r) for r in rows]

    async def final_report(self, row: NodeRow) -> str | None:
        """The node's final report file (see :meth:`final_report_path`)."""
        return await self.final_report_path(row)

    async def final_report_path(self, row: NodeRow) -> str | None:
        """The file of the newest final report of the node's current settlement: pushed
        since it last settled (a revive's or relaunch's outcome before), was recycled or
        relaunched; ``None`` if it pushed none since."""
        extra = row["extra"] or {}
        marks = [extra.get("recycled_at"), extra.get("relaunched_at")]
        previous = extra.get("previous_outcomes") or []
        if previous:
            marks.append(previous[-1].get("settled_at"))
        after = max((m for m in marks if isinstance(m, int | float)), default=None)
        rows = await self.store.reports(row["node_id"], limit=1, tier="final", after=after)
        return rows[0]["path"] if rows else None

    def tool(self, node_id: str, run: int) -> PushReportTool:
        """The node's ``push-report`` tool for its run ``run``."""
        return PushReportTool(self, node_id, run)


def to_report(row: ReportRow) -> api.Report:
    """A row of ``heron_reports`` as the wire's :class:`heron.api.Report`."""
    return api.Report(
        report_id=row["report_id"],
        node_id=row["node_id"],
        tier=row["tier"],
        title=row["title"],
        body=row["body"],
        path=row["path"],
        created_at=when(row["created_at"]),
    )


def _markdown(title: str | None, body: str) -> str:
    text = body if body.endswith("\n") else body + "\n"
    return f"# {title}\n\n{text}" if title else text


_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "tier": {"type": "string", "enum": list(TIERS)},
        "title": {"type": "string", "maxLength": 512},
        "body": {"type": "string", "minLength": 1, "maxLength": MAX_BODY},
    },
    "required": ["tier", "body"],
    "additionalProperties": False,
}


class PushReportTool(Tool):
    """``push-report``: tell the people watching the node how the work goes."""

    name = PUSH_REPORT
    description = (
        "Report to the people watching this task. tier: `progress` (a step along the way), "
        "`milestone` (something significant reached) or `final` (your final report: the "
        "finished account of the work, also saved as a file). `body` is Markdown; `title` "
        "an optional one-line headline."
    )

    def __init__(self, reports: Reports, node_id: str, run: int) -> None:
        super().__init__(input_schema=_SCHEMA)
        self._reports = reports
        self._node_id = node_id
        self._run = run

    async def execute(self, arguments: dict[str, Any], context: ToolContext) -> str:
        body = arguments["body"]
        if not body.strip():
            raise ToolError("push-report needs a non-empty body")
        title = (arguments.get("title") or "").strip() or None
        if title is not None and any(c in title for c in "\r\n"):
            raise ToolError("a report title is one line: put the rest in the body")
        report = await self._reports.push(
            # Hashed: a model's call id may be long; the column holds 128 characters.
            self._node_id,
            arguments["tier"],
            title,
            body,
            _digest(call_key(self._run)),
        )
        where = f" (saved to {report.path})" if report.path else ""
        return f"Report {report.report_id} ({report.tier}) pushed{where}."


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()
