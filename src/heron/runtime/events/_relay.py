"""Events of other daemons on one PostgreSQL database, streamed here.

Each batch of logged events notifies :data:`~._store.EVENTS_CHANNEL` in the transaction
that writes it, naming each node's first and last number and the writer (its
``origin``). A daemon listens on one connection (:class:`Listener`); for a node it
follows (one it has numbered here, or any while the daemon-wide feed has readers)
the :class:`Relay` reads the log after the last event its hub has and streams those rows
in number order, once each. It reads a node only while someone here wants it (a reader of its
stream or of the feed, an outcome poll); a node followed but not wanted falls behind,
and is read up to date before its next reader subscribes (``EventLog.prime``, then
:meth:`Relay.check`). The log is the content: a notification only says where to
look, so one lost to a dropped connection costs nothing but time (every followed node is
read again once the connection is back). Text deltas are never logged, so they never
cross daemons.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from ._store import EventStore

if TYPE_CHECKING:
    import psycopg

    from ._log import EventLog

__all__ = ["APPLICATION_NAME", "Listener", "Relay"]

log = logging.getLogger("heron.runtime")

RECONNECT_FIRST = 0.2
"""Seconds before the first attempt to listen again after the connection dropped."""

RECONNECT_MAX = 5.0
"""The longest wait between attempts (each failure doubles it)."""

PING = 10.0
"""Seconds without a notification after which the connection is checked (a dead one
would otherwise wait forever)."""

REMEMBERED = 4096
"""How many nodes nobody follows here have their latest notified number kept (for a
stream opened just as their events arrive)."""

APPLICATION_NAME = "heron-listen"
"""The listening connection's ``application_name`` (as ``pg_stat_activity`` shows it)."""

Handler = Callable[[str], None]
"""Called with a notification's payload, on the event loop; must not block."""


class Listener:
    """One connection ``LISTEN``-ing on the channels given to :meth:`on`; reconnects
    when it drops and calls the ``on_connect`` callbacks each time it is (back) up."""

    def __init__(self, engine: sa.Engine) -> None:
        self._engine = engine
        self._channels: dict[str, Handler] = {}
        self._on_connect: list[Callable[[], Awaitable[None]]] = []
        self._task: asyncio.Task[None] | None = None
        self.connections = 0
        """How many times the connection was made (more than one: it dropped)."""

    def on(
        self,
        channel: str,
        handler: Handler,
        on_connect: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """Deliver ``channel``'s payloads to ``handler``; ``on_connect`` runs after every
        (re)connection, once the channel is listened to (to catch up on what a dropped
        connection missed). Before :meth:`start`."""
        self._channels[channel] = handler
        if on_connect is not None:
            self._on_connect.append(on_connect)

    def start(self) -> None:
        """Start listening (inside the running loop)."""
        self._task = asyncio.create_task(self._listen_forever(), name="heron-listen")

    async def stop(self) -> None:
        """Stop listening and close the connection."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def _params(self) -> dict[str, Any]:
        args, kwargs = self._engine.dialect.create_connect_args(self._engine.url)
        params: dict[str, Any] = dict(kwargs)
        params.pop("context", None)  # the blocking dialect's adapters
        if args:
            params["conninfo"] = args[0]
        params.setdefault("connect_timeout", 10)
        params["application_name"] = APPLICATION_NAME
        return params

    async def _listen_forever(self) -> None:
        delay = RECONNECT_FIRST
        while True:
            try:
                await self._listen()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning(
                    "lost the database's notifications (%s); listening again in %.1f s",
                    type(exc).__name__,
                    delay,
                )
            await asyncio.sleep(delay)
            delay = min(delay * 2, RECONNECT_MAX)

    async def _listen(self) -> None:
        import psycopg  # (PostgreSQL only: a daemon on SQLite never loads it)
        from psycopg import sql

        conn = await psycopg.AsyncConnection.connect(**self._params(), autocommit=True)
        try:
            for channel in self._channels:
                await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
            self.connections += 1
            # (notifications arriving meanwhile are kept by psycopg for notifies())
            for catch_up in self._on_connect:
                await catch_up()
            while not conn.closed:
                async for note in conn.notifies(timeout=PING):
                    self._dispatch(note)
                await conn.execute("SELECT 1")  # quiet for a while: is it still there?
            raise ConnectionError("the listening connection was closed")
        finally:
            with contextlib.suppress(Exception):
                await conn.close()

    def _dispatch(self, note: psycopg.Notify) -> None:
        handler = self._channels.get(note.channel)
        if handler is None:
            return
        try:
            handler(note.payload)
        except Exception:  # one bad payload must not stop the others
            log.exception("could not handle a notification on %s", note.channel)


class Relay:
    """Streams into this daemon's hubs the events other daemons log; see the module
    docstring."""

    def __init__(self, events: EventLog, store: EventStore) -> None:
        self._events = events
        self._store = store
        self._dirty: dict[str, None] = {}
        self._tops: OrderedDict[str, int] = OrderedDict()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the reader (inside the running loop)."""
        self._task = asyncio.create_task(self._read_forever(), name="heron-relay")

    async def stop(self) -> None:
        """Stop the reader."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def notified(self, payload: str) -> None:
        """A batch was logged: mark the nodes wanted here whose hub is behind it."""
        note = json.loads(payload)
        if note.get("o") == self._events.origin:
            return  # this daemon's own batch: streamed as it was written
        events = self._events
        for node_id, first, last in note.get("n", ()):
            cursor = events.cursor(node_id)
            if cursor is None and events.watchers:
                cursor = int(first) - 1
                events.follow(node_id, cursor)  # for the daemon-wide feed
            if cursor is None or not (events.watchers or events.wanted(node_id)):
                self._remember(node_id, int(last))
                continue
            if last > cursor:
                self._dirty[node_id] = None
        if self._dirty:
            self._wake.set()

    def check(self, node_id: str) -> None:
        """The node is wanted from now on: read it if a notification came first."""
        top = self._tops.pop(node_id, None)
        cursor = self._events.cursor(node_id)
        if top is not None and cursor is not None and top > cursor:
            self._dirty[node_id] = None
            self._wake.set()

    def follow_all(self, node_ids: Iterable[str]) -> None:
        """Read each of ``node_ids`` again (the connection was down: what did it miss?)."""
        for node_id in node_ids:
            self._dirty[node_id] = None
        if self._dirty:
            self._wake.set()

    async def pull(self, node_id: str) -> None:
        """Stream the node's logged events after what its hub has, now."""
        cursor = self._events.cursor(node_id)
        if cursor is not None:
            self._events.relayed(await self._store.events_after({node_id: cursor}))

    def _remember(self, node_id: str, last: int) -> None:
        self._tops[node_id] = max(last, self._tops.get(node_id, 0))
        self._tops.move_to_end(node_id)
        while len(self._tops) > REMEMBERED:
            self._tops.popitem(last=False)

    async def _read_forever(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            dirty, self._dirty = self._dirty, {}
            cursors = {n: c for n in dirty if (c := self._events.cursor(n)) is not None}
            try:
                rows = await self._store.events_after(cursors)
            except Exception:
                log.exception("could not read other daemons' node events; retrying")
                for node_id in dirty:
                    self._dirty.setdefault(node_id, None)
                await asyncio.sleep(RECONNECT_FIRST)
                self._wake.set()
                continue
            self._events.relayed(rows)
