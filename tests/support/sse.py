"""A small server-sent-events reader over httpx, for the event-stream tests."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx


@dataclass(frozen=True, slots=True)
class Sse:
    """One SSE record (or a ``: comment`` line, with ``event == ":"``)."""

    id: int | None
    """The ``id:`` field."""
    event: str
    """The ``event:`` field (``:`` for a comment)."""
    data: dict[str, Any]
    """The parsed ``data:`` JSON (``{"comment": text}`` for a comment)."""

    @property
    def seq(self) -> int:
        """The event's sequence number (from its data)."""
        return int(self.data["sequence_number"])


def records(response: httpx.Response) -> Iterator[Sse]:
    """Every record and comment of an open event-stream response, as they arrive."""
    # Split the bytes ourselves: httpx's line decoder is slow on long lines.
    pending = b""
    for chunk in response.iter_bytes():
        pending += chunk
        *blocks, pending = pending.split(b"\n\n")
        for block in blocks:
            yield _parse(block.decode())


def _parse(block: str) -> Sse:
    if block.startswith(":"):
        return Sse(None, ":", {"comment": block[1:].strip()})
    fields: dict[str, str] = {}
    for line in block.split("\n"):
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        fields[name] = f"{fields[name]}\n{value}" if name in fields else value
    ident = fields.get("id")
    data = json.loads(fields.get("data", "null"))
    return Sse(int(ident) if ident else None, fields.get("event", "message"), data)


def events(response: httpx.Response, until: Callable[[Sse], bool] | None = None) -> list[Sse]:
    """The events (no comments) until the stream ends or ``until`` holds for one."""
    got: list[Sse] = []
    for record in records(response):
        if record.event == ":":
            continue
        got.append(record)
        if until is not None and until(record):
            break
    return got


def stream(client: httpx.Client, node_id: str, *, after: int | None = None, **headers: str) -> Any:
    """``client.stream`` on the node's events route (a context manager)."""
    params = {"after": after} if after is not None else {}
    return client.stream(
        "GET",
        f"/v1/nodes/{node_id}/events",
        params=params,
        headers={k.replace("_", "-"): v for k, v in headers.items()},
    )


def collect(client: httpx.Client, node_id: str, *, after: int | None = None) -> list[Sse]:
    """Every event of a stream that ends by itself (a settled node's)."""
    with stream(client, node_id, after=after) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        return events(response)


def kinds(got: list[Sse]) -> list[str]:
    """The event types, in order."""
    return [e.event for e in got]
