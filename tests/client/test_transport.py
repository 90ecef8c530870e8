"""Retries, timeouts, headers and cancellation, against a loopback server that fails on
purpose. Every behaviour runs through both clients (``mode``)."""

from __future__ import annotations

import asyncio
import email.utils
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from tests.support.polling import eventually

import heron
from heron.client import (
    APIConnectionError,
    APIConnectionTimeoutError,
    APIUserAbortError,
    AsyncHeron,
    Cancel,
    Heron,
    InternalServerError,
    RateLimitError,
    RequestOptions,
)
from heron.client._flow import Flow, Sleep

from .flaky import FlakyServer, Reply

OK = Reply(body={"ok": True})
UNAVAILABLE = Reply(status=503, body={"error": {"code": "busy", "message": "try later"}})


@pytest.fixture
def server() -> Iterator[FlakyServer]:
    """A fresh failing-on-purpose server per test."""
    with FlakyServer() as s:
        yield s


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    """Which client a test drives."""
    return str(request.param)


async def call(mode: str, server: FlakyServer, method: str, path: str, **kwargs: Any) -> Any:
    """``client.request(...)`` on a fresh client of ``mode`` pointed at ``server``.

    Client arguments are passed as ``client={...}``; the sync client runs in a thread.
    """
    settings = {"base_url": server.url, "token": "t0k", **kwargs.pop("client", {})}
    if mode == "sync":
        with Heron(**settings) as client:
            return await asyncio.to_thread(client.request, method, path, **kwargs)
    async with AsyncHeron(**settings) as aclient:
        return await aclient.request(method, path, **kwargs)


async def test_a_get_answered_503_then_200_is_retried(mode: str, server: FlakyServer) -> None:
    server.script("/x", UNAVAILABLE, OK)
    options = RequestOptions(headers={"X-Trace": "abc"})
    assert await call(mode, server, "GET", "/x", options=options) == {"ok": True}
    assert server.attempts["/x"] == 2
    # Every attempt carries the same headers: auth, the call's own, the JSON accept.
    for _, _, headers, _ in server.requests:
        assert headers["authorization"] == "Bearer t0k"
        assert headers["x-trace"] == "abc"
        assert headers["accept"] == "application/json"
        assert headers["user-agent"] == f"heron-client/{heron.__version__}"


async def test_retries_stop_at_max_retries_with_the_last_error(
    mode: str, server: FlakyServer
) -> None:
    server.script("/x", UNAVAILABLE)
    with pytest.raises(InternalServerError) as caught:
        await call(mode, server, "GET", "/x", client={"max_retries": 1})
    assert server.attempts["/x"] == 2
    error = caught.value
    assert (error.status, error.code, error.message) == (503, "busy", "try later")
    assert error.headers["content-type"] == "application/json"
    # Per call, the option wins over the client's default.
    with pytest.raises(InternalServerError):
        await call(mode, server, "DELETE", "/x", options=RequestOptions(max_retries=0))
    assert server.attempts["/x"] == 3


@pytest.mark.parametrize("method", ["POST", "PATCH", "PUT"])
async def test_a_mutation_answered_503_is_sent_exactly_once(
    mode: str, server: FlakyServer, method: str
) -> None:
    server.script("/v1/nodes", UNAVAILABLE, Reply(status=201, body={"created": True}))
    with pytest.raises(InternalServerError):
        await call(mode, server, method, "/v1/nodes", body={"prompt": "hi"})
    assert server.attempts["/v1/nodes"] == 1
    assert server.requests[0][3] == b'{"prompt":"hi"}'


async def test_429_waits_out_retry_after_seconds(mode: str, server: FlakyServer) -> None:
    limited = Reply(status=429, body={"error": {"code": "slow_down"}}, headers={"retry-after": "1"})
    server.script("/x", limited, OK)
    started = time.monotonic()
    assert await call(mode, server, "HEAD", "/x") is None
    assert time.monotonic() - started >= 0.95
    assert server.attempts["/x"] == 2


async def test_429_honours_an_http_date_retry_after(mode: str, server: FlakyServer) -> None:
    soon = email.utils.formatdate(time.time() + 1, usegmt=True)
    server.script("/x", Reply(status=429, headers={"retry-after": soon}), OK)
    assert await call(mode, server, "GET", "/x") == {"ok": True}
    assert server.attempts["/x"] == 2


async def test_a_retry_after_beyond_a_minute_is_not_waited_out(
    mode: str, server: FlakyServer
) -> None:
    server.script("/x", Reply(status=429, headers={"retry-after": "3600"}), OK)
    with pytest.raises(RateLimitError) as caught:
        await call(mode, server, "GET", "/x")
    assert server.attempts["/x"] == 1
    assert caught.value.headers["retry-after"] == "3600"
    assert caught.value.code == "http_429"


async def test_a_connection_reset_mid_response_is_retried_for_a_get(
    mode: str, server: FlakyServer
) -> None:
    server.script("/x", Reply(body={"long": "x" * 5000}, cut=True), OK)
    assert await call(mode, server, "GET", "/x") == {"ok": True}
    assert server.attempts["/x"] == 2


async def test_a_connection_reset_is_a_connection_error_for_a_post(
    mode: str, server: FlakyServer
) -> None:
    server.script("/x", Reply(body={"long": "x" * 5000}, cut=True), OK)
    with pytest.raises(APIConnectionError) as caught:
        await call(mode, server, "POST", "/x", body={})
    assert server.attempts["/x"] == 1
    assert caught.value.status == 0 and caught.value.code == "connection_error"
    server.script("/y", "reset")
    with pytest.raises(APIConnectionError):
        await call(mode, server, "GET", "/y", options=RequestOptions(max_retries=0))


async def test_a_hanging_response_times_out(mode: str, server: FlakyServer) -> None:
    server.script("/x", "hang")
    with pytest.raises(APIConnectionTimeoutError) as caught:
        await call(mode, server, "GET", "/x", client={"timeout": 0.3, "max_retries": 1})
    assert caught.value.code == "timeout" and "within 0.3 s" in caught.value.message
    assert server.attempts["/x"] == 2  # a timed-out GET is retried like any connection error
    with pytest.raises(APIConnectionTimeoutError):
        await call(mode, server, "POST", "/x", options=RequestOptions(timeout=0.2))
    assert server.attempts["/x"] == 3


async def test_request_returns_json_none_or_text(mode: str, server: FlakyServer) -> None:
    server.script("/json", Reply(body=[1, {"a": None}]))
    server.script("/empty", Reply(status=204))
    server.script("/html", Reply(body="<h1>docs</h1>", headers={"content-type": "text/html"}))
    assert await call(mode, server, "GET", "/json", query={"a": 1, "b": None}) == [1, {"a": None}]
    assert server.requests[-1][1] == "/json?a=1"
    assert await call(mode, server, "GET", "/json?b=2&c=x%20y") == [1, {"a": None}]
    assert server.requests[-1][1] == "/json?b=2&c=x%20y"
    with pytest.raises(ValueError, match="not both"):
        await call(mode, server, "GET", "/json?b=2", query={"a": 1})
    with pytest.raises(ValueError, match="path"):
        await call(mode, server, "GET", "json")
    assert await call(mode, server, "DELETE", "/empty") is None
    assert await call(mode, server, "GET", "/html") == "<h1>docs</h1>"


async def test_a_cancel_already_fired_sends_nothing(mode: str, server: FlakyServer) -> None:
    cancel = Cancel()
    cancel.cancel()
    with pytest.raises(APIUserAbortError) as caught:
        await call(mode, server, "GET", "/x", options=RequestOptions(cancel=cancel))
    assert caught.value.code == "aborted"
    assert server.attempts["/x"] == 0


def cancel_when(event: threading.Event) -> Cancel:
    """A :class:`Cancel` a thread fires once ``event`` is set."""
    cancel = Cancel()
    threading.Thread(target=lambda: event.wait(10) and cancel.cancel(), daemon=True).start()
    return cancel


def sleeper(started: threading.Event, options: RequestOptions) -> Flow[str]:
    """A flow that sleeps 50 s (and says so just before)."""
    started.set()
    yield Sleep(50, options)
    return "slept"


async def test_cancel_cuts_a_driver_sleep_short(mode: str, server: FlakyServer) -> None:
    started = threading.Event()
    options = RequestOptions(cancel=cancel_when(started))
    async with AsyncHeron(base_url=server.url) as aclient:
        with Heron(base_url=server.url) as client, pytest.raises(APIUserAbortError):
            if mode == "sync":
                await asyncio.to_thread(client._sync.run, sleeper(started, options))
            else:
                await aclient._async.run(sleeper(started, options))


async def test_cancel_aborts_a_request_in_flight(mode: str, server: FlakyServer) -> None:
    server.script("/x", "hang")
    cancel = cancel_when(server.arrived)
    with pytest.raises(APIUserAbortError):
        await call(mode, server, "GET", "/x", options=RequestOptions(cancel=cancel))
    # The abandoned request's connection is closed, not left to its 60 s timeout.
    assert await asyncio.to_thread(server.hung_up.wait, 10)
    assert server.attempts["/x"] == 1


async def test_cancel_cuts_a_backoff_sleep_short(mode: str, server: FlakyServer) -> None:
    # If the cancel did not reach the sleep, the retry would get the 200 after 50 s.
    server.script("/x", Reply(status=503, headers={"retry-after": "50"}), OK)
    cancel = cancel_when(server.arrived)
    with pytest.raises(APIUserAbortError):
        await call(mode, server, "GET", "/x", options=RequestOptions(cancel=cancel))
    assert server.attempts["/x"] == 1


@pytest.mark.parametrize("with_cancel", [False, True])
async def test_a_cancelled_task_propagates_cancelled_error(
    server: FlakyServer, with_cancel: bool
) -> None:
    server.script("/x", "hang")
    options = RequestOptions(cancel=Cancel() if with_cancel else None)
    async with AsyncHeron(base_url=server.url) as aclient:
        task = asyncio.create_task(aclient.request("GET", "/x", options=options))
        assert await asyncio.to_thread(server.arrived.wait, 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await asyncio.to_thread(server.hung_up.wait, 10)


def test_cancel_stops_the_abandoned_worker_thread(server: FlakyServer) -> None:
    server.script("/x", "hang")
    cancel = Cancel()
    with Heron(base_url=server.url) as client:
        threading.Thread(target=lambda: server.arrived.wait(10) and cancel.cancel()).start()
        with pytest.raises(APIUserAbortError):
            client.request("GET", "/x", options=RequestOptions(cancel=cancel))
        eventually(
            lambda: not any(t.name == "heron-client-request" for t in threading.enumerate()),
            timeout=10,
            interval=0.01,
            what="the cancelled request's thread ending",
        )
        # The client is still good for the next request.
        server.script("/y", OK)
        assert client.request("GET", "/y") == {"ok": True}


def test_cancel_is_idempotent_and_runs_late_callbacks_at_once() -> None:
    cancel = Cancel()
    calls: list[str] = []
    remove = cancel.add_callback(lambda: calls.append("early"))
    removed = cancel.add_callback(lambda: calls.append("removed"))
    removed()
    cancel.cancel()
    cancel.cancel()
    cancel.add_callback(lambda: calls.append("late"))
    remove()
    assert calls == ["early", "late"]
    assert cancel.cancelled and cancel.wait(0)


async def test_a_blocking_call_inside_a_running_loop_is_refused(server: FlakyServer) -> None:
    # It would freeze every other task on the loop (here: nothing else could run while
    # it waits); the error names the way out, and nothing was sent.
    server.script("/x", OK)
    with Heron(base_url=server.url) as client:
        with pytest.raises(RuntimeError, match=r"use AsyncHeron .*asyncio\.to_thread"):
            client.request("GET", "/x")
        with pytest.raises(RuntimeError, match="running event loop"):
            client.nodes.retrieve("n1")
        assert server.requests == []
        # The same call from a worker thread (no loop there) goes through.
        assert await asyncio.to_thread(client.request, "GET", "/x") == {"ok": True}
