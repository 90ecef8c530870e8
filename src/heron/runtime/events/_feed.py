"""The daemon-wide feed: every node's events, live, on one stream (``GET /v1/events``).

A page showing many nodes cannot open a stream per node (a browser keeps at most six
HTTP/1.1 connections to one origin), so the feed carries every node's events in the
order they become durable, but the text deltas (a node's own stream has those). It has
no replay and no ``id:`` lines: numbers are per node, so no one cursor resumes it. A
reader takes ``GET /v1/canvas/snapshot`` (each node's event high-water mark) *after*
opening the feed and skips what the snapshot already covers; on reconnect it does so
again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator

from ..nodes import Engine
from ._stream import Record, Subscription, Writers, error_record, keepalive_record

__all__ = ["FEED_BUFFER_FACTOR", "Feed", "unnumbered"]

log = logging.getLogger("heron.runtime")

FEED_BUFFER_FACTOR = 8
"""A feed reader may fall this many times further behind than one node's reader
(``HERON_SSE_BUFFER`` records and ``HERON_SSE_BUFFER_BYTES`` bytes) before it is dropped."""

RETRY_MS = 2000
"""The ``retry:`` the feed asks of an ``EventSource`` that loses it."""


def unnumbered(record: Record) -> bytes:
    """The record as the feed writes it: without its ``id:`` line."""
    wire = record.wire
    if wire.startswith(b"id: "):
        return wire[wire.index(b"\n") + 1 :]
    return wire


class Feed(Writers):
    """Opens and writes readers of the daemon-wide feed over one engine."""

    def __init__(self, engine: Engine) -> None:
        super().__init__()
        self.engine = engine

    def open(self) -> Subscription:
        """Attach a reader: from now on every streamed event is buffered for it."""
        config = self.engine.config
        return self.engine.events.watch(
            config.sse_buffer * FEED_BUFFER_FACTOR, config.sse_buffer_bytes * FEED_BUFFER_FACTOR
        )

    async def write(self, sub: Subscription) -> AsyncGenerator[bytes, None]:
        """The response body: a ``retry:`` line, then the events as they come, keepalives,
        and ``stream_dropped`` if the reader fell too far behind."""
        events = self.engine.events
        keepalive = self.engine.config.sse_keepalive
        events.readers += 1
        self._writing.add(sub)
        try:
            yield f"retry: {RETRY_MS}\n\n".encode()
            while not self.closing:
                records = sub.take()
                if records:
                    yield b"".join(unnumbered(r) for r in records)
                if sub.dropped:
                    events.readers_dropped += 1
                    log.info("dropped a stalled reader of the daemon-wide feed")
                    yield error_record(
                        "stream_dropped",
                        "the reader fell too far behind; reconnect and read the snapshot again",
                    )
                    return
                try:
                    await asyncio.wait_for(sub.wake.wait(), keepalive)
                except TimeoutError:
                    yield keepalive_record()
        finally:
            self._writing.discard(sub)
            events.readers -= 1
            events.unwatch(sub)

    def stalled(self) -> None:
        """A write to a reader timed out: its connection is being closed."""
        self.engine.events.readers_dropped += 1
        log.info("closed the connection of a stalled reader of the daemon-wide feed")
