"""``wait_for_outcome`` rides out a daemon restart (nodes outlive the daemon), and its
own bounds — a timeout, a cancellation — still end it while the daemon is away.

The ``daemon`` fixture is module-scoped: this module stops and restarts its own."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tests.support.daemon import Daemon

from heron import api
from heron.client import APIUserAbortError, NotFoundError

from ._both import MODES, cancel_after, on_client


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
async def test_a_wait_rides_out_a_daemon_restart_and_its_own_bounds_still_hold(
    mode: str, daemon: Daemon, scripts: Any
) -> None:
    async with on_client(mode, daemon) as on:
        model = scripts("after", ["answered after the restart"])
        node = await on(lambda c: c.nodes.create(prompt="x", model=model, no_kickoff=True))
        with pytest.raises(NotFoundError):  # an error answer is not an outage
            await on(lambda c: c.nodes.wait_for_outcome("no-such-node"))
        waiting = asyncio.create_task(on(lambda c: c.nodes.wait_for_outcome(node.node_id)))
        try:
            await asyncio.to_thread(daemon.stop)
            try:
                # While the daemon is away, a timeout and a cancel still end a wait;
                # together they outlast the retries of one GET (0.5 s, then 1 s).
                with pytest.raises(TimeoutError, match="unreachable"):
                    await on(lambda c: c.nodes.wait_for_outcome(node.node_id, timeout=1.5))
                with cancel_after(1.0) as options, pytest.raises(APIUserAbortError):
                    await on(lambda c: c.nodes.wait_for_outcome(node.node_id, options=options))
                assert not waiting.done(), waiting.exception()
            finally:
                await asyncio.to_thread(daemon.start)
            await on(lambda c: c.nodes.message(node.node_id, "go on"))
            outcome = await asyncio.wait_for(waiting, 60)
        finally:
            waiting.cancel()
        assert isinstance(outcome, api.NodeResult)
        assert outcome.output_text == "answered after the restart"
