"""``heron models ...`` against a real daemon, found through ``HERON_HOME`` as a shell would."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.support.cli import Done
from tests.support.daemon import Daemon, write_script
from tests.support.models import keyless_shared_daemon
from typer.testing import CliRunner

from heron.cli import app

__all__ = ["keyless_shared_daemon"]  # the module's daemon: no provider key in its environment

# The CLI reaches the keyless daemon through HERON_HOME.
pytestmark = pytest.mark.usefixtures("on_daemon")

KEY = "sk-cli-test-abcdef0123456789"


def heron(*args: str, input: str | None = None) -> Done:
    result = CliRunner().invoke(app, list(args), input=input, prog_name="heron")
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert KEY not in result.stdout and KEY not in result.stderr
    return Done(result.exit_code, result.stdout, result.stderr)


def _states() -> dict[str, dict[str, object]]:
    done = heron("models", "credentials", "list", "--json")
    assert done.code == 0, done
    return {item["provider"]: item for item in json.loads(done.out)}


def test_install_from_stdin_list_and_remove(daemon: Daemon) -> None:
    listed = heron("models", "credentials", "list")
    assert listed.code == 0 and "openai" in listed.out and "none" in listed.out

    done = heron(
        "models",
        "credentials",
        "install",
        "openai",
        "--base-url",
        "https://proxy.example/v1",
        input=f"{KEY}\n",
    )
    assert done.code == 0, done
    assert "installed the API key of openai (requests go to https://proxy.example/v1)" in done.out
    assert _states()["openai"]["source"] == "installed"
    assert KEY in (daemon.home / "credentials.json").read_text()
    table = heron("models", "credentials", "list")
    assert "installed" in table.out and "https://proxy.example/v1" in table.out

    removed = heron("models", "credentials", "remove", "openai")
    assert removed.code == 0 and "openai has no key now" in removed.out
    again = heron("models", "credentials", "remove", "openai")
    assert again.code == 1 and "credential_not_found" in again.err
    assert _states()["openai"]["installed"] is False


def test_install_from_an_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_ANTHROPIC_KEY", KEY)
    done = heron("models", "credentials", "install", "anthropic", "--from-env", "MY_ANTHROPIC_KEY")
    assert done.code == 0, done
    state = json.loads(heron("models", "credentials", "remove", "anthropic", "--json").out)
    assert state["provider"] == "anthropic" and state["installed"] is False


def test_install_refusals() -> None:
    bad = heron("models", "credentials", "install", "ollama", input=KEY)
    assert bad.code == 2 and "none of openai, anthropic, deepseek" in bad.err
    empty = heron("models", "credentials", "install", "openai", input="\n")
    assert empty.code == 1 and "no API key was given on stdin" in empty.err
    two = heron("models", "credentials", "install", "openai", input=f"{KEY}\n{KEY}\n")
    assert two.code == 1 and "more than one line" in two.err
    spaced = heron("models", "credentials", "install", "openai", input="sk key with spaces\n")
    assert spaced.code == 1 and "invalid_api_key" in spaced.err and "sk key" not in spaced.err
    unset = heron("models", "credentials", "install", "openai", "--from-env", "NO_SUCH_VAR_X")
    assert unset.code == 1 and "NO_SUCH_VAR_X" in unset.err
    assert _states()["openai"]["installed"] is False


def test_config_show_set_and_clear(tmp_path: Path) -> None:
    shown = heron("models", "config", "show")
    assert shown.code == 0 and "(HERON_PROVIDER)" in shown.out and "ready:" in shown.out
    spec = write_script(tmp_path, "cli-default", ["From the CLI's default."])
    done = heron("models", "config", "set", spec)
    assert done.code == 0, done
    assert f"default model: {spec} (set with heron models config set)" in done.out
    hosted = heron("models", "config", "set", "deepseek:chat")
    assert hosted.code == 0 and "not ready:" in hosted.out and "DEEPSEEK_API_KEY" in hosted.out
    as_json = json.loads(heron("models", "config", "show", "--json").out)
    assert as_json["default_model"] == "deepseek:chat" and as_json["ready"] is False
    bad = heron("models", "config", "set", "nonsense:x")
    assert bad.code == 1 and "invalid_model" in bad.err
    assert heron("models", "config", "set").code == 2
    assert heron("models", "config", "set", spec, "--clear").code == 2
    cleared = heron("models", "config", "set", "--clear")
    assert cleared.code == 0 and "(HERON_PROVIDER)" in cleared.out


@pytest.mark.slow
def test_install_asks_at_a_hidden_prompt_on_a_terminal(daemon: Daemon) -> None:
    """On a terminal the key is typed at a prompt that does not echo it."""
    master, slave = os.openpty()
    # A new session opening the terminal makes it its controlling one (what getpass reads).
    take_terminal = (
        "import os, sys; os.close(os.open(sys.argv[1], os.O_RDWR)); "
        "os.execv(sys.executable, [sys.executable, '-m', 'heron', *sys.argv[2:]])"
    )
    args = ["models", "credentials", "install", "deepseek"]
    child = subprocess.Popen(
        [sys.executable, "-c", take_terminal, os.ttyname(slave), *args],
        env={**os.environ, "HERON_HOME": str(daemon.home)},
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
    )
    os.close(slave)
    seen = b""
    try:
        seen += _read_until(master, b"API key for deepseek: ")
        os.write(master, f"{KEY}\n".encode())
        seen += _read_until(master, b"next turn")
        assert child.wait(timeout=60) == 0, seen
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        os.close(master)
    assert KEY.encode() not in seen  # not echoed
    assert _states()["deepseek"]["source"] == "installed"
    assert heron("models", "credentials", "remove", "deepseek").code == 0


def _read_until(fd: int, wanted: bytes, timeout: float = 60) -> bytes:
    """What the terminal shows up to and including ``wanted`` (polled with a deadline)."""
    seen = b""
    deadline = time.monotonic() + timeout
    while wanted not in seen:
        left = deadline - time.monotonic()
        assert left > 0, f"never saw {wanted!r} in {seen!r}"
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the child closed the terminal
                chunk = b""
            assert chunk, f"the terminal closed before {wanted!r}: {seen!r}"
            seen += chunk
    return seen
