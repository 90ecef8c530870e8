"""Run one test body through both clients: ``await on(lambda c: c.nodes.retrieve(id))``.

The blocking client's calls run in a worker thread so the test's event loop keeps
going; the async client's are awaited. Parametrising a fixture over :data:`MODES`
runs every test once per client.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from tests.support.daemon import Daemon

from heron.client import AsyncHeron, Cancel, Heron, RequestOptions

__all__ = ["MODES", "On", "cancel_after", "on_client"]

MODES = ["sync", "async"]
"""The two clients a test runs through."""


class On:
    """Calls a function of a client and gives back its result, whichever client it is."""

    def __init__(self, client: Heron | AsyncHeron) -> None:
        self.client = client
        self.mode = "sync" if isinstance(client, Heron) else "async"

    async def __call__(self, call: Callable[[Any], Any]) -> Any:
        if isinstance(self.client, Heron):
            return await asyncio.to_thread(call, self.client)
        result = call(self.client)
        assert inspect.isawaitable(result), "an AsyncHeron method returned no awaitable"
        return await result


@contextlib.asynccontextmanager
async def on_client(mode: str, daemon: Daemon) -> AsyncIterator[On]:
    """An :class:`On` over a new client of ``mode`` on ``daemon``'s socket."""
    kwargs: dict[str, Any] = {
        "socket_path": daemon.socket,
        "home": daemon.home,
        "auto_start": False,
    }
    if mode == "sync":
        with Heron(**kwargs) as sync:
            yield On(sync)
    else:
        async with AsyncHeron(**kwargs) as client:
            yield On(client)


@contextlib.contextmanager
def cancel_after(seconds: float) -> Iterator[RequestOptions]:
    """Options whose cancellation fires ``seconds`` from now (from a timer thread)."""
    cancel = Cancel()
    timer = threading.Timer(seconds, cancel.cancel)
    timer.start()
    try:
        yield RequestOptions(cancel=cancel)
    finally:
        timer.cancel()
