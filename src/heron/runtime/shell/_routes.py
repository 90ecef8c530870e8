"""Commands: ``POST /v1/bash`` (the rules are :mod:`._service`'s)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from fastapi import FastAPI, Request

from ... import api
from ..server import ApiError, errors

if TYPE_CHECKING:
    from ._service import Commands

__all__ = ["add_shell_routes"]


def add_shell_routes(app: FastAPI, commands: Commands) -> None:
    """Serve ``POST /v1/bash``."""

    @app.post("/v1/bash", tags=["bash"], responses=errors(400, 413, 415, 422, 503))
    async def run_bash(body: api.BashRequest, request: Request) -> api.BashResult:
        """Run one command (``bash -c``) in ``cwd`` and answer how it ended: a non-zero
        exit is an answer. It never outlives the request: a timeout, the client
        disconnecting or the daemon stopping kills it and everything it started."""
        return await until_disconnected(request, asyncio.ensure_future(commands.run(body)))


async def until_disconnected(
    request: Request, work: asyncio.Task[api.BashResult]
) -> api.BashResult:
    """``work``'s result, or ``work`` cancelled as soon as the client disconnects."""

    async def disconnected() -> None:
        # FastAPI has read the body: the next message is the disconnect, whenever it comes.
        while (await request.receive())["type"] != "http.disconnect":
            pass

    watcher = asyncio.ensure_future(disconnected())
    try:
        await asyncio.wait({work, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
        if not work.done():
            work.cancel()  # the client left (or this request was cancelled): kill it
        await asyncio.gather(watcher, return_exceptions=True)
        if work.cancelled() or not work.done():
            await asyncio.gather(work, return_exceptions=True)
    if work.cancelled():
        raise ApiError(499, "client_disconnected", "the client went away: the command was killed")
    return work.result()
