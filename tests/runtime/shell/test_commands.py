"""``POST /v1/bash`` on a real daemon: exits as values, timeouts, caps, and no process
outliving its request."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.daemon import Daemon, write_script
from tests.support.files import error
from tests.support.polling import eventually
from tests.support.shell import alive, sleeper, wait_sleeping

MIB = 1024 * 1024


def bash(client: httpx.Client, command: str, cwd: Path | str, **body: Any) -> httpx.Response:
    return client.post("/v1/bash", json={"command": command, "cwd": str(cwd), **body})


def ok(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def pid_in(file: Path) -> int | None:
    """The pid a command wrote to ``file`` (ending it with a dot), or None before it has."""
    text = file.read_text().strip() if file.exists() else ""
    return int(text[:-1]) if text.endswith(".") else None


def test_a_non_zero_exit_is_an_answer(client: httpx.Client, tmp_path: Path) -> None:
    body = ok(bash(client, "echo out; echo err >&2; exit 3", tmp_path))
    assert body["exit_code"] == 3 and body["signal"] is None
    assert body["stdout"] == "out\n" and body["stderr"] == "err\n"
    assert body["timed_out"] is False and body["truncated"] is False
    assert body["stdout_truncated"] is False and body["stderr_truncated"] is False
    assert body["duration_ms"] >= 0


def test_cwd_env_and_stdin(client: httpx.Client, tmp_path: Path) -> None:
    body = ok(
        bash(
            client,
            'pwd; echo "$GREETING"; cat',
            tmp_path,
            env={"GREETING": "héllo"},
            stdin="from stdin\n",
        )
    )
    assert body["stdout"] == f"{tmp_path}\nhéllo\nfrom stdin\n"
    assert body["exit_code"] == 0
    # Without stdin, a reader gets end of file at once.
    assert ok(bash(client, "cat; echo done", tmp_path))["stdout"] == "done\n"


def test_a_signal_is_reported(client: httpx.Client, tmp_path: Path) -> None:
    body = ok(bash(client, "kill -TERM $$", tmp_path))
    assert body["exit_code"] is None and body["signal"] == "SIGTERM"


def test_output_is_capped_per_stream(client: httpx.Client, tmp_path: Path) -> None:
    command = "head -c 3000000 /dev/zero | tr '\\0' a; echo tail >&2"
    body = ok(bash(client, command, tmp_path))
    assert len(body["stdout"]) == MIB and set(body["stdout"]) == {"a"}
    assert body["stdout_truncated"] is True and body["truncated"] is True
    assert body["stderr"] == "tail\n" and body["stderr_truncated"] is False
    assert body["exit_code"] == 0  # the rest was read (drained), so the writer never blocked


def test_bytes_that_are_not_utf8_become_replacement_characters(
    client: httpx.Client, tmp_path: Path
) -> None:
    body = ok(bash(client, "printf 'caf\\xe9\\n'", tmp_path))
    assert body["stdout"] == "caf\ufffd\n"


def test_a_timeout_kills_the_command_and_its_children(client: httpx.Client, tmp_path: Path) -> None:
    child = sleeper()
    started = time.monotonic()
    body = ok(bash(client, f"{child} & echo $!. > child.pid; wait", tmp_path, timeout=2))
    assert time.monotonic() - started < 10
    assert body["timed_out"] is True
    assert body["exit_code"] is None and body["signal"] in ("SIGTERM", "SIGKILL")
    eventually(lambda: pid_in(tmp_path / "child.pid"), timeout=15, interval=0.02)
    with pytest.raises(AssertionError, match=r"a process running .* did not hold"):
        wait_sleeping(child, 0.2)


def test_what_a_command_leaves_running_is_stopped_when_it_exits(
    client: httpx.Client, tmp_path: Path
) -> None:
    left = sleeper()
    body = ok(bash(client, f"{left} >/dev/null 2>&1 & echo $!. > left.pid", tmp_path))
    assert body["exit_code"] == 0 and body["timed_out"] is False
    eventually(lambda: pid_in(tmp_path / "left.pid"), timeout=15, interval=0.02)

    with pytest.raises(AssertionError, match=r"a process running .* did not hold"):
        wait_sleeping(left, 0.2)


@pytest.mark.parametrize(
    ("cwd", "reason"),
    [
        ("relative/dir", "relative"),
        ("/tmp/../tmp", "'..'"),
        ("/no/such/directory", "does not exist"),
    ],
)
def test_bad_cwd(client: httpx.Client, cwd: str, reason: str) -> None:
    body = error(bash(client, "true", cwd), 422, "invalid_cwd")
    assert reason in body["message"]


def test_cwd_that_is_a_file(client: httpx.Client, tmp_path: Path) -> None:
    file = tmp_path / "f"
    file.write_text("")
    assert "not a directory" in error(bash(client, "true", file), 422, "invalid_cwd")["message"]


def test_bad_requests(client: httpx.Client, tmp_path: Path) -> None:
    error(bash(client, "true", tmp_path, timeout=3601), 422, "invalid_request")
    error(bash(client, "true", tmp_path, timeout=0), 422, "invalid_request")
    error(bash(client, "", tmp_path), 422, "invalid_request")
    error(client.post("/v1/bash", json={"command": "true"}), 422, "invalid_request")
    error(bash(client, "echo a\0b", tmp_path), 422, "invalid_command")
    error(bash(client, "true", tmp_path, env={"A=B": "x"}), 422, "invalid_env")
    error(bash(client, "true", tmp_path, env={"A": "x\0"}), 422, "invalid_env")


def test_a_client_disconnect_kills_the_command(daemon: Daemon, tmp_path: Path) -> None:
    orphan = sleeper()
    body = json.dumps({"command": f"{orphan} & wait", "cwd": str(tmp_path)}).encode()
    head = (
        "POST /v1/bash HTTP/1.1\r\nHost: heron\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as raw:
        raw.connect(str(daemon.socket))
        raw.sendall(head + body)
        pid = wait_sleeping(orphan)
        assert alive(pid)
    # The connection is closed, the request unanswered: the command goes with it.
    eventually(lambda: not alive(pid), timeout=15, interval=0.02, what=f"process {pid} exiting")


@pytest.mark.slow
def test_a_stopping_daemon_kills_running_commands(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    own = Daemon(home, {"HERON_PROVIDER": write_script(home, "s", ["ok"])}).start()
    running = sleeper()
    answers: list[httpx.Response | BaseException] = []
    try:
        with own.client(timeout=60) as client:

            def call() -> None:
                try:
                    answers.append(bash(client, f"{running} & wait", home))
                except httpx.HTTPError as exc:
                    answers.append(exc)

            worker = threading.Thread(target=call)
            worker.start()
            pid = wait_sleeping(running)
            started = time.monotonic()
            own.stop()
            assert time.monotonic() - started < 10
            worker.join(timeout=30)
    finally:
        own.stop()
    eventually(lambda: not alive(pid), timeout=15, interval=0.02, what=f"process {pid} exiting")
    assert len(answers) == 1
    answer = answers[0]
    assert isinstance(answer, httpx.Response), answer
    error(answer, 503, "daemon_stopping")


@pytest.mark.slow
def test_commands_do_not_inherit_the_daemons_secrets(tmp_path: Path) -> None:
    """The TCP token and provider keys stay in the daemon; the rest of its environment
    passes, and a request may hand any variable over on purpose."""
    home = tmp_path / "home"
    home.mkdir()
    secrets = {"HERON_TOKEN": "owner-token-secret", "ANTHROPIC_API_KEY": "sk-ant-secret"}
    env = {"HERON_PROVIDER": write_script(home, "s", ["ok"]), "HERON_KEPT": "kept", **secrets}
    own = Daemon(home, env).start()
    try:
        with own.client() as client:
            shown = ok(bash(client, "env", home))["stdout"]
            given = ok(bash(client, "env", home, env={"ANTHROPIC_API_KEY": "mine"}))["stdout"]
    finally:
        own.stop()
    assert "HERON_KEPT=kept\n" in shown
    for name, value in secrets.items():
        assert value not in shown and f"{name}=" not in shown
    assert "ANTHROPIC_API_KEY=mine\n" in given and "owner-token-secret" not in given


def test_a_new_session_does_not_outlive_its_request(client: httpx.Client, tmp_path: Path) -> None:
    """``setsid`` leaves the command's process group; its PID namespace it cannot leave."""
    status = client.get("/v1/status").json()["sandbox"]
    assert status["host_commands"] == "pid_namespace", status
    escaped = sleeper()
    body = ok(bash(client, f"setsid {escaped} >/dev/null 2>&1 & echo ok", tmp_path))
    assert body["stdout"] == "ok\n" and body["exit_code"] == 0
    with pytest.raises(AssertionError, match=r"a process running .* did not hold"):
        wait_sleeping(escaped, 0.5)


def test_a_signal_inside_the_namespace_is_still_a_signal(
    client: httpx.Client, tmp_path: Path
) -> None:
    body = ok(bash(client, "kill -KILL $$", tmp_path))
    assert body["exit_code"] is None and body["signal"] == "SIGKILL"
