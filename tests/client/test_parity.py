"""``Heron`` and ``AsyncHeron`` kept in step: the same resources, methods, signatures and
docstrings, and the same results for the same scenario."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.daemon import Daemon

from heron.client import AsyncHeron, Heron
from heron.client._resource import Resource, endpoint
from heron.client._stream import _streaming

from ._both import On, on_client


def resources(obj: Resource[Any], path: str = "client") -> Iterator[tuple[str, Resource[Any]]]:
    """``obj`` and every resource reachable from it, by attribute path."""
    yield path, obj
    for name, value in sorted(vars(obj).items()):
        if isinstance(value, Resource) and not name.startswith("_"):
            yield from resources(value, f"{path}.{name}")


def public_methods(resource: Resource[Any]) -> dict[str, Any]:
    """The resource's public callables, by name."""
    found = {}
    for name in dir(type(resource)):
        if name.startswith("_"):
            continue
        value = getattr(resource, name)
        if callable(value) and not isinstance(value, Resource):
            found[name] = value
    return found


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[Heron, AsyncHeron]]:
    """Both clients, on a socket nothing listens on (constructing one connects nowhere)."""
    socket = tmp_path / "nobody.sock"
    sync = Heron(socket_path=socket, auto_start=False)
    aclient = AsyncHeron(socket_path=socket, auto_start=False)
    try:
        yield sync, aclient
    finally:
        sync.close()


async def test_both_clients_have_the_same_resources_and_methods(
    pair: tuple[Heron, AsyncHeron],
) -> None:
    sync, aclient = pair
    try:
        sync_tree = dict(resources(sync))
        async_tree = dict(resources(aclient))
        assert list(sync_tree) == list(async_tree)
        expected = {
            "client.auth",
            "client.nodes",
            "client.nodes.jobs",
            "client.nodes.reports",
            "client.nodes.result",
            "client.nodes.worktree",
            "client.profiles",
            "client.system",
        }
        assert expected <= set(sync_tree)
        for path, resource in sync_tree.items():
            twin = async_tree[path]
            methods, twins = public_methods(resource), public_methods(twin)
            if path == "client":
                # Closing is the one difference: close() blocks, aclose() is awaited.
                assert methods.pop("close") and twins.pop("aclose")
                assert "aclose" not in methods and "close" not in twins
            else:
                assert type(resource) is type(twin), path
            assert set(methods) == set(twins), path
            for name, method in methods.items():
                where = f"{path}.{name}"
                other = twins[name]
                assert inspect.signature(method).parameters == (
                    inspect.signature(other).parameters
                ), where
                assert method.__doc__ and method.__doc__ == other.__doc__, where
                assert not inspect.iscoroutinefunction(method), where
                # Written once: every request method is an endpoint of the class (streams:
                # one builder whose plan both clients' stream objects run).
                written_once = (endpoint, _streaming)
                assert isinstance(inspect.getattr_static(type(resource), name), written_once), where
    finally:
        await aclient.aclose()


async def test_an_async_method_returns_an_awaitable_and_a_sync_one_its_result(
    daemon: Daemon,
) -> None:
    with Heron(socket_path=daemon.socket, auto_start=False) as sync:
        assert (await asyncio.to_thread(sync.system.health)).ok is True
    async with AsyncHeron(socket_path=daemon.socket, auto_start=False) as aclient:
        pending = aclient.system.health()
        assert inspect.isawaitable(pending)
        assert (await pending).ok is True


async def scenario(on: On, scripts: Any) -> list[Any]:
    """Profile, create, update, revive, wait, reports, fork, parse, cancel: what each gave,
    without ids and times."""
    seen: list[Any] = []
    tag = on.mode
    model = scripts(
        f"scenario-{tag}",
        [
            {"tool_calls": [{"name": "push-report", "arguments": {"tier": "final", "body": "B"}}]},
            "First answer.",
            "Fork answer.",
        ],
    )
    profile = await on(lambda c: c.profiles.ensure(f"parity-{tag}", description="parity"))
    seen.append((profile.created, profile.description))
    node = await on(
        lambda c: c.nodes.create(
            prompt="go", model=model, no_kickoff=True, profile=profile.name, name="n"
        )
    )
    seen.append((node.status, node.name, node.mode, node.runs))
    node = await on(lambda c: c.nodes.update(node.node_id, description="described"))
    seen.append(node.description)
    node = await on(lambda c: c.nodes.revive(node.node_id))
    seen.append((node.status, node.runs))
    outcome = await on(lambda c: c.nodes.wait_for_outcome(node.node_id, timeout=30))
    seen.append(outcome.model_dump(exclude={"final_report_path"}))
    reports = await on(lambda c: c.nodes.reports.list(node.node_id))
    seen.append([(r.tier, r.body) for r in reports])
    fork = await on(lambda c: c.nodes.fork(node.node_id, prompt="more"))
    fork_outcome = await on(lambda c: c.nodes.wait_for_outcome(fork.node_id, timeout=30))
    seen.append((fork.status, fork_outcome.model_dump(exclude={"final_report_path"})))
    held = await on(lambda c: c.nodes.create(prompt="x", no_kickoff=True, model=model))
    closed = await on(lambda c: c.nodes.cancel(held.node_id, reason="done"))
    poll = await on(lambda c: c.nodes.outcome(held.node_id, wait=5))
    seen.append((closed.status, poll.state, poll.outcome.model_dump()))
    return seen


async def test_the_same_scenario_gives_the_same_results_on_both_clients(
    daemon: Daemon, scripts: Any
) -> None:
    async with on_client("sync", daemon) as sync:
        through_sync = await scenario(sync, scripts)
    async with on_client("async", daemon) as aclient:
        through_async = await scenario(aclient, scripts)
    assert through_sync == through_async
    assert through_sync[4]["output_text"] == "First answer."
