"""``heron memory ...`` against a real daemon, found through ``HERON_HOME``."""

from __future__ import annotations

import json
import re
import secrets
from pathlib import Path

import pytest
from tests.support.daemon import Daemon
from typer.testing import CliRunner

from heron.cli import app
from heron.client import Heron


@pytest.fixture(autouse=True)
def on_daemon(daemon: Daemon, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for variable in ("HERON_BASE_URL", "HERON_SOCKET", "HERON_TOKEN", "FORCE_COLOR"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HERON_HOME", str(daemon.home))
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def profile(client: Heron) -> str:
    name = f"cli-{secrets.token_hex(4)}"
    client.profiles.ensure(name)
    return name


class Done:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    def __repr__(self) -> str:
        return f"Done({self.code}, out={self.out!r}, err={self.err!r})"


def heron(*args: str, input: str | None = None) -> Done:
    result = CliRunner().invoke(app, ["memory", *args], prog_name="heron", input=input)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Done(result.exit_code, result.stdout, result.stderr)


def made_id(done: Done) -> str:
    match = re.search(r"\((mem_[0-9a-f]+), version \d+\)", done.out)
    assert done.code == 0 and match, done
    return match[1]


def test_create_get_update_move_search_history_delete(profile: str, tmp_path: Path) -> None:
    p = ("--profile", profile)
    entry_id = made_id(
        heron("create", "notes/heron", "--body", "Herons fish.", "--tag", "bird", *p)
    )
    shown = heron("get", entry_id, *p)
    assert shown.code == 0 and "path:    notes/heron" in shown.out and "Herons fish." in shown.out
    assert "tags:    bird" in shown.out

    source = tmp_path / "body.md"
    source.write_text("# Herons\n\nHerons stand in shallow water.\n")
    updated = heron("update", entry_id, "--file", str(source), "--title", "Herons", *p)
    assert updated.code == 0 and "version 2" in updated.out
    piped = heron("update", entry_id, "--file", "-", *p, input="Grey herons hunt fish.\n")
    assert piped.code == 0 and "version 3" in piped.out
    assert heron("move", entry_id, "birds/heron", *p).code == 0

    found = heron("search", "hunting", *p)
    assert found.code == 0 and "birds/heron — Herons" in found.out and "**hunt**" in found.out
    hits = json.loads(heron("search", "heron", "--json", *p).out)
    assert [h["entry"]["entry_id"] for h in hits] == [entry_id]

    listed = heron("list", *p)
    assert listed.code == 0 and "birds/heron" in listed.out and entry_id in listed.out
    resolved = heron("resolve", "--slug", "heron", "--json", *p)
    assert json.loads(resolved.out)["body"] == "Grey herons hunt fish.\n"

    assert heron("delete", entry_id, *p).code == 0
    history = heron("history", entry_id, *p)
    assert history.code == 0
    assert [line.split()[1] for line in history.out.splitlines()[1:]] == [
        "delete",
        "move",
        "update",
        "update",
        "create",
    ]
    assert heron("list", *p).out.strip() == "no memory entries"


def test_list_pages_and_all(profile: str) -> None:
    p = ("--profile", profile)
    for i in range(3):
        assert heron("create", f"n/{i}", "--body", f"body {i}", *p).code == 0
    first = heron("list", "--limit", "2", *p)
    more = re.search(r"more: heron memory list --cursor (\S+)", first.out)
    assert more, first
    rest = json.loads(heron("list", "--limit", "2", "--cursor", more[1], "--json", *p).out)
    assert [e["path"] for e in rest["items"]] == ["n/2"] and rest["next_cursor"] is None
    every = json.loads(heron("list", "--all", "--json", *p).out)
    assert [e["path"] for e in every["items"]] == ["n/0", "n/1", "n/2"]


def test_errors_and_usage(profile: str) -> None:
    p = ("--profile", profile)
    assert heron("create", "a/x", "--body", "1", *p).code == 0
    assert heron("create", "b/x", "--body", "2", *p).code == 0
    taken = heron("create", "a/x", "--body", "again", *p)
    assert taken.code == 1 and "memory_path_exists" in taken.err
    ambiguous = heron("resolve", "--slug", "x", *p)
    assert ambiguous.code == 1 and "ambiguous_slug" in ambiguous.err and "a/x, b/x" in ambiguous.err
    bad = heron("get", "not an id", *p)
    assert bad.code == 1 and "invalid memory id" in bad.err
    assert heron("get", "mem_0000000000000000", *p).code == 1
    no_body = heron("create", "c", *p)
    assert no_body.code == 1 and "--body TEXT or --file FILE" in no_body.err
    assert heron("update", "mem_0000000000000000", *p).code == 1  # nothing to change
    assert heron("resolve", *p).code == 1
    path = heron("create", "a/../b", "--body", "x", *p)
    assert path.code == 1 and "invalid_memory_path" in path.err
    assert heron("list", "--limit", "0").code == 2
