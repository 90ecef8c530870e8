"""The TCP listener: bearer token on every route, CORS with a token, file modes.

One daemon listens on its Unix socket and on ``127.0.0.1:0``; the real port is
read from ``GET /v1/status``. The same requests go over both, so the
socket/TCP distinction is checked against what uvicorn really reports.
"""

from __future__ import annotations

import asyncio
import socket
import stat
from collections.abc import Iterator

import httpx
import pytest
from tests.support.daemon import Daemon, write_script

from heron.runtime.daemon._server import _tcp_socket
from heron.runtime.server._http import over_tcp

TOKEN = "tcp-test-token-0123456789"

ROUTES = [
    ("GET", "/healthz"),
    ("GET", "/openapi.json"),
    ("GET", "/docs"),
    ("GET", "/v1/status"),
    ("GET", "/v1/nodes"),
    ("GET", "/v1/nodes/no-such-node"),
    ("GET", "/v1/nodes/no-such-node/outcome"),
    ("POST", "/v1/nodes/no-such-node/interrupt"),
    ("POST", "/v1/nodes/no-such-node/close"),
    ("GET", "/no/such/route"),
]


@pytest.fixture(scope="module")
def tcp_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """A daemon with TCP on a free loopback port and the token from ``HERON_TOKEN``."""
    base = tmp_path_factory.mktemp("heron-tcp")
    scripts = base / "scripts"
    scripts.mkdir()
    default = write_script(scripts, "default", ["Answered over TCP."])
    daemon = Daemon(base / "home", {"HERON_PROVIDER": default, "HERON_TOKEN": TOKEN})
    daemon.start("--listen", "127.0.0.1:0")
    try:
        yield daemon
    finally:
        daemon.stop()


@pytest.fixture(scope="module")
def base_url(tcp_daemon: Daemon) -> str:
    """``http://127.0.0.1:PORT``, the port the daemon really bound."""
    with tcp_daemon.client() as client:
        listeners = client.get("/v1/status").json()["listeners"]
    tcp = [item for item in listeners if item["kind"] == "tcp"]
    assert len(tcp) == 1 and tcp[0]["auth"] == "bearer"
    host, _, port = tcp[0]["address"].rpartition(":")
    assert host == "127.0.0.1" and int(port) > 0
    return f"http://{tcp[0]['address']}"


def tcp(base_url: str, token: str | None = None, **headers: str) -> httpx.Client:
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.Client(base_url=base_url, headers=headers, timeout=30)


def test_status_lists_both_listeners(tcp_daemon: Daemon, base_url: str) -> None:
    with tcp_daemon.client() as client:
        listeners = client.get("/v1/status").json()["listeners"]
    assert {"kind": "unix", "address": str(tcp_daemon.socket), "auth": "filesystem"} in listeners
    assert {"kind": "tcp", "address": base_url.removeprefix("http://"), "auth": "bearer"} in (
        listeners
    )


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_tcp_without_a_token_is_401(base_url: str, method: str, path: str) -> None:
    with tcp(base_url) as client:
        response = client.request(method, path)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == 'Bearer realm="heron"'
    error = response.json()["error"]
    assert error["code"] == "unauthorized"
    assert "Authorization: Bearer" in error["message"]


@pytest.mark.parametrize(
    "authorization",
    [
        f"Bearer {TOKEN}x",
        f"Bearer {TOKEN[:-1]}",
        f"Token {TOKEN}",
        f"Basic {TOKEN}",
        TOKEN,
        "Bearer",
    ],
)
def test_tcp_with_a_wrong_token_is_401(base_url: str, authorization: str) -> None:
    with tcp(base_url, Authorization=authorization) as client:
        for method, path in ROUTES:
            response = client.request(method, path)
            assert response.status_code == 401, (method, path)
            assert response.json()["error"]["code"] == "unauthorized"
    # The message says what is wrong: the scheme, or the token itself.
    message = response.json()["error"]["message"]
    if authorization.split(" ")[0] == "Bearer":
        assert message == "the bearer token is not valid for this daemon"
    else:
        assert message == "the Authorization header must read `Bearer <token>`"


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_tcp_with_the_token_reaches_every_route(
    tcp_daemon: Daemon, base_url: str, method: str, path: str
) -> None:
    with tcp(base_url, TOKEN) as client:
        over_tcp = client.request(method, path)
    # The socket needs no token and gives the same answer.
    with tcp_daemon.client() as client:
        over_socket = client.request(method, path)
    assert over_tcp.status_code != 401
    assert over_tcp.status_code == over_socket.status_code
    if path in ("/healthz", "/openapi.json", "/v1/status", "/v1/nodes"):
        assert over_tcp.status_code == 200
    if path == "/openapi.json":
        assert over_tcp.json() == over_socket.json()


def test_the_bearer_scheme_is_case_insensitive(base_url: str) -> None:
    with tcp(base_url, Authorization=f"bearer {TOKEN}") as client:
        assert client.get("/healthz").status_code == 200


def test_a_node_created_over_tcp_runs(tcp_daemon: Daemon, base_url: str) -> None:
    with tcp(base_url, TOKEN) as client:
        created = client.post("/v1/nodes", json={"prompt": "hello over tcp"})
        assert created.status_code == 201, created.text
        node_id = created.json()["node_id"]
        poll = client.get(f"/v1/nodes/{node_id}/outcome", params={"wait": 20}).json()
    assert poll["state"] == "settled"
    assert poll["outcome"]["output_text"] == "Answered over TCP."
    with tcp_daemon.client() as client:
        assert client.get(f"/v1/nodes/{node_id}").json()["status"] == "completed"


def test_cors_preflight_is_answered_when_a_token_is_set(base_url: str) -> None:
    origin = "http://localhost:5173"
    with tcp(base_url) as client:
        # A browser's preflight carries no credentials: it must not be refused with 401.
        preflight = client.options(
            "/v1/nodes",
            headers={
                "Origin": origin,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization, content-type",
            },
        )
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] in ("*", origin)
    assert "POST" in preflight.headers["access-control-allow-methods"]
    allowed = preflight.headers["access-control-allow-headers"].lower()
    assert "authorization" in allowed and "content-type" in allowed
    # The real request then carries the token, and its answer is readable cross-origin.
    with tcp(base_url, TOKEN, Origin=origin) as client:
        response = client.get("/v1/status")
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] in ("*", origin)
    # Without the token the cross-origin request is still refused.
    with tcp(base_url, Origin=origin) as client:
        assert client.get("/v1/status").status_code == 401


def test_without_a_token_cross_origin_requests_are_not_allowed(daemon: Daemon) -> None:
    # The shared daemon has no TCP listener and no token: no CORS at all.
    with daemon.client() as client:
        preflight = client.options(
            "/v1/nodes",
            headers={"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"},
        )
        plain = client.get("/healthz", headers={"Origin": "http://evil.example"})
    assert preflight.status_code == 405
    assert "access-control-allow-origin" not in preflight.headers
    assert "access-control-allow-origin" not in plain.headers


def test_socket_is_0600_and_home_0700(tcp_daemon: Daemon) -> None:
    assert stat.S_ISSOCK(tcp_daemon.socket.stat().st_mode)
    assert stat.S_IMODE(tcp_daemon.socket.stat().st_mode) == 0o600
    # The test made the directory with default permissions; the daemon tightened it.
    assert stat.S_IMODE(tcp_daemon.home.stat().st_mode) == 0o700


def test_a_request_of_unknown_origin_counts_as_tcp() -> None:
    # uvicorn says (path, None) for the Unix socket; anything it cannot place needs the token.
    assert not over_tcp({"type": "http", "server": ("/home/me/.heron/heron.sock", None)})
    assert over_tcp({"type": "http", "server": ("127.0.0.1", 7717)})
    assert over_tcp({"type": "http", "server": None})
    assert over_tcp({"type": "http"})


def test_connections_to_a_tcp_listener_send_without_nagle() -> None:
    # Accepted sockets inherit the listener's proto; asyncio turns Nagle off only where it
    # says TCP. With Nagle on, each answer on a kept-alive connection waited ~40 ms.
    async def main() -> int:
        accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        class Probe(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                sock = transport.get_extra_info("socket")
                accepted.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                transport.close()

        listener = _tcp_socket("127.0.0.1", 0)
        server = await asyncio.get_running_loop().create_server(Probe, sock=listener)
        async with server:
            port = listener.getsockname()[1]
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            try:
                return await asyncio.wait_for(accepted, 10)
            finally:
                writer.close()

    assert asyncio.run(main()) == 1
