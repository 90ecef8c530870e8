"""An incremental server-sent-events parser: bytes in, records out, no I/O.

Follows the WHATWG event-stream rules that matter to a client: lines end with
``\\n``, ``\\r\\n`` or ``\\r`` (a ``\\r`` at the end of one chunk may pair with a
``\\n`` at the start of the next); a blank line ends a record; ``:`` lines are
comments; several ``data:`` lines join with ``\\n``; one space after the colon is
dropped; a record with no ``data:`` line is no event. Unlike a browser's
``EventSource``, each record reports only the ``id:`` it carried itself, so a
record without one (the daemon's made-up status) is told apart from a numbered
event.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SSEDecoder", "ServerSentEvent"]


@dataclass(frozen=True, slots=True)
class ServerSentEvent:
    """One record of an event stream."""

    event: str
    """The ``event:`` field (``message`` when the record has none)."""
    data: str
    """The ``data:`` lines, joined with ``\\n``."""
    id: str | None
    """The ``id:`` field of this record, ``None`` when it carried none."""


class SSEDecoder:
    """Feed it the bytes of a response as they arrive; it returns complete records.

    Example::

        decoder = SSEDecoder()
        for chunk in response.iter_bytes():
            for record in decoder.feed(chunk):
                ...
    """

    def __init__(self) -> None:
        self._pending = b""
        self._after_cr = False  # the last chunk ended in "\r": a leading "\n" belongs to it
        self._event = ""
        self._data: list[str] = []
        self._id: str | None = None

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """The records completed by ``chunk`` (a partial line or record is kept)."""
        if self._after_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self._after_cr = chunk.endswith(b"\r")
        text = self._pending + chunk
        # Normalise line endings once; a "\r" at the very end is already a line end.
        text = text.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        *lines, self._pending = text.split(b"\n")
        out: list[ServerSentEvent] = []
        for line in lines:
            record = self._line(line.decode("utf-8", "replace"))
            if record is not None:
                out.append(record)
        return out

    @property
    def idle(self) -> bool:
        """No partial line or record is waiting (the stream ended on a record boundary)."""
        return not self._pending and not self._data and not self._event and self._id is None

    def _line(self, line: str) -> ServerSentEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id" and "\0" not in value:
            self._id = value
        # "retry" and unknown fields: nothing a client of the daemon needs.
        return None

    def _dispatch(self) -> ServerSentEvent | None:
        event, data, ident = self._event, self._data, self._id
        self._event, self._data, self._id = "", [], None
        if not data:
            return None
        return ServerSentEvent(event or "message", "\n".join(data), ident)
