"""Every error class from a real response: the daemon's where it can produce one (over
its socket and, for 401, over TCP), the failing-on-purpose server for the rest."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.daemon import Daemon, write_script

from heron.client import (
    APIError,
    AsyncHeron,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    Heron,
    InternalServerError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    RequestOptions,
    UnprocessableEntityError,
)
from heron.client._errors import error_from_response

from .flaky import FlakyServer, Reply

TOKEN = "client-tcp-token-0123456789"


def test_a_malformed_id_in_the_path_is_400(client: Heron) -> None:
    with pytest.raises(BadRequestError) as caught:
        client.request("GET", "/v1/nodes/-bad")
    error = caught.value
    assert (error.status, error.code) == (400, "invalid_node_id")
    assert "-bad" in error.message
    assert error.headers["content-type"].startswith("application/json")


async def test_an_unknown_node_is_404_on_both_clients(client: Heron, aclient: AsyncHeron) -> None:
    with pytest.raises(NotFoundError) as sync_error:
        await asyncio.to_thread(client.request, "GET", "/v1/nodes/no-such-node/outcome")
    with pytest.raises(NotFoundError) as async_error:
        await aclient.request("GET", "/v1/nodes/no-such-node/outcome")
    for error in (sync_error.value, async_error.value):
        assert (error.status, error.code) == (404, "node_not_found")
        assert str(error).startswith("404 node_not_found: ")


async def test_a_duplicate_node_id_is_409(client: Heron, aclient: AsyncHeron, scripts: Any) -> None:
    body = {"node_id": "client-dup-1", "prompt": "hi", "model": scripts("dup", ["done"])}
    created = await asyncio.to_thread(client.request, "POST", "/v1/nodes", body)
    assert created["node_id"] == "client-dup-1"
    with pytest.raises(ConflictError) as caught:
        await aclient.request("POST", "/v1/nodes", body)
    assert (caught.value.status, caught.value.code) == (409, "node_id_exists")


def test_a_refused_body_is_422_with_details(client: Heron) -> None:
    with pytest.raises(UnprocessableEntityError) as caught:
        client.request("POST", "/v1/nodes", {"prompt": "hi", "mode": "sideways"})
    error = caught.value
    assert (error.status, error.code) == (422, "invalid_request")
    assert any("mode" in str(item) for item in error.details)


async def test_str_of_a_422_names_the_fields_on_both_clients(
    client: Heron, aclient: AsyncHeron
) -> None:
    with pytest.raises(UnprocessableEntityError) as sync_error:
        await asyncio.to_thread(client.nodes.create, prompt="hi", mode="sideways")  # type: ignore[arg-type]
    with pytest.raises(UnprocessableEntityError) as async_error:
        await aclient.nodes.create(prompt="hi", deadline="soon")
    assert str(sync_error.value).startswith("422 invalid_request: ")
    assert "(mode: Input should be 'base' or 'orchestrator')" in str(sync_error.value)
    assert "(deadline: Value error, 'soon' is not a duration" in str(async_error.value)


def test_str_of_an_error_with_several_problems_names_three() -> None:
    details = [{"loc": ["body", f"f{i}"], "msg": "bad", "type": "x"} for i in range(5)]
    body = {"error": {"code": "invalid_request", "message": "no", "details": details}}
    error = error_from_response(422, json.dumps(body).encode(), {})
    assert str(error) == "422 invalid_request: no (f0: bad; f1: bad; f2: bad; and 2 more)"
    plain = {"error": {"code": "x", "message": "no", "details": {"limit": 3}}}
    assert str(error_from_response(409, json.dumps(plain).encode(), {})) == "409 x: no"


def test_unknown_create_fields_are_a_type_error_before_sending(client: Heron) -> None:
    before = len(client.nodes.list())
    with pytest.raises(TypeError, match=r"unknown field 'promt'.*did you mean 'prompt'\?"):
        client.nodes.create(promt="hi")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unknown field 'colour'"):
        client.nodes.create({"prompt": "hi", "colour": "blue"})  # type: ignore[typeddict-unknown-key]
    with pytest.raises(TypeError, match="unknown field 'nmae'"):
        client.nodes.update("n-1", nmae="x")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unknown field 'promt'"):
        client.nodes.fork("n-1", promt="x")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unknown field 'promt'"):
        client.nodes.stream(promt="x")  # type: ignore[call-arg]
    assert len(client.nodes.list()) == before  # nothing was sent


async def test_unknown_create_fields_are_a_type_error_on_the_async_client(
    aclient: AsyncHeron,
) -> None:
    with pytest.raises(TypeError, match="unknown field 'promt'"):
        await aclient.nodes.create(promt="hi")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unknown field 'promt'"):
        await aclient.nodes.parse(promt="hi", output_schema={})  # type: ignore[call-arg]


async def test_a_body_over_the_limit_is_413(aclient: AsyncHeron) -> None:
    with pytest.raises(APIError) as caught:
        await aclient.request("POST", "/v1/nodes", {"prompt": "x" * (1024 * 1024 + 1)})
    error = caught.value
    assert type(error) is APIError  # no subclass for 413: branch on the code
    assert (error.status, error.code) == (413, "body_too_large")


@pytest.fixture(scope="module")
def tcp_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Daemon, str]]:
    """A daemon on its socket and ``127.0.0.1:0`` with a ``HERON_TOKEN``; its base URL."""
    base = tmp_path_factory.mktemp("client-tcp")
    default = write_script(base, "default", ["Answered over TCP."])
    daemon = Daemon(base / "home", {"HERON_PROVIDER": default, "HERON_TOKEN": TOKEN})
    daemon.start("--listen", "127.0.0.1:0")
    try:
        with Heron(socket_path=daemon.socket, auto_start=False) as client:
            status = client.system.status()
        (tcp,) = [item for item in status.listeners if item.kind == "tcp"]
        yield daemon, f"http://{tcp.address}"
    finally:
        daemon.stop()


@pytest.mark.parametrize("token", [None, TOKEN + "x"])
async def test_tcp_without_the_right_token_is_401(
    tcp_daemon: tuple[Daemon, str], tmp_path: Path, token: str | None, monkeypatch: Any
) -> None:
    _, base_url = tcp_daemon
    monkeypatch.delenv("HERON_TOKEN", raising=False)
    settings: dict[str, Any] = {"base_url": base_url, "token": token, "home": tmp_path}
    with Heron(**settings) as client, pytest.raises(AuthenticationError) as sync_error:
        await asyncio.to_thread(client.system.status)
    async with AsyncHeron(**settings) as aclient:
        with pytest.raises(AuthenticationError) as async_error:
            await aclient.system.status()
    for error in (sync_error.value, async_error.value):
        assert (error.status, error.code) == (401, "unauthorized")
        assert error.headers["www-authenticate"] == 'Bearer realm="heron"'


async def test_tcp_with_the_token_works_on_both_clients(tcp_daemon: tuple[Daemon, str]) -> None:
    daemon, base_url = tcp_daemon
    with Heron(base_url=base_url, token=TOKEN) as client:
        pid = (await asyncio.to_thread(client.system.status)).pid
    async with AsyncHeron(base_url=base_url + "/", token=TOKEN) as aclient:
        assert (await aclient.system.status()).pid == pid
    assert daemon.process is not None and pid == daemon.process.pid


@pytest.fixture
def server() -> Iterator[FlakyServer]:
    """The failing-on-purpose server."""
    with FlakyServer() as s:
        yield s


@pytest.mark.parametrize(
    ("reply", "kind", "code", "message", "details"),
    [
        (
            Reply(
                status=403,
                body={"error": {"code": "forbidden", "message": "not yours", "details": [1]}},
            ),
            PermissionDeniedError,
            "forbidden",
            "not yours",
            [1],
        ),
        (
            Reply(status=429, body={"error": {"code": "slow_down", "message": "later"}}),
            RateLimitError,
            "slow_down",
            "later",
            None,
        ),
        (
            Reply(status=500, body={"error": {"code": "internal", "message": "boom"}}),
            InternalServerError,
            "internal",
            "boom",
            None,
        ),
        (
            Reply(status=502, body="<html>Bad Gateway</html>", headers={"x-proxy": "yes"}),
            InternalServerError,
            "http_502",
            "<html>Bad Gateway</html>",
            None,
        ),
        (Reply(status=503), InternalServerError, "http_503", "HTTP 503", None),
        (
            Reply(status=418, body={"error": "teapot"}),
            APIError,
            "http_418",
            '{"error": "teapot"}',
            None,
        ),
    ],
)
async def test_each_status_maps_to_its_class(
    server: FlakyServer,
    reply: Reply,
    kind: type[APIError],
    code: str,
    message: str,
    details: Any,
) -> None:
    server.script("/e", reply)
    no_retry = RequestOptions(max_retries=0)
    with Heron(base_url=server.url) as client, pytest.raises(kind) as sync_error:
        await asyncio.to_thread(client.request, "GET", "/e", options=no_retry)
    async with AsyncHeron(base_url=server.url) as aclient:
        with pytest.raises(kind) as async_error:
            await aclient.request("GET", "/e", options=no_retry)
    for error in (sync_error.value, async_error.value):
        assert type(error) is kind
        assert (error.status, error.code, error.message) == (reply.status, code, message)
        assert error.details == details
        assert error.headers.get("x-proxy") == reply.headers.get("x-proxy")


def test_a_huge_non_json_error_body_is_cut_short() -> None:
    error = error_from_response(500, b"x" * 10_000, {})
    assert len(error.message) == 500
    assert (
        repr(error)
        == f"InternalServerError(status=500, code='http_500', message={error.message!r})"
    )


@pytest.mark.parametrize(
    ("reply", "where"),
    [
        (Reply(body="<html>Welcome to nginx</html>"), "the body: Invalid JSON"),
        (Reply(body={"node_id": "n1"}), "status: Field required"),
    ],
)
async def test_a_success_that_is_not_the_route_s_answer_is_invalid_response(
    server: FlakyServer, reply: Reply, where: str
) -> None:
    # Not a raw pydantic ValidationError naming neither the request nor the daemon.
    server.script("/v1/nodes/n1", reply)
    with Heron(base_url=server.url) as client, pytest.raises(APIError) as sync_error:
        await asyncio.to_thread(client.nodes.retrieve, "n1")
    async with AsyncHeron(base_url=server.url) as aclient:
        with pytest.raises(APIError) as async_error:
            await aclient.nodes.retrieve("n1")
    for error in (sync_error.value, async_error.value):
        assert type(error) is APIError
        assert (error.status, error.code) == (200, "invalid_response")
        assert error.message.startswith("GET /v1/nodes/n1 answered 200 with a body that is not")
        assert where in error.message
        assert error.details
