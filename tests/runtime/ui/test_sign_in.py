"""The page's sign-in and its guards over plain HTTP on a real daemon: ``POST /v1/ui/open``
opens a loopback listener (shown in ``/v1/status``), the one-time code becomes an HttpOnly
``SameSite=Strict`` cookie, a change made with it needs the CSRF token and the daemon's own
origin, sign-out ends it, and the page's files never leave their folder."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from contextlib import closing
from typing import Any

import httpx
import pytest
from tests.support.daemon import Daemon, wait_settled, write_script

from heron.runtime.ui._sessions import CODE_SECONDS, MAX_SESSIONS, SESSION_SECONDS, Sessions


@pytest.fixture(scope="module")
def opened(client_module: httpx.Client) -> dict[str, Any]:
    """The page opened once for the module: its URL and a first sign-in link."""
    response = client_module.post("/v1/ui/open", json={})
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


@pytest.fixture(scope="module")
def client_module(daemon: Daemon) -> Iterator[httpx.Client]:
    """A socket client for the module-scoped fixtures."""
    with daemon.client() as c:
        yield c


def origin(opened: dict[str, Any]) -> str:
    """``http://127.0.0.1:PORT``."""
    return str(opened["url"]).removesuffix("/ui/")


def sign_in(client: httpx.Client) -> tuple[httpx.Client, str]:
    """A TCP client holding a fresh session cookie, and the session's CSRF token."""
    link = client.post("/v1/ui/open", json={}).json()["login_url"]
    browser = httpx.Client(base_url=link.split("/ui/", 1)[0], timeout=30)
    answer = browser.get(link)
    assert answer.status_code == 303, answer.text
    csrf = browser.get("/ui/session").json()["csrf_token"]
    return browser, csrf


def test_open_adds_a_loopback_listener_that_status_shows_and_reuses(
    daemon: Daemon, client: httpx.Client, opened: dict[str, Any]
) -> None:
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/ui/", opened["url"])
    assert opened["login_url"].startswith(origin(opened) + "/ui/login?code=")
    assert opened["listener"] == {
        "kind": "tcp",
        "address": origin(opened).removeprefix("http://"),
        "auth": "session",
    }
    listeners = client.get("/v1/status").json()["listeners"]
    assert opened["listener"] in listeners
    assert [entry["kind"] for entry in listeners].count("tcp") == 1
    again = client.post("/v1/ui/open", json={}).json()
    assert again["url"] == opened["url"]
    assert again["login_url"] != opened["login_url"]  # a fresh code each time
    port = int(origin(opened).rsplit(":", 1)[1])
    other = client.post("/v1/ui/open", json={"port": port + 1 if port < 65535 else port - 1})
    assert other.status_code == 409
    assert other.json()["error"]["code"] == "listen_failed"
    assert opened["listener"]["address"] in other.json()["error"]["message"]
    # The daemon remembers the port for its next start.
    assert (daemon.home / "ui-port").read_text().strip() == str(port)


def test_open_rejects_a_bad_port(client: httpx.Client) -> None:
    answer = client.post("/v1/ui/open", json={"port": 70000})
    assert answer.status_code == 422
    assert client.post(
        "/v1/ui/open", content=b"{not json", headers={"Content-Type": "application/json"}
    ).status_code in (400, 422)


def test_the_sign_in_link_sets_an_httponly_strict_cookie_once(
    client: httpx.Client, opened: dict[str, Any]
) -> None:
    link = client.post("/v1/ui/open", json={}).json()["login_url"]
    with httpx.Client(base_url=origin(opened), timeout=30) as browser:
        answer = browser.get(link)
        assert answer.status_code == 303
        assert answer.headers["location"] == "/ui/"
        cookie = answer.headers["set-cookie"]
        port = origin(opened).rsplit(":", 1)[1]
        assert cookie.startswith(f"heron_session_{port}=")
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
        max_age = int(re.search(r"Max-Age=(\d+)", cookie).group(1))  # type: ignore[union-attr]
        assert SESSION_SECONDS - 60 < max_age <= SESSION_SECONDS
        assert answer.headers["cache-control"] == "no-store"
        assert answer.headers["referrer-policy"] == "no-referrer"
        session = browser.get("/ui/session").json()
        assert set(session) == {"csrf_token", "version", "expires_at"}
        # The session reads the API like a bearer token would.
        assert browser.get("/v1/status").json()["listeners"]
        # The page carries no credential: not in the HTML, not in what the session says.
        assert session["csrf_token"] not in browser.get("/ui/").text
        # Used once: the link is dead now, also for another browser.
    with httpx.Client(base_url=origin(opened), timeout=30) as other:
        used = other.get(link)
        assert used.status_code == 401
        assert used.headers["content-type"].startswith("text/html")
        assert "heron ui" in used.text
        assert "set-cookie" not in used.headers
        assert other.get(link.rsplit("=", 1)[0] + "=" + "x" * 500).status_code == 422
        assert other.get("/ui/login").status_code == 401


def test_without_a_session_the_api_and_the_page_are_refused(opened: dict[str, Any]) -> None:
    with httpx.Client(base_url=origin(opened), timeout=30) as stranger:
        api = stranger.get("/v1/nodes")
        assert api.status_code == 401
        assert api.json()["error"]["code"] == "unauthorized"
        shown = stranger.get("/ui/")
        assert shown.status_code == 401 and "Not signed in" in shown.text
        stranger.cookies.set("heron_session_1", "guess")  # another port's name
        assert stranger.get("/v1/nodes").status_code == 401
        port = origin(opened).rsplit(":", 1)[1]
        stranger.cookies.set(f"heron_session_{port}", "guess")
        wrong = stranger.get("/v1/status")
        assert wrong.status_code == 401
        assert "heron ui" in wrong.json()["error"]["message"]
        stranger.cookies.clear()
        bearer = stranger.get("/v1/status", headers={"Authorization": "Bearer anything"})
        assert bearer.status_code == 401
        assert "heron ui" in bearer.json()["error"]["message"]  # this daemon has no token


def test_a_change_needs_the_csrf_token_and_the_daemons_own_origin(
    client: httpx.Client, opened: dict[str, Any], tmp_path: Any
) -> None:
    browser, csrf = sign_in(client)
    model = write_script(tmp_path, "csrf", ["Made from the page."])
    body = {"prompt": "Hi.", "model": model}
    before = len(client.get("/v1/nodes").json())
    with closing(browser):
        missing = browser.post("/v1/nodes", json=body)
        assert missing.status_code == 403
        assert missing.json()["error"]["code"] == "csrf_refused"
        wrong = browser.post("/v1/nodes", json=body, headers={"X-Heron-CSRF": "nope"})
        assert wrong.status_code == 403
        elsewhere = browser.post(
            "/v1/nodes",
            json=body,
            headers={"X-Heron-CSRF": csrf, "Origin": "http://evil.example"},
        )
        assert elsewhere.status_code == 403
        assert "evil.example" in elsewhere.json()["error"]["message"]
        assert len(client.get("/v1/nodes").json()) == before  # none was made
        made = browser.post(
            "/v1/nodes", json=body, headers={"X-Heron-CSRF": csrf, "Origin": origin(opened)}
        )
        assert made.status_code == 201, made.text
        wait_settled(client, made.json()["node_id"])
        # A session cannot mint sign-in links for other browsers.
        minted = browser.post("/v1/ui/open", json={}, headers={"X-Heron-CSRF": csrf})
        assert minted.status_code == 403


def test_sign_out_ends_the_session_and_its_cookie_is_worth_nothing(client: httpx.Client) -> None:
    browser, csrf = sign_in(client)
    with closing(browser):
        kept = dict(browser.cookies.items())
        refused = browser.post("/ui/logout")
        assert refused.status_code == 403  # a change: the CSRF token is needed here too
        assert browser.get("/v1/status").status_code == 200
        out = browser.post("/ui/logout", headers={"X-Heron-CSRF": csrf})
        assert out.status_code == 204
        assert "Max-Age=0" in out.headers["set-cookie"]
    # The cookie, had someone kept it, is refused now: by the API and by the page.
    with httpx.Client(base_url=str(browser.base_url), cookies=kept, timeout=30) as replay:
        assert replay.get("/v1/status").status_code == 401
        assert replay.get("/ui/session").status_code == 401
        assert replay.get("/ui/").status_code == 401


def test_the_pages_files_are_served_with_their_types_and_never_from_outside(
    client: httpx.Client,
) -> None:
    browser, _ = sign_in(client)
    with closing(browser):
        index = browser.get("/ui/")
        assert index.status_code == 200
        assert index.headers["content-type"].startswith("text/html")
        policy = index.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
        assert index.headers["x-content-type-options"] == "nosniff"
        # Every module and stylesheet the page names is served from the wheel.
        for asset in re.findall(r'(?:src|href)="\./([^"]+)"', index.text):
            got = browser.get(f"/ui/{asset}")
            assert got.status_code == 200, asset
        script = browser.get("/ui/app.js")
        assert script.headers["content-type"].startswith("text/javascript")
        assert "http://" not in script.text and "https://" not in script.text  # no CDN
        assert browser.get("/ui").status_code == 308
        assert browser.get("/ui/no-such-file.js").status_code == 404
        for escape in ("%2e%2e/_routes.py", "..%2f_sessions.py", "%2e%2e%2f%2e%2e%2f_config.py"):
            answer = browser.get(f"/ui/{escape}")
            assert answer.status_code == 404, escape
            assert "Sessions" not in answer.text and "def " not in answer.text


def _raw_get(port: int, path: str, cookie: str) -> bytes:
    """A GET with the path exactly as written (httpx would normalise ``..``)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        request = (
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: {cookie}\r\n"
            "Connection: close\r\n\r\n"
        )
        raw.sendall(request.encode())
        received = b""
        while chunk := raw.recv(1 << 16):
            received += chunk
    return received


def test_a_raw_dot_dot_path_never_reads_a_file_outside_the_page(client: httpx.Client) -> None:
    browser, _ = sign_in(client)
    with closing(browser):
        cookie = "; ".join(f"{name}={value}" for name, value in browser.cookies.items())
        port = int(str(browser.base_url).rstrip("/").rsplit(":", 1)[1])
    assert _raw_get(port, "/ui/app.js", cookie).startswith(b"HTTP/1.1 200")
    for path in (
        "/ui/../ui/_routes.py",
        "/ui/../../runtime/_config.py",
        "/ui/static/../_routes.py",
    ):
        answer = _raw_get(port, path, cookie)
        assert answer.startswith(b"HTTP/1.1 404"), (path, answer[:200])
        assert b"def " not in answer and b"import" not in answer


# -- the sessions themselves, on their own clock ----------------------------------


class Clock:
    """A clock a test moves by hand."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_a_code_expires_and_a_session_lasts_a_week() -> None:
    clock = Clock()
    sessions = Sessions(clock)
    late, _ = sessions.mint_code()
    clock.now += CODE_SECONDS + 1
    assert sessions.sign_in(late) is None
    code, expires_at = sessions.mint_code()
    assert expires_at == clock.now + CODE_SECONDS
    session = sessions.sign_in(code)
    assert session is not None
    assert sessions.csrf_token(session.secret) == session.csrf_token
    clock.now += SESSION_SECONDS - 1
    assert sessions.session(session.secret) is not None
    clock.now += 2
    assert sessions.session(session.secret) is None
    assert sessions.csrf_token(session.secret) is None
    assert len(sessions) == 0


def test_only_digests_are_kept_and_the_oldest_session_gives_way() -> None:
    sessions = Sessions()
    made = []
    for _ in range(MAX_SESSIONS + 1):
        code, _ = sessions.mint_code()
        signed = sessions.sign_in(code)
        assert signed is not None
        made.append(signed)
    assert len(sessions) == MAX_SESSIONS
    assert sessions.session(made[0].secret) is None
    assert sessions.session(made[-1].secret) is not None
    held = repr(vars(sessions))
    assert made[-1].secret not in held and code not in held


def test_a_daemon_with_a_bearer_token_serves_the_page_on_its_own_listener(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    home = tmp_path_factory.mktemp("heron-ui-bearer")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {"HERON_PROVIDER": write_script(home, "d", ["Hi."]), "HERON_TOKEN": "sekrit-token"}
    process = Daemon(home, env).start("--listen", f"127.0.0.1:{port}")
    try:
        with process.client() as client:
            opened = client.post("/v1/ui/open", json={}).json()
            assert opened["url"] == f"http://127.0.0.1:{port}/ui/"
            assert opened["listener"]["auth"] == "bearer"
            tcp = [
                entry
                for entry in client.get("/v1/status").json()["listeners"]
                if entry["kind"] == "tcp"
            ]
            assert len(tcp) == 1  # no second listener
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as browser:
                assert browser.get(opened["login_url"]).status_code == 303
                assert browser.get("/v1/status").status_code == 200
                assert "sekrit-token" not in browser.get("/ui/").text
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as tool:
                headers = {"Authorization": "Bearer sekrit-token"}
                assert tool.get("/v1/status", headers=headers).status_code == 200
                # Bearer clients need no CSRF token: no browser sends that header itself.
                made = tool.post("/v1/ui/open", json={}, headers=headers)
                assert made.status_code == 200
    finally:
        process.stop()
