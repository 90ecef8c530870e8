"""``heron files read|write|list`` and ``heron bash`` against a real daemon."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from heron.cli import app

pytestmark = pytest.mark.usefixtures("on_daemon")


class Done:
    """What one ``heron`` invocation did."""

    def __init__(self, code: int, out: bytes, err: str) -> None:
        self.code, self.raw, self.err = code, out, err
        self.out = out.decode("utf-8", "replace")

    def __repr__(self) -> str:
        return f"Done({self.code}, out={self.out!r}, err={self.err!r})"


def heron(*args: str, stdin: bytes | None = None) -> Done:
    result = CliRunner().invoke(app, list(args), prog_name="heron", input=stdin)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # an escaped exception is a bug, not an outcome
    return Done(result.exit_code, result.stdout_bytes, result.stderr)


def test_write_then_read_and_list(tmp_path: Path) -> None:
    target = tmp_path / "dir" / "note.txt"
    done = heron("files", "write", str(target), "--content", "hello\n", "--create-parents")
    assert done.code == 0, done
    assert f"created {target} (6 bytes)" in done.out
    assert target.read_text() == "hello\n"
    read = heron("files", "read", str(target))
    assert read.code == 0 and read.out == "hello\n"
    listing = heron("files", "list", str(tmp_path))
    assert listing.code == 0 and "dir/" in listing.out and "directory" in listing.out
    as_json = json.loads(heron("files", "list", str(tmp_path / "dir"), "--json").out)
    assert [entry["name"] for entry in as_json["entries"]] == ["note.txt"]


def test_write_from_stdin_and_from_a_file_keeps_bytes(tmp_path: Path) -> None:
    data = bytes(range(256))
    target = tmp_path / "blob"
    assert heron("files", "write", str(target), stdin=data).code == 0
    assert target.read_bytes() == data
    source = tmp_path / "source.bin"
    source.write_bytes(data[::-1])
    assert heron("files", "write", str(target), "--from", str(source)).code == 0
    assert target.read_bytes() == data[::-1]
    read = heron("files", "read", str(target))
    assert read.code == 0 and read.raw == data[::-1]
    page = json.loads(heron("files", "read", str(target), "--json").out)
    assert base64.b64decode(page["content"]) == data[::-1]


def test_read_reports_truncation_and_reads_it_all(tmp_path: Path) -> None:
    target = tmp_path / "long.txt"
    target.write_text("0123456789" * 10)
    part = heron("files", "read", str(target), "--limit", "30")
    assert part.code == 0 and part.out == "0123456789" * 3
    assert "--offset 30" in part.err
    whole = heron("files", "read", str(target), "--limit", "30", "--all")
    assert whole.out == "0123456789" * 10 and whole.err == ""


def test_errors_are_one_line_and_exit_1(tmp_path: Path) -> None:
    missing = heron("files", "read", str(tmp_path / "missing"))
    assert missing.code == 1 and "file_not_found" in missing.err
    relative = heron("files", "list", "relative/dir")
    assert relative.code == 1 and "invalid_path" in relative.err and "relative" in relative.err
    target = tmp_path / "kept"
    target.write_text("old")
    refused = heron("files", "write", str(target), "--content", "new", "--no-overwrite")
    assert refused.code == 1 and "file_exists" in refused.err
    assert target.read_text() == "old"
    both = heron("files", "write", str(target), "--content", "a", "--from", str(target))
    assert both.code == 1 and "once" in both.err


def test_bash_passes_output_and_exit_status(tmp_path: Path) -> None:
    done = heron("bash", "--", "echo out; echo err >&2; exit 5")
    assert done.code == 5
    assert done.out == "out\n" and "err\n" in done.err
    where = heron("bash", "--cwd", str(tmp_path / ".."), "--", "pwd")
    assert where.code == 1 and "invalid_cwd" in where.err
    here = heron("bash", "--", "pwd")  # the current directory by default
    assert here.code == 0 and here.out == f"{tmp_path}\n"
    words = heron("bash", "--", "echo", "two", "words")
    assert words.out == "two words\n"


def test_bash_timeout_signal_stdin_and_json(tmp_path: Path) -> None:
    slow = heron("bash", "--timeout", "0.3", "--", "sleep 30")
    assert slow.code == 124 and "timed out" in slow.err
    killed = heron("bash", "--", "kill -KILL $$")
    assert killed.code == 128 + 9
    fed = heron("bash", "--stdin", "--", "tr a-z A-Z", stdin=b"shout\n")
    assert fed.code == 0 and fed.out == "SHOUT\n"
    binary = heron("bash", "--stdin", "--", "cat", stdin=b"caf\xe9\n")
    assert binary.code == 0 and binary.out == "caf\ufffd\n"
    result = json.loads(heron("bash", "--json", "--", "exit 3").out)
    assert result["exit_code"] == 3 and result["timed_out"] is False
