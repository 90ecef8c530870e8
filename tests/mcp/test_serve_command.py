"""``python -m heron.mcp serve``: loading tools from specs, and its errors."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from heron import UserError
from heron.mcp import Connection, WebSocketConnection
from heron.mcp._serve import _connection, _parser, load_tools

from .conftest import TOOLS_FILE


def test_load_tools_from_a_file_a_list_a_skill_or_a_factory(tmp_path: Path) -> None:
    assert [t.name for t in load_tools(f"{TOOLS_FILE}:TOOLS")][:2] == ["echo", "add"]
    assert [t.name for t in load_tools(f"{TOOLS_FILE}:echo")] == ["echo"]
    module = tmp_path / "kit.py"
    module.write_text(
        "from heron import Skill, tool\n"
        "@tool\ndef ping() -> str:\n    '''Ping.'''\n    return 'pong'\n"
        "SKILL = Skill(name='s', description='d', instructions='i', tools=[ping])\n"
        "def make():\n    return [ping]\n"
        "NOT_TOOLS = [1]\n"
    )
    assert [t.name for t in load_tools(f"{module}:SKILL")] == ["ping"]
    assert [t.name for t in load_tools(f"{module}:make")] == ["ping"]
    with pytest.raises(UserError, match="is not a Tool or Skill"):
        load_tools(f"{module}:NOT_TOOLS")
    with pytest.raises(UserError, match="has no attribute 'MISSING'"):
        load_tools(f"{module}:MISSING")
    with pytest.raises(UserError, match="no such file"):
        load_tools(f"{tmp_path}/nope.py:X")
    with pytest.raises(UserError, match="must look like module:attribute"):
        load_tools("no-colon")
    with pytest.raises(UserError, match="cannot import no_such_module"):
        load_tools("no_such_module:X")


def test_the_built_in_tools_can_be_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The catalog (a mapping of tools) and the factories that default to the current
    directory load; a factory that needs arguments is a clear error, not a TypeError."""
    monkeypatch.chdir(tmp_path)
    every = {t.name for t in load_tools("heron.tools:catalog")}
    assert {"fs-read-file", "bash-run", "get-current-time"} <= every
    files = load_tools("heron.tools:filesystem_tools")
    assert sorted(t.name for t in files) == sorted(
        ["fs-read-file", "fs-write-file", "fs-list-directory", "fs-edit-file", "fs-glob", "fs-grep"]
    )
    assert {t.name for t in load_tools("heron.tools:bash_tools")} >= {"bash-run", "bash-start"}
    module = tmp_path / "needs.py"
    module.write_text("def make(root):\n    return []\n")
    with pytest.raises(UserError, match=r"make\(\) needs arguments"):
        load_tools(f"{module}:make")


def test_a_tools_file_named_like_a_stdlib_module_does_not_replace_it(tmp_path: Path) -> None:
    import json

    shadow = tmp_path / "json.py"
    shadow.write_text(
        'from heron import tool\n@tool\ndef ping() -> str:\n    "Ping."\n    return "pong"\n'
    )
    assert [t.name for t in load_tools(f"{shadow}:ping")] == ["ping"]
    assert sys.modules["json"] is json


def serve(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "HERON_MCP_TOKEN"}
    return subprocess.run(
        [sys.executable, "-m", "heron.mcp", "serve", *args],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        env=env,
    )


def test_a_bad_spec_exits_with_a_one_line_error() -> None:
    proc = serve("no_such_module:X", "--stdio")
    assert proc.returncode == 2
    assert proc.stderr.startswith("heron.mcp: tool spec 'no_such_module:X': cannot import")
    assert "Traceback" not in proc.stderr


def test_a_websocket_beyond_loopback_needs_a_token() -> None:
    proc = serve(f"{TOOLS_FILE}:TOOLS", "--websocket", "0.0.0.0:0")
    assert proc.returncode == 2
    assert proc.stderr == "heron.mcp: --websocket on 0.0.0.0 needs a token: set HERON_MCP_TOKEN\n"


def connection_of(*argv: str) -> Connection:
    """The connection ``serve tools ARGV`` would listen on."""
    return _connection(_parser().parse_args(["serve", f"{TOOLS_FILE}:TOOLS", *argv]))


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["--websocket", "127.0.0.1:0", "--tls-ca", "ca.pem"], "--tls-ca needs --tls-cert"),
        (["--websocket", "127.0.0.1:0", "--tls-cert", "c.pem"], "go together"),
        (["--websocket", "127.0.0.1:0", "--tls-key", "k.pem"], "go together"),
        (["--websocket", "127.0.0.1:0", "--tls-cert", "c", "--tls-key", "k"], "no such file c"),
        (["--stdio", "--tls-cert", "c.pem"], "--tls-cert only apply to --websocket"),
        (["--unix", "/tmp/x", "--allow-origin", "https://a"], "--allow-origin only apply"),
        (["--websocket", ":80"], "takes HOST:PORT"),
    ],
)
def test_tls_and_origin_flags_are_checked(argv: list[str], error: str) -> None:
    with pytest.raises(UserError, match=re.escape(error)):
        connection_of(*argv)


def test_bracketed_ipv6_loopback_needs_no_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HERON_MCP_TOKEN", raising=False)
    connection = connection_of("--websocket", "[::1]:0", "--allow-origin", "https://app.test")
    assert isinstance(connection, WebSocketConnection)
    assert (connection.host, connection.token) == ("::1", None)
    assert connection.allowed_origins == {"https://app.test"}
    with pytest.raises(UserError, match="on 2001:db8::1 needs a token"):
        connection_of("--websocket", "[2001:db8::1]:0")


def test_a_token_without_tls_beyond_loopback_is_warned_about(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HERON_MCP_TOKEN", "tok")
    connection = connection_of("--websocket", "0.0.0.0:0")
    assert isinstance(connection, WebSocketConnection) and connection.tls is None
    assert "without TLS sends the token in cleartext" in capsys.readouterr().err
