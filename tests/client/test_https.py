"""An ``https`` base URL: both clients verify the daemon's certificate (trusting the CA
in ``SSL_CERT_FILE``, read at construction), refuse one they cannot verify with an
``APIConnectionError``, and can still cancel a request hanging inside TLS."""

from __future__ import annotations

import asyncio
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme

from heron.client import (
    APIConnectionError,
    APIUserAbortError,
    AsyncHeron,
    Cancel,
    Heron,
    RequestOptions,
)

from .flaky import FlakyServer, Reply


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    """A throwaway certificate authority."""
    return trustme.CA()


@pytest.fixture
def server(ca: trustme.CA) -> Iterator[FlakyServer]:
    """The failing-on-purpose server behind TLS, its certificate issued by ``ca``."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(context)
    with FlakyServer(tls=context) as s:
        yield s


@pytest.fixture
def trusted(ca: trustme.CA, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Clients constructed from now on trust ``ca`` (httpx reads ``SSL_CERT_FILE``)."""
    path = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    monkeypatch.setenv("SSL_CERT_FILE", str(path))
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    """Which client a test drives."""
    return str(request.param)


async def call(mode: str, url: str, path: str, **kwargs: Any) -> Any:
    """``GET path`` on a fresh client of ``mode`` (the sync one in a thread)."""
    if mode == "sync":
        with Heron(base_url=url, token="t0k") as client:
            return await asyncio.to_thread(client.request, "GET", path, **kwargs)
    async with AsyncHeron(base_url=url, token="t0k") as aclient:
        return await aclient.request("GET", path, **kwargs)


@pytest.mark.usefixtures("trusted")
async def test_a_trusted_https_daemon_answers(mode: str, server: FlakyServer) -> None:
    server.script("/v1/status", Reply(body={"ok": True}))
    assert server.url.startswith("https://")
    assert await call(mode, server.url, "/v1/status") == {"ok": True}
    ((method, target, headers, _),) = server.requests
    assert (method, target, headers["authorization"]) == ("GET", "/v1/status", "Bearer t0k")


@pytest.mark.usefixtures("trusted")
async def test_an_upper_case_scheme_is_https_too(mode: str, server: FlakyServer) -> None:
    # The scheme is case-insensitive: ``HTTPS://`` gets the same verified TLS as ``https://``.
    server.script("/v1/status", Reply(body={"ok": True}))
    url = "HTTPS://" + server.url.removeprefix("https://")
    assert await call(mode, url, "/v1/status") == {"ok": True}


async def test_an_unverifiable_certificate_is_a_connection_error(
    mode: str, server: FlakyServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    server.script("/x", Reply(body={"ok": True}))
    with pytest.raises(APIConnectionError, match="CERTIFICATE_VERIFY_FAILED"):
        await call(mode, server.url, "/x", options=RequestOptions(max_retries=0))
    assert server.requests == []  # nothing was sent to a server we could not verify


@pytest.mark.usefixtures("trusted")
async def test_cancel_aborts_a_request_hanging_inside_tls(mode: str, server: FlakyServer) -> None:
    server.script("/hang", "hang")
    cancel = Cancel()
    threading.Thread(target=lambda: server.arrived.wait(10) and cancel.cancel()).start()
    with pytest.raises(APIUserAbortError):
        await call(mode, server.url, "/hang", options=RequestOptions(cancel=cancel))
    assert await asyncio.to_thread(server.hung_up.wait, 10)  # the connection was let go
