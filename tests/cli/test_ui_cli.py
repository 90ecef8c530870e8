"""``heron ui`` as a user runs it (a real process): it makes the daemon's page reachable,
prints the page and a one-use sign-in link, and opens the browser unless ``--no-open``."""

from __future__ import annotations

import os
import re
import socket
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from tests.support.daemon import Daemon, write_script
from tests.support.polling import eventually

pytestmark = pytest.mark.usefixtures("on_daemon")


def run_ui(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``heron ui ARGS`` in its own process (the fixture's ``HERON_HOME``)."""
    return subprocess.run(
        [sys.executable, "-m", "heron", "ui", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def links(output: str) -> tuple[str, str]:
    """The page's URL and the sign-in link ``heron ui`` printed."""
    page = re.search(r"Heron's page: (http://\S+)", output)
    login = re.search(r"Sign in \(one use, within two minutes\): (http://\S+)", output)
    assert page is not None and login is not None, output
    return page.group(1), login.group(1)


def test_no_open_prints_a_link_that_signs_a_browser_in(daemon: Daemon) -> None:
    done = run_ui("--no-open")
    assert done.returncode == 0, done.stderr
    page, login = links(done.stdout)
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/ui/", page)
    assert login.startswith(page.removesuffix("/ui/") + "/ui/login?code=")
    with daemon.client() as client:
        listeners = client.get("/v1/status").json()["listeners"]
    assert any(f"http://{entry['address']}/ui/" == page for entry in listeners)
    with httpx.Client(timeout=30, follow_redirects=True) as browser:
        assert browser.get(page).status_code == 401  # not yet signed in
        assert browser.get(login).status_code == 200  # (the redirect followed to the page)
        assert browser.get(page).status_code == 200
    # A second run reuses the listener with a fresh link.
    again = run_ui("--no-open")
    assert links(again.stdout)[0] == page
    assert links(again.stdout)[1] != login


def test_it_opens_the_sign_in_link_in_the_browser(tmp_path: Path) -> None:
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\nprintf "%s" "$1" > {opened}\n')
    browser.chmod(browser.stat().st_mode | stat.S_IXUSR)
    done = run_ui(env={"BROWSER": str(browser)})
    assert done.returncode == 0, done.stderr
    _, login = links(done.stdout)
    eventually(opened.exists, what="the browser started")
    assert opened.read_text() == login


def test_a_port_taken_by_the_pages_listener_already_is_a_clear_error() -> None:
    first = run_ui("--no-open")
    page, _ = links(first.stdout)
    port = int(page.rsplit(":", 1)[1].split("/", 1)[0])
    other = port + 1 if port < 65535 else port - 1
    done = run_ui("--no-open", "--port", str(other))
    assert done.returncode != 0
    assert "served on" in done.stderr and str(port) in done.stderr
    assert "Traceback" not in done.stderr


def test_over_tcp_the_link_names_the_host_the_client_reaches(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    home = tmp_path_factory.mktemp("heron-ui-remote")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    token = "ui-remote-token-0123456789"
    env = {"HERON_PROVIDER": write_script(home, "d", ["Hi."]), "HERON_TOKEN": token}
    remote = Daemon(home, env).start("--listen", f"127.0.0.1:{port}")
    try:
        # As a client on another machine would: the daemon's address as it reaches it.
        done = run_ui(
            "--no-open",
            env={"HERON_BASE_URL": f"http://localhost:{port}", "HERON_TOKEN": token},
        )
        assert done.returncode == 0, done.stderr
        page, login = links(done.stdout)
        assert page == f"http://localhost:{port}/ui/"
        assert login.startswith(f"http://localhost:{port}/ui/login?code=")
        with httpx.Client(timeout=30, follow_redirects=True) as browser:
            assert browser.get(login).status_code == 200
            assert browser.get(f"http://localhost:{port}/v1/status").status_code == 200
    finally:
        remote.stop()
