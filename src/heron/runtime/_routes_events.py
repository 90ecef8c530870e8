"""``GET /v1/nodes/{id}/events``: a node's events as server-sent events.

Opening a stream attaches a subscriber to the node's hub *first*, then works out
what to replay (ring, durable log, or a mid-run seed) from a snapshot taken in
the same instant, so nothing published in between is lost or sent twice: live
records numbered at or below what was already written are skipped.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import FastAPI, Header, Query
from fastapi.responses import StreamingResponse

from .. import api
from ._engine import Engine
from ._errors import ApiError
from ._routing import NodeIdPath, errors
from ._rows import when
from ._runs import SETTLED
from ._stream import Hub, Record, Subscription, encode, error_record, keepalive_record, merge

__all__ = ["add_event_routes"]

log = logging.getLogger("heron.runtime")

SETTLE_GRACE = 5.0
"""Seconds a stream of a node already settled waits for its ``node.settled`` event to be
published (its run is just ending) before writing one from the outcome row."""

_STREAM_DOC: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "Server-sent events: `id: <sequence_number>`, `event: <type>`, "
        "`data: <JSON>` (typed by `heron.api.NodeEvent`), and `: keepalive` comments.",
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
    }
}


@dataclass(kw_only=True, slots=True)
class _Opened:
    """A stream ready to write: what to replay first, then the live subscription."""

    hub: Hub
    """The node's hub."""
    sub: Subscription
    """The live subscription (attached before anything was read)."""
    first: list[bytes] = field(default_factory=list)
    """Records (and maybe a ``stream_gap``) to write before going live."""
    written: int = 0
    """The highest number in :attr:`first`: live records up to it are skipped."""
    ended: bool = False
    """:attr:`first` ends with the node's terminal ``node.settled``."""
    await_settled: bool = False
    """The node has settled but its ``node.settled`` was not seen yet."""


def cursor_of(after: int | None, last_event_id: str | None) -> int | None:
    """The resume cursor: ``?after=`` wins over ``Last-Event-ID``; ``None`` for neither."""
    if after is not None:
        return after
    if last_event_id is None or not last_event_id.strip():
        return None
    text = last_event_id.strip()
    if not text.isdigit():
        raise ApiError(
            422,
            "invalid_request",
            f"Last-Event-ID must be an event's sequence_number (a whole number), got {text!r}",
        )
    return int(text)


class EventStreams:
    """Opens and writes node event streams over one engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def open(self, node_id: str, after: int | None, last_event_id: str | None) -> _Opened:
        """Validate the node and cursor, subscribe, and plan the replay (errors are raised
        before anything streams, so they are answered as JSON)."""
        engine = self.engine
        await engine.row(node_id)
        cursor = cursor_of(after, last_event_id)
        await engine.events.prime(node_id)
        hub = engine.events.hub(node_id)
        # Subscribe and snapshot in one go (no await in between): the snapshot plus the
        # subscriber's buffer are exactly everything, with no gap and no overlap.
        sub = hub.subscribe(engine.config.sse_buffer)
        ring, floor, last = list(hub.ring), hub.floor, hub.last
        run = (hub.run_known, list(hub.done), hub.partial, hub.partial_seq)
        try:
            row = await engine.row(node_id)
            settled = row["settled_at"] is not None or row["status"] in SETTLED
            opened = _Opened(hub=hub, sub=sub, written=last)
            if cursor is None and not settled and row["status"] == "running":
                opened.first = await self._seed(node_id, ring, floor, last, run)
            elif cursor is None and not settled:
                opened.first = [await self._status_now(node_id, row["status"], ring, floor, last)]
            else:
                # Without a cursor a settled node replays what is retained: no gap to report.
                gaps = cursor is not None
                await self._replay(
                    opened, node_id, cursor or 0, ring, floor, last, gaps=gaps, settled=settled
                )
            if settled and not opened.ended:
                opened.await_settled = True
        except BaseException:
            hub.unsubscribe(sub)
            raise
        return opened

    async def _history(
        self, node_id: str, after: int, ring: list[Record], floor: int
    ) -> tuple[list[Record], bool]:
        """Every retained record numbered above ``after``; and whether some numbers in
        between are missing (text deltas not logged, or numbers a restart skipped)."""
        older: list[Record] = []
        missing = False
        if after < floor:
            older = await self.engine.events.logged(node_id, after=after, upto=floor)
            missing = len(older) < floor - after
        return merge(older, [r for r in ring if r.sequence_number > after]), missing

    async def _replay(
        self,
        opened: _Opened,
        node_id: str,
        cursor: int,
        ring: list[Record],
        floor: int,
        last: int,
        *,
        gaps: bool,
        settled: bool,
    ) -> None:
        if cursor > last:
            # A future cursor (or one from before a restart that skipped numbers it
            # never used): say so, and start from the earliest event still known.
            records, _ = await self._history(node_id, 0, ring, floor)
            earliest = records[0].sequence_number if records else last + 1
            opened.first.append(_gap(cursor, earliest))
        else:
            records, missing = await self._history(node_id, cursor, ring, floor)
            if missing and gaps:
                earliest = records[0].sequence_number if records else last + 1
                opened.first.append(_gap(cursor, earliest))
        opened.first += [r.wire for r in records]
        # A node.settled ends the stream only as the last event of a node settled now (a
        # revived node went on after it).
        opened.ended = settled and bool(records) and records[-1].type == "node.settled"
        if settled and cursor >= last and not records:
            # The cursor is on (or past) the end: the terminal event again, then the end.
            terminal = await self._last_settled(node_id, ring, floor)
            if terminal is not None:
                opened.first.append(terminal.wire)
                opened.ended = True

    async def _last_settled(self, node_id: str, ring: list[Record], floor: int) -> Record | None:
        """The node's latest ``node.settled`` (for a cursor already past it)."""
        records, _ = await self._history(node_id, 0, ring, floor)
        for record in reversed(records):
            if record.type == "node.settled":
                return record
        return None

    async def _seed(
        self,
        node_id: str,
        ring: list[Record],
        floor: int,
        last: int,
        run: tuple[bool, list[Record], str, int],
    ) -> list[bytes]:
        """A mid-run joiner's start: reports oldest first, the run's completed
        messages, then its partial text as one delta."""
        known, done, partial, partial_seq = run
        reports = await self.engine.store.reports(node_id, newest_first=False)
        history: list[Record] = []
        if reports or not known:
            history, _ = await self._history(node_id, 0, ring, floor)
        pushed = {
            r.data["report"].get("report_id"): r
            for r in history
            if r.type == "node.report.pushed" and isinstance(r.data.get("report"), dict)
        }
        first: list[bytes] = []
        for report in reports:
            record = pushed.get(report["report_id"])
            if record is None:  # pushed without an event (never the case for push-report)
                record = encode(node_id, last, "node.report.pushed", {"report": _report(report)})
            first.append(record.wire)
        if not known:
            # This process did not see the run start (a restart): its completed
            # messages are in the log; the partial text went with the old process.
            done = []
            for record in history:
                if record.type == "node.status.changed" and record.data.get("status") == "running":
                    done = []
                elif record.type == "node.output_text.done":
                    done.append(record)
        first += [r.wire for r in done]
        if partial:
            first.append(
                encode(node_id, partial_seq, "node.output_text.delta", {"delta": partial}).wire
            )
        return first

    async def _status_now(
        self, node_id: str, status: str, ring: list[Record], floor: int, last: int
    ) -> bytes:
        """The node's latest ``node.status.changed`` (made from its row if none matches)."""
        history, _ = await self._history(node_id, 0, ring, floor)
        for record in reversed(history):
            if record.type == "node.status.changed":
                if record.data.get("status") == status:
                    return record.wire
                break
        return encode(node_id, max(last, 1), "node.status.changed", {"status": status}).wire

    async def write(self, opened: _Opened, node_id: str) -> AsyncIterator[bytes]:
        """The response body: the replay, then live records, keepalives and the end."""
        engine, hub, sub = self.engine, opened.hub, opened.sub
        keepalive = engine.config.sse_keepalive
        written = opened.written
        loop = asyncio.get_running_loop()
        settle_by = loop.time() + SETTLE_GRACE if opened.await_settled else None
        try:
            if opened.first:
                yield b"".join(opened.first)
            if opened.ended:
                return
            while True:
                chunk: list[bytes] = []
                ended = False
                for record in sub.take():
                    if record.sequence_number <= written:
                        continue
                    written = record.sequence_number
                    chunk.append(record.wire)
                    if record.type == "node.settled":
                        ended = True
                        break
                if chunk:
                    yield b"".join(chunk)
                if ended:
                    return
                if sub.dropped:
                    yield error_record(
                        "stream_dropped",
                        "the reader fell too far behind; reconnect with the last sequence_number",
                    )
                    return
                timeout = keepalive
                if settle_by is not None:
                    timeout = min(timeout, max(settle_by - loop.time(), 0.0))
                try:
                    await asyncio.wait_for(sub.wake.wait(), timeout)
                except TimeoutError:
                    if settle_by is not None and loop.time() >= settle_by:
                        yield await self._settled_from_row(node_id, written)
                        return
                    yield keepalive_record()
        except Exception as exc:  # the daemon's own failure: tell the reader, then end
            log.exception("the event stream of node %s failed", node_id)
            yield error_record("stream_error", f"the event stream failed: {type(exc).__name__}")
        finally:
            hub.unsubscribe(sub)
            engine.events.released(node_id)

    async def _settled_from_row(self, node_id: str, written: int) -> bytes:
        """``node.settled`` from the outcome row, for a node whose settled event was lost."""
        outcome = await self.engine.store.outcome(node_id)
        return encode(node_id, max(written, 1), "node.settled", {"outcome": outcome}).wire


def _gap(cursor: int, earliest: int) -> bytes:
    return error_record(
        "stream_gap",
        f"events after {cursor} are not all retained; continuing from {earliest}",
        {"earliest_sequence": earliest},
    )


def _report(row: dict[str, Any]) -> dict[str, Any]:
    """A report row as ``api.Report`` JSON."""
    return api.Report.model_validate({**row, "created_at": when(row["created_at"])}).model_dump(
        mode="json"
    )


def add_event_routes(app: FastAPI, engine: Engine) -> None:
    """Serve ``GET /v1/nodes/{node_id}/events``."""
    streams = EventStreams(engine)

    @app.get(
        "/v1/nodes/{node_id}/events",
        tags=["nodes"],
        responses={**errors(400, 404, 422), **_STREAM_DOC},
        response_class=StreamingResponse,
    )
    async def node_events(
        node_id: NodeIdPath,
        after: Annotated[
            int | None,
            Query(ge=0, description="Resume after this sequence_number (wins over Last-Event-ID)."),
        ] = None,
        last_event_id: Annotated[
            str | None,
            Header(alias="Last-Event-ID", description="Resume after this sequence_number."),
        ] = None,
    ) -> StreamingResponse:
        """Watch the node: its events as server-sent events, replayed from a cursor."""
        opened = await streams.open(node_id, after, last_event_id)
        return StreamingResponse(
            streams.write(opened, node_id),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
