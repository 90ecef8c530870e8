"""Construction: arguments, the environment read once, the stored token, and a daemon
started behind a cold socket — once, however many clients find it cold."""

from __future__ import annotations

import asyncio
import json
import math
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from heron.client import APIConnectionError, AsyncHeron, Heron, RequestOptions
from heron.client._autostart import daemon_running
from heron.runtime._local import stop_daemon

ENV = ("HERON_BASE_URL", "HERON_SOCKET", "HERON_HOME", "HERON_TOKEN")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No ``HERON_*`` address from the machine running the tests."""
    for name in ENV:
        monkeypatch.delenv(name, raising=False)


def test_the_default_is_the_socket_in_heron_home(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HERON_HOME", str(tmp_path))
    with Heron() as client:
        assert client.settings.socket_path == tmp_path / "heron.sock"
        assert client.settings.home == tmp_path and client.settings.auto_start
        assert repr(client) == f"Heron('unix:{tmp_path / 'heron.sock'}')"
    monkeypatch.delenv("HERON_HOME")
    with Heron() as client:
        assert client.settings.socket_path == Path.home() / ".heron" / "heron.sock"


def test_the_environment_is_read_once_at_construction(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HERON_HOME", str(tmp_path / "a"))
    monkeypatch.setenv("HERON_SOCKET", str(tmp_path / "a.sock"))
    monkeypatch.setenv("HERON_TOKEN", "first")
    client = Heron()
    monkeypatch.setenv("HERON_HOME", str(tmp_path / "b"))
    monkeypatch.setenv("HERON_SOCKET", str(tmp_path / "b.sock"))
    monkeypatch.setenv("HERON_TOKEN", "second")
    monkeypatch.setenv("HERON_BASE_URL", "http://127.0.0.1:9")
    settings = client.settings
    assert (settings.home, settings.socket_path, settings.token) == (
        tmp_path / "a",
        tmp_path / "a.sock",
        "first",
    )
    # ... down to the environment an auto-started daemon would inherit.
    assert settings.environ["HERON_TOKEN"] == "first" and "HERON_BASE_URL" not in settings.environ
    client.close()


async def test_heron_base_url_and_token_select_tcp(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERON_BASE_URL", "http://127.0.0.1:7717/")
    monkeypatch.setenv("HERON_TOKEN", "tok")
    monkeypatch.setenv("HERON_SOCKET", "/nowhere.sock")
    async with AsyncHeron() as aclient:
        settings = aclient.settings
        assert (settings.base_url, settings.socket_path, settings.token) == (
            "http://127.0.0.1:7717",
            None,
            "tok",
        )
        assert settings.auto_start is False  # never starts someone else's daemon
        assert "tok" not in repr(settings)


def test_explicit_arguments_beat_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HERON_BASE_URL", "http://127.0.0.1:7717")
    monkeypatch.setenv("HERON_SOCKET", str(tmp_path / "env.sock"))
    with Heron(socket_path=tmp_path / "mine.sock") as client:
        assert client.settings.socket_path == tmp_path / "mine.sock"
    monkeypatch.delenv("HERON_BASE_URL")
    # An explicit home means its own socket, not the environment's.
    with Heron(home=tmp_path / "h") as client:
        assert client.settings.socket_path == tmp_path / "h" / "heron.sock"
    with Heron() as client:
        assert client.settings.socket_path == tmp_path / "env.sock"


def test_base_url_and_socket_path_together_are_a_type_error(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="not both"):
        Heron(base_url="http://127.0.0.1:7717", socket_path=tmp_path / "s")
    with pytest.raises(TypeError, match="not both"):
        AsyncHeron(base_url="http://127.0.0.1:7717", socket_path=tmp_path / "s")


@pytest.mark.parametrize(
    "base_url",
    [
        "127.0.0.1:7717",
        "ftp://host",
        "http://",
        "http://host:notaport",
        "http://host:0",
        "http://host:99999",
        "http://user:pw@host:1",
        "http://host:1/?q=1",
        "",
        42,
    ],
)
def test_a_bad_base_url_is_a_value_error(base_url: Any) -> None:
    with pytest.raises(ValueError, match="base_url"):
        Heron(base_url=base_url)


@pytest.mark.parametrize("timeout", [0, -1, math.nan, math.inf, "5", True, None])
def test_a_bad_timeout_is_a_value_error(timeout: Any) -> None:
    with pytest.raises(ValueError, match="timeout"):
        Heron(base_url="http://127.0.0.1:1", timeout=timeout)
    if timeout is not None:
        with pytest.raises(ValueError, match="timeout"):
            RequestOptions(timeout=timeout)


@pytest.mark.parametrize("retries", [-1, 1.5, True, "2"])
def test_a_bad_max_retries_is_a_value_error(retries: Any) -> None:
    with pytest.raises(ValueError, match="max_retries"):
        AsyncHeron(base_url="http://127.0.0.1:1", max_retries=retries)
    with pytest.raises(ValueError, match="max_retries"):
        RequestOptions(max_retries=retries)


@pytest.mark.parametrize(
    ("headers", "error"),
    [
        ({"x-a": "a\nb"}, ValueError),
        ({"x-a": "a\r\nX-Evil: 1"}, ValueError),
        ({"bad name": "v"}, ValueError),
        ({"": "v"}, ValueError),
        ({"x-a": 5}, TypeError),
        ([("x-a", "v")], TypeError),
    ],
)
def test_bad_headers_are_refused_before_anything_is_sent(
    headers: Any, error: type[Exception]
) -> None:
    # Sent, they failed as a "connection error" and a GET was retried with backoff.
    with pytest.raises(error, match="header"):
        Heron(base_url="http://127.0.0.1:1", headers=headers)
    with pytest.raises(error, match="header"):
        RequestOptions(headers=headers)


def test_good_headers_pass_unchanged() -> None:
    headers = {"X-Trace-Id": "a1\tb2", "accept": "text/event-stream"}
    assert RequestOptions(headers=headers).headers == headers
    with Heron(base_url="http://127.0.0.1:1", headers=headers) as client:
        assert client.settings.headers == headers


def test_a_token_must_be_one_line() -> None:
    with pytest.raises(ValueError, match="token"):
        Heron(base_url="http://127.0.0.1:1", token="a\r\nX-Evil: 1")


@pytest.mark.parametrize(
    ("listen", "base_url", "gets_token"),
    [
        ("127.0.0.1:7717", "http://127.0.0.1:7717", True),
        ("127.0.0.1:7717", "http://localhost:7717/", True),
        ("127.0.0.1:7717", "http://127.0.0.1:7718", False),
        ("127.0.0.1:7717", "https://127.0.0.1:7717", False),
        ("127.0.0.1:7717", "http://127.0.0.1", False),
        ("0.0.0.0:7717", "http://127.0.0.1:7717", True),
        ("0.0.0.0:7717", "http://example.com:7717", False),
        ("0.0.0.0:7717", "http://10.1.2.3:7717", False),
        ("[::]:7717", "http://[::1]:7717", True),
        ("[::1]:7717", "http://[::1]:7717", True),
        ("10.1.2.3:7717", "http://10.1.2.3:7717", True),
        ("10.1.2.3:7717", "http://10.1.2.4:7717", False),
        ("myhost:7717", "http://MYHOST:7717", True),
    ],
)
def test_the_stored_token_goes_only_to_its_own_listener(
    tmp_path: Path, listen: str, base_url: str, gets_token: bool
) -> None:
    (tmp_path / "connect.json").write_text(json.dumps({"listen": listen, "token": "stored"}))
    with Heron(base_url=base_url, home=tmp_path) as client:
        assert client.settings.token == ("stored" if gets_token else None)
    # An explicit token (or HERON_TOKEN) always wins over the stored one.
    with Heron(base_url=base_url, home=tmp_path, token="given") as client:
        assert client.settings.token == "given"


@pytest.mark.parametrize("content", ["not json", "[]", '{"listen": "127.0.0.1:7717"}'])
def test_an_unreadable_connect_file_gives_no_token(tmp_path: Path, content: str) -> None:
    (tmp_path / "connect.json").write_text(content)
    with Heron(base_url="http://127.0.0.1:7717", home=tmp_path) as client:
        assert client.settings.token is None


async def test_auto_start_false_fails_at_once_and_starts_nothing(tmp_path: Path) -> None:
    with Heron(home=tmp_path, auto_start=False) as client, pytest.raises(APIConnectionError) as e:
        await asyncio.to_thread(client.system.health)
    async with AsyncHeron(home=tmp_path, auto_start=False) as aclient:
        with pytest.raises(APIConnectionError) as async_error:
            await aclient.system.health()
    for error in (e.value, async_error.value):
        assert error.code == "daemon_unavailable" and error.status == 0
        assert "heron daemon start" in error.message
    assert not (tmp_path / "heron.pid").exists() and not daemon_running(tmp_path)


@pytest.fixture
def cold_home(tmp_path: Path) -> Iterator[Path]:
    """A home no daemon runs in yet; whatever daemon a test starts there is stopped."""
    home = tmp_path / "home"
    try:
        yield home
    finally:
        stop_daemon(home / "heron.pid")


def started_daemons(home: Path) -> int:
    """How many daemons got as far as listening in ``home`` (from its log)."""
    log = (home / "daemon.log").read_text()
    return log.count("heron daemon listening on unix")


@pytest.mark.slow
def test_two_threads_on_a_cold_socket_start_one_daemon(cold_home: Path) -> None:
    pids: list[int] = []
    errors: list[BaseException] = []

    def use() -> None:
        try:
            with Heron(home=cold_home) as client:
                pids.append(client.system.status().pid)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=use) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert len(pids) == 2 and pids[0] == pids[1]
    assert started_daemons(cold_home) == 1 and daemon_running(cold_home)


PROCESS = (
    "import sys\n"
    "from heron.client import AsyncHeron\n"
    "import asyncio\n"
    "async def main():\n"
    "    async with AsyncHeron(home=sys.argv[1]) as client:\n"
    "        print((await client.system.status()).pid)\n"
    "asyncio.run(main())\n"
)


@pytest.mark.slow
def test_two_processes_on_a_cold_socket_start_one_daemon(cold_home: Path) -> None:
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", PROCESS, str(cold_home)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONWARNINGS": "error"},
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=120) for p in processes]
    for process, (_, err) in zip(processes, outputs, strict=True):
        assert process.returncode == 0, err.decode()
    pids = {int(out) for out, _ in outputs}
    assert len(pids) == 1
    assert started_daemons(cold_home) == 1


@pytest.mark.slow
def test_a_daemon_that_cannot_start_is_daemon_unavailable_with_its_log(
    cold_home: Path,
) -> None:
    (cold_home / "heron.db").mkdir(parents=True)  # SQLite cannot open a directory
    with Heron(home=cold_home) as client, pytest.raises(APIConnectionError) as caught:
        client.request("POST", "/v1/nodes", {"prompt": "never sent"})
    error = caught.value
    assert error.code == "daemon_unavailable"
    assert "did not come up" in error.message
    assert "unable to open database file" in error.message  # the daemon log's tail
    assert not daemon_running(cold_home)
