"""``GET /v1/nodes/{id}/events``: a node's events as server-sent events (the replay
and the live tail are :mod:`._replay`'s); ``GET /v1/events``: every node's, live
(:mod:`._feed`)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Callable
from typing import Annotated, Any

from fastapi import FastAPI, Header, Query
from fastapi.responses import StreamingResponse
from starlette.types import Message, Send

from ..nodes import Engine
from ..server import NodeIdPath, errors, stopping
from ._feed import Feed
from ._replay import EventStreams, cursor_of

__all__ = ["add_event_routes"]

_STREAM_DOC: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "Server-sent events: `id: <sequence_number>`, `event: <type>`, "
        "`data: <JSON>` (typed by `heron.api.NodeEvent`), and `: keepalive` comments.",
        # Each event (OpenAPI 3.2's itemSchema, which 3.1 tools read as an extension): its
        # fields as the stream writes them, the data a JSON object.
        "content": {
            "text/event-stream": {
                "itemSchema": {
                    "type": "object",
                    "required": ["data"],
                    "properties": {
                        "event": {"type": "string", "description": "The event's type."},
                        "id": {
                            "type": "string",
                            "pattern": "^[0-9]{1,18}$",
                            "description": "Its sequence_number (none on `error` events).",
                        },
                        "data": {
                            "type": "string",
                            "contentMediaType": "application/json",
                            "contentSchema": {"type": "object"},
                        },
                    },
                }
            }
        },
    }
}


class EventResponse(StreamingResponse):
    """A streaming response whose every write must finish within ``send_timeout``
    seconds; a reader that stops reading gets its connection closed."""

    def __init__(
        self,
        content: AsyncGenerator[bytes, None],
        *,
        send_timeout: float,
        on_stalled: Callable[[], None],
        headers: dict[str, str],
        on_end: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(content, media_type="text/event-stream", headers=headers)
        self._content = content
        self._send_timeout = send_timeout
        self._on_stalled = on_stalled
        self._on_end = on_end

    async def stream_response(self, send: Send) -> None:
        """Write the stream; on a stalled write return unfinished, which makes the
        server close the connection (and the body's ``finally`` detach the reader)."""

        async def timed(message: Message) -> None:
            await asyncio.wait_for(send(message), self._send_timeout)

        try:
            await timed(
                {
                    "type": "http.response.start",
                    "status": self.status_code,
                    "headers": self.raw_headers,
                }
            )
            async with contextlib.aclosing(self._content) as body:
                async for chunk in body:
                    await timed({"type": "http.response.body", "body": chunk, "more_body": True})
            await timed({"type": "http.response.body", "body": b"", "more_body": False})
        except TimeoutError:
            self._on_stalled()
        finally:
            # (also when the client left before the body began: its ``finally`` never ran)
            if self._on_end is not None:
                self._on_end()


_FEED_DOC: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "Server-sent events of every node: `event: <type>`, `data: <JSON>` "
        "(typed by `heron.api.NodeEvent`, each with its `node_id` and `sequence_number`), "
        "no `id:` lines and no `node.output_text.delta`; `: keepalive` comments.",
        "content": {"text/event-stream": _STREAM_DOC[200]["content"]["text/event-stream"]},
    }
}

_SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def add_event_routes(app: FastAPI, engine: Engine) -> None:
    """Serve ``GET /v1/nodes/{node_id}/events`` and ``GET /v1/events``."""
    streams = EventStreams(engine)
    stopping(app).on_set(streams.close)
    feed = Feed(engine)
    stopping(app).on_set(feed.close)

    @app.get(
        "/v1/events",
        tags=["nodes"],
        responses={**errors(), **_FEED_DOC},
        response_class=StreamingResponse,
    )
    async def all_events() -> StreamingResponse:
        """Watch every node: their events as they happen (no replay, no text deltas).
        Read ``GET /v1/canvas/snapshot`` after opening it to know where each node is."""
        sub = feed.open()
        return EventResponse(
            feed.write(sub),
            send_timeout=engine.config.sse_send_timeout,
            on_stalled=feed.stalled,
            headers=_SSE_HEADERS,
            on_end=lambda: engine.events.unwatch(sub),
        )

    @app.get(
        "/v1/nodes/{node_id}/events",
        tags=["nodes"],
        responses={**errors(400, 404, 422), **_STREAM_DOC},
        response_class=StreamingResponse,
    )
    async def node_events(
        node_id: NodeIdPath,
        after: Annotated[
            str | None,
            Query(
                pattern=r"^[0-9]{1,18}$",
                description="Resume after this sequence_number (wins over Last-Event-ID).",
            ),
        ] = None,
        last_event_id: Annotated[
            str | None,
            Header(
                alias="Last-Event-ID",
                description="Resume after this sequence_number.",
                json_schema_extra={"pattern": r"^\s*(?:[0-9]{1,18}\s*)?$"},
            ),
        ] = None,
    ) -> StreamingResponse:
        """Watch the node: its events as server-sent events, replayed from a cursor."""
        opened = await streams.open(node_id, cursor_of(after, last_event_id))
        return EventResponse(
            streams.write(opened, node_id),
            send_timeout=engine.config.sse_send_timeout,
            on_stalled=lambda: streams.stalled(node_id, opened),
            headers=_SSE_HEADERS,
        )
