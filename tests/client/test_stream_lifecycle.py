"""Node streams' lifecycle: when the node is created, releasing connections, abort over TCP,
and the two stream classes kept in step."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from typing import Any, get_args, get_overloads, get_type_hints

import pytest
from tests.support.daemon import Daemon, write_script
from tests.support.streams import STEPS, abort_a_blocked_read, abort_a_pending_read

from heron import api
from heron.client import (
    APIUserAbortError,
    AsyncHeron,
    AsyncNodeStream,
    Heron,
    Listener,
    NodeStream,
    Reconnect,
)

POOL = 100
"""httpx's default connection limit: a stream that keeps its connection after ending
holds one of these until the client closes."""


def test_node_creates_without_opening_so_several_runs_start_at_once(
    client: Heron, scripts: Any
) -> None:
    streams = [client.nodes.stream(prompt="Go.", model=scripts(f"many{i}", STEPS)) for i in (1, 2)]
    nodes = [stream.node for stream in streams]  # both created before either is read
    assert client.system.status().event_streams.readers == 0
    for node in nodes:
        assert client.nodes.retrieve(node.node_id).status in ("running", "completed")
    outcomes = [stream.final_outcome() for stream in streams]
    assert all(isinstance(o, api.NodeResult) for o in outcomes)


def test_closed_streams_give_their_connections_back(client: Heron, scripts: Any) -> None:
    node = client.nodes.create(prompt="W.", model=scripts("pool", ["x"]), no_kickoff=True)
    kept: list[NodeStream] = []  # still referenced: only close() can release them
    for _ in range(POOL + 1):
        stream = client.nodes.events(node.node_id, reconnect=Reconnect(attempts=0))
        assert isinstance(next(stream), api.NodeStatusChanged)
        stream.close()
        kept.append(stream)
    assert client.nodes.retrieve(node.node_id).status == "dormant"
    with pytest.raises(APIUserAbortError):
        next(kept[0])


async def test_aborted_async_streams_give_their_connections_back(
    aclient: AsyncHeron, scripts: Any
) -> None:
    created = await aclient.nodes.create(
        prompt="W.", model=scripts("apool", ["x"]), no_kickoff=True
    )
    kept: list[AsyncNodeStream] = []
    for _ in range(POOL + 1):
        stream = aclient.nodes.events(created.node_id, reconnect=Reconnect(attempts=0))
        assert isinstance(await anext(stream), api.NodeStatusChanged)
        stream.abort()  # not aclose(): abort() alone must let the connection go
        kept.append(stream)
    node = await asyncio.wait_for(aclient.nodes.retrieve(created.node_id), 20)
    assert node.status == "dormant"
    with pytest.raises(APIUserAbortError):
        await anext(kept[0])


async def test_an_async_listener_may_await_the_node(aclient: AsyncHeron, scripts: Any) -> None:
    stream = aclient.nodes.stream(prompt="Go.", model=scripts("anode", ["Hi."]))
    seen: list[str] = []

    async def on_settled(event: api.NodeSettled) -> None:
        seen.append((await stream.node).node_id)  # the stream's lock is held right now

    stream.on("node.settled", on_settled)
    outcome = await asyncio.wait_for(stream.final_outcome(), 20)
    assert isinstance(outcome, api.NodeResult)
    assert seen == [(await stream.node).node_id]


async def test_an_async_listener_reading_its_own_stream_is_refused(
    aclient: AsyncHeron, scripts: Any
) -> None:
    stream = aclient.nodes.stream(prompt="Go.", model=scripts("aself", ["Hi."]))

    async def on_delta(event: api.OutputTextDelta) -> None:
        await stream.final_outcome()  # would wait for the lock its own task holds

    stream.on("node.output_text.delta", on_delta)
    with pytest.raises(RuntimeError, match="cannot read its own stream"):
        await asyncio.wait_for(stream.final_outcome(), 20)
    closing = aclient.nodes.stream(prompt="Go.", model=scripts("aclose", ["Hi."]))

    async def close(event: api.NodeEvent) -> None:
        await closing.aclose()  # allowed: the stream ends once the listener returns

    closing.on("node.status.changed", close)
    with pytest.raises(APIUserAbortError):
        await asyncio.wait_for(closing.final_outcome(), 20)


# Over TCP: the token is sent, and abort wakes a blocked read on a TCP socket.

TOKEN = "stream-tcp-token-0123456789"


@pytest.fixture(scope="module")
def tcp_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of a daemon on a free loopback port, guarded by ``TOKEN``."""
    base = tmp_path_factory.mktemp("heron-stream-tcp")
    default = write_script(base, "default", ["Default."])
    daemon = Daemon(base / "home", {"HERON_PROVIDER": default, "HERON_TOKEN": TOKEN})
    daemon.start("--listen", "127.0.0.1:0")
    try:
        with daemon.client() as http:
            listeners = http.get("/v1/status").json()["listeners"]
        (address,) = [item["address"] for item in listeners if item["kind"] == "tcp"]
        yield f"http://{address}"
    finally:
        daemon.stop()


def test_sync_abort_over_tcp_wakes_a_blocked_read(tcp_url: str, tmp_path: Any) -> None:
    with Heron(base_url=tcp_url, token=TOKEN) as client:
        abort_a_blocked_read(client, write_script(tmp_path, "tcp", ["x"]))


async def test_async_abort_over_tcp_ends_a_pending_read(tcp_url: str, tmp_path: Any) -> None:
    async with AsyncHeron(base_url=tcp_url, token=TOKEN) as client:
        await abort_a_pending_read(client, write_script(tmp_path, "atcp", ["x"]))


# The two classes in step.

_OWN = {"close", "aclose", "__enter__", "__exit__", "__aenter__", "__aexit__"}
_ITERATION = {"NodeStream": ("__iter__", "__next__"), "AsyncNodeStream": ("__aiter__", "__anext__")}


def public(cls: type[Any]) -> dict[str, Any]:
    return {
        name: getattr(cls, name)
        for name in dir(cls)
        if not name.startswith("_") and name not in _OWN
    }


def test_both_stream_classes_have_the_same_public_members() -> None:
    sync, async_ = public(NodeStream), public(AsyncNodeStream)
    assert (
        sorted(sync) == sorted(async_) == ["abort", "aborted", "final_outcome", "node", "off", "on"]
    )
    for name, member in sync.items():
        other = async_[name]
        assert (member.__doc__ or "").strip() and (other.__doc__ or "").strip(), name
        if callable(member):
            params = list(inspect.signature(member).parameters)
            assert params == list(inspect.signature(other).parameters), name
    assert inspect.iscoroutinefunction(AsyncNodeStream.final_outcome)
    assert inspect.iscoroutinefunction(AsyncNodeStream.aclose)
    for cls in (NodeStream, AsyncNodeStream):
        for name in _ITERATION[cls.__name__]:
            assert hasattr(cls, name)


def test_on_and_off_are_typed_per_event_type() -> None:
    """One overload per event type gives its listener that event's model (checked here at
    run time, so a new event type cannot be left out), then one for any string."""
    models = {
        get_args(model.model_fields["type"].annotation)[0]: model
        for model in get_args(get_args(api.NodeEvent)[0])
    }
    for method in (NodeStream.on, NodeStream.off):
        typed: dict[str, Any] = {}
        overloads = get_overloads(method)
        for overload in overloads[:-1]:
            hints = get_type_hints(overload)
            (event_type,) = get_args(hints["type"])
            (listener_arg,), _ = get_args(hints["listener"])
            typed[event_type] = listener_arg
        assert typed == models
        last = get_type_hints(overloads[-1], include_extras=True)
        assert last["type"] is str and last["listener"] == Listener


def test_closing_the_client_wakes_a_stream_read_blocked_in_another_thread(
    daemon: Daemon, scripts: Any
) -> None:
    # Closing a socket does not wake a read waiting on it: close() aborts its open streams.
    client = Heron(socket_path=daemon.socket, auto_start=False)
    abort_a_blocked_read(client, scripts("close", ["x"]), stop=client.close)
