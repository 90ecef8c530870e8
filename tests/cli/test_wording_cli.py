"""What the CLI says, read as a new user reads it."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from tests.support.cli import created, heron
from tests.support.daemon import Daemon
from typer.testing import CliRunner

from heron.cli import app

pytestmark = pytest.mark.usefixtures("on_daemon")

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def _submit(result: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": "submit-result", "arguments": {"result": result}}]}


def test_a_failed_submit_result_shows_why(scripts: Any) -> None:
    model = scripts("submit", [_submit({"n": "many"}), _submit({"n": 3})])
    done = heron(
        "nodes", "create", "Count", "--model", model, "--schema", json.dumps(SCHEMA), "--watch"
    )
    assert done.code == 0, done
    lines = done.out.splitlines()
    failed = lines.index("  ✗ submit-result · submitting the result failed")
    reason = "\n".join(lines[failed + 1 : failed + 4])
    assert "does not match the schema" in reason and "many" in reason, done.out
    assert "  ✓ submit-result · submitting the result" in lines
    assert "object with" not in done.out


def test_files_write_to_proc_says_why_and_list_of_a_file_names_a_command(tmp_path: Path) -> None:
    refused = heron("files", "write", "/proc/version", "--content", "x")
    assert refused.code == 1
    assert "file_not_found" not in refused.err
    assert "permission_denied: /proc/version cannot be written" in " ".join(refused.err.split())
    note = tmp_path / "note.txt"
    note.write_text("hi\n")
    listed = heron("files", "list", str(note))
    assert listed.code == 1
    assert f"heron files read {note}" in " ".join(listed.err.split())


def test_files_read_of_a_binary_file_never_writes_its_bytes_to_a_terminal(
    daemon: Daemon, tmp_path: Path
) -> None:
    blob = tmp_path / "blob.bin"
    blob.write_bytes(bytes(range(256)) * 4)
    env = {**os.environ, "HERON_HOME": str(daemon.home)}
    for variable in ("HERON_BASE_URL", "HERON_SOCKET", "HERON_TOKEN"):
        env.pop(variable, None)
    main, secondary = pty.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "heron", "files", "read", str(blob)],
            env=env, stdout=secondary, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
            timeout=60, check=False,
        )  # fmt: skip
        os.close(secondary)
        shown = b""
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # EIO: the terminal's other end is closed
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(main)
    assert done.returncode == 1
    said = " ".join(done.stderr.decode().split())
    assert "holds binary data (1024 bytes)" in said and "> FILE" in said, said
    assert bytes(range(1, 32)) not in shown
    # To a pipe the bytes go out as they are.
    piped = subprocess.run(
        [sys.executable, "-m", "heron", "files", "read", str(blob)],
        env=env, capture_output=True, timeout=60, check=False,
    )  # fmt: skip
    assert piped.returncode == 0 and piped.stdout == blob.read_bytes()


def _commands(group: Any, path: list[str]) -> list[list[str]]:
    found = [path]
    for name, command in getattr(group, "commands", {}).items():
        found += _commands(command, [*path, name])
    return found


def test_help_names_values_in_words_and_flags_take_none() -> None:
    root = typer.main.get_command(app)
    seen = 0
    for path in _commands(root, []):
        wide = {"COLUMNS": "120"}
        result = CliRunner().invoke(app, [*path, "--help"], prog_name="heron", env=wide)
        assert result.exit_code == 0, (path, result.output)
        for label in ("<bool>", "<str>", "<int>", "<path>", "<list["):
            assert label not in result.output, (path, result.output)
        seen += 1
    assert seen > 40
    create = CliRunner().invoke(app, ["nodes", "create", "--help"], env={"COLUMNS": "120"})
    assert "--deadline          DURATION" in create.output
    assert "PROMPT" in create.output and "{prompt}" not in create.output


def test_interrupt_and_cancel_say_the_status_once(scripts: Any) -> None:
    node_id = created(heron("nodes", "create", "Wait", "--model", scripts("w", ["x"]),
                            "--no-kickoff"))  # fmt: skip
    done = heron("nodes", "cancel", node_id)
    assert done.out == f"node {node_id} cancelled\n"
