"""The Unix socket: a dead daemon's stale socket file leaks nothing, Ctrl-C leaves nothing
half-open, and both drivers perform the same flow the same way."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import socket
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from heron.client import APIConnectionError, AsyncHeron, Heron, RequestOptions
from heron.client._flow import Flow, Send, Sleep, request_flow

from .flaky import FlakyServer, Reply


@pytest.fixture
def stale_socket(tmp_path: Path) -> Path:
    """A socket file nobody listens on (what a SIGKILLed daemon leaves): ECONNREFUSED."""
    path = tmp_path / "heron.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    sock.close()
    return path


def resource_warnings(action: object) -> list[str]:
    """The ``ResourceWarning``\\ s raised while ``action()`` runs and garbage is collected."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        action()  # type: ignore[operator]
        gc.collect()
    return [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]


RAW_HTTPX = textwrap.dedent(
    """
    import gc, sys, httpx
    transport = httpx.HTTPTransport(uds=sys.argv[1])
    with httpx.Client(transport=transport) as http:
        try:
            http.get("http://heron/healthz")
        except httpx.ConnectError:
            pass
    gc.collect()
    """
)


def test_httpx_alone_leaks_the_socket_of_a_refused_unix_connect(stale_socket: Path) -> None:
    # The control, in its own process so the leaked socket cannot upset this one: what
    # the client's own transport exists to prevent.
    done = subprocess.run(
        [sys.executable, "-W", "always::ResourceWarning", "-c", RAW_HTTPX, str(stale_socket)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "ResourceWarning: unclosed <socket.socket" in done.stderr


@pytest.mark.parametrize("missing", [False, True])
def test_a_cold_socket_without_auto_start_leaks_nothing(stale_socket: Path, missing: bool) -> None:
    if missing:
        stale_socket.unlink()

    def sync() -> None:
        with Heron(socket_path=stale_socket, auto_start=False) as client:
            for _ in range(3):
                with pytest.raises(APIConnectionError) as caught:
                    client.system.health(options=RequestOptions(max_retries=0))
                assert caught.value.code == "daemon_unavailable"
                assert str(stale_socket) in caught.value.message

    assert resource_warnings(sync) == []


async def test_the_async_client_on_a_cold_socket_leaks_nothing(stale_socket: Path) -> None:
    async with AsyncHeron(socket_path=stale_socket, auto_start=False, max_retries=0) as aclient:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(3):
                with pytest.raises(APIConnectionError) as error:
                    await aclient.system.health()
                assert error.value.code == "daemon_unavailable"
            gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]


@pytest.fixture
def unix_server(tmp_path: Path) -> Iterator[FlakyServer]:
    """The failing-on-purpose server on a Unix socket."""
    with FlakyServer(unix=tmp_path / "flaky.sock") as s:
        yield s


CTRL_C = textwrap.dedent(
    """
    import sys
    from heron.client import Heron, Cancel, RequestOptions
    client = Heron(socket_path=sys.argv[1], auto_start=False)
    options = RequestOptions(cancel=Cancel()) if sys.argv[2] == "cancel" else None
    try:
        client.request("GET", "/hang", options=options)
    except KeyboardInterrupt:
        pool = client._sync.http._transport._pool
        print("interrupted", len(pool.connections), flush=True)
        client.close()
    """
)


@pytest.mark.parametrize("how", ["plain", "cancel"])
def test_ctrl_c_in_the_sync_client_leaves_nothing_half_open(
    unix_server: FlakyServer, how: str
) -> None:
    unix_server.script("/hang", "hang")
    assert unix_server.unix is not None
    process = subprocess.Popen(
        [sys.executable, "-c", CTRL_C, str(unix_server.unix), how],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONWARNINGS": "error"},
    )
    try:
        assert unix_server.arrived.wait(30), "the request never arrived"
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, err.decode()
    assert out.decode().split() == ["interrupted", "0"]
    assert b"Warning" not in err, err.decode()
    # The server saw the connection go, the moment the client was interrupted.
    assert unix_server.hung_up.wait(10)


def parity_flow(path: str) -> Flow[list[int]]:
    """Two requests with a sleep between, the first one retried: statuses seen."""
    seen = []
    first = yield from request_flow(Send(method="GET", path=path), max_retries=2)
    seen.append(first.status_code)
    yield Sleep(0.01)
    try:
        yield from request_flow(Send(method="POST", path=path, body={"n": 1}), max_retries=2)
    except APIConnectionError as exc:
        seen.append(exc.status)
    return seen


async def test_both_drivers_perform_the_same_flow_the_same_way(
    unix_server: FlakyServer,
) -> None:
    assert unix_server.unix is not None
    script = (Reply(status=502, headers={"retry-after": "0"}), Reply(status=200), "reset")
    unix_server.script("/sync", *script)
    unix_server.script("/async", *script)
    with Heron(socket_path=unix_server.unix, auto_start=False) as client:
        sync_seen = await asyncio.to_thread(client._sync.run, parity_flow("/sync"))
    async with AsyncHeron(socket_path=unix_server.unix, auto_start=False) as aclient:
        async_seen = await aclient._async.run(parity_flow("/async"))
    assert sync_seen == async_seen == [200, 0]
    requests = [(m, t.split("/")[1:], b) for m, t, _, b in unix_server.requests]
    assert [r for r in requests if r[1] == ["sync"]] == [
        (m, ["sync"], b) for m, t, b in requests if t == ["async"]
    ]
    assert unix_server.attempts == {"/sync": 3, "/async": 3}


def test_a_pooled_connection_numbered_past_1023_is_reused(unix_server: FlakyServer) -> None:
    # A busy process has many files open; select() refuses descriptors past FD_SETSIZE,
    # and the pool asks whether an idle connection is readable before each reuse.
    unix_server.script("/x", Reply(body={"ok": True}))
    assert unix_server.unix is not None
    filler = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        with Heron(socket_path=unix_server.unix, auto_start=False) as client:
            assert client.request("GET", "/x") == {"ok": True}
            assert client.request("GET", "/x") == {"ok": True}
            pool = client._sync.http._transport._pool
            assert len(pool.connections) == 1  # the second request reused the first's
            sock = pool.connections[0]._connection._network_stream.get_extra_info("socket")
            assert isinstance(sock, socket.socket) and sock.fileno() > 1024
    finally:
        for fd in filler:
            os.close(fd)
