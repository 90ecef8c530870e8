"""Listing tables on an 80-column terminal and in a pipe: ids whole, the rest wraps or goes."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from tests.support.cli import asking, heron, settle

from heron.cli._table import Column, print_table
from heron.client import Heron

pytestmark = pytest.mark.usefixtures("on_daemon")

LONG_ID = "cli-table-" + "a" * 30
LONG_PROMPT = "Read pyproject.toml here and report the package's name and its version, please"


def test_nodes_list_keeps_ids_whole_at_80_columns(
    client: Heron, scripts: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = scripts("t", ["Done."])
    parent = client.nodes.create(prompt=LONG_PROMPT, model=model, node_id=LONG_ID, no_kickoff=True)
    child = client.nodes.create(
        prompt="A child with a long prompt that has to wrap somewhere", model=model,
        parent=parent.node_id, node_id=LONG_ID + "-kid", no_kickoff=True,
    )  # fmt: skip
    monkeypatch.setenv("COLUMNS", "80")
    done = heron("nodes", "list")
    assert done.code == 0, done
    lines = done.out.splitlines()
    assert all(len(line.rstrip()) <= 80 for line in lines), done.out
    assert any(line.startswith(f"{child.node_id} ") for line in lines), done.out
    row = next(line for line in lines if line.startswith(f"{parent.node_id} "))
    assert re.search(r" 0$", row), row  # TURNS stays
    for node in client.nodes.list():  # every id whole, at the start of its row
        assert re.search(rf"^{re.escape(node.node_id)} ", done.out, re.M), node.node_id
    # The columns that did not fit are named, and --json has every field.
    assert "left out to fit" in done.out and "--json" in done.out

    monkeypatch.setenv("COLUMNS", "200")
    wide = heron("nodes", "list")
    header = wide.out.splitlines()[0].split()
    assert header == ["ID", "STATUS", "PARENT", "NAME", "/", "PROMPT", "CREATED", "TURNS"]
    kid = next(line for line in wide.out.splitlines() if line.startswith(child.node_id))
    assert f" {parent.node_id} " in kid
    assert "left out" not in wide.out

    roots = heron("nodes", "list", "--root", "--json")
    ids = {node["node_id"] for node in json.loads(roots.out)}
    assert parent.node_id in ids and child.node_id not in ids
    children = heron("nodes", "list", "--children", "--json")
    assert child.node_id in {node["node_id"] for node in json.loads(children.out)}


def test_a_pipe_gets_one_line_per_row(
    client: Heron, scripts: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    node = client.nodes.create(prompt=LONG_PROMPT * 2, model=scripts("p", ["Ok."]))
    settle(client, node.node_id)
    monkeypatch.delenv("COLUMNS")  # CliRunner's output is no terminal: a pipe
    done = heron("nodes", "list")
    row = next(line for line in done.out.splitlines() if line.startswith(node.node_id))
    assert "Read pyproject.toml here" in row and re.search(r" 1$", row), done.out


def test_inbox_list_and_attention_keep_ids_and_reason_at_80_columns(
    client: Heron, scripts: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    node_id, ticket = asking(client, scripts, "ask80", "Shipped.")
    monkeypatch.setenv("COLUMNS", "80")
    listed = heron("inbox", "list", "--node", node_id)
    assert listed.code == 0, listed
    assert re.search(rf"^{re.escape(ticket)} ", listed.out, re.M), listed.out
    assert all(len(line.rstrip()) <= 80 for line in listed.out.splitlines())

    monkeypatch.setenv("COLUMNS", "200")
    wide = heron("inbox", "list", "--node", node_id)
    row = next(line for line in wide.out.splitlines() if line.startswith(ticket))
    assert f" {node_id} " in row, wide.out  # the node's id, whole, not its name
    monkeypatch.setenv("COLUMNS", "80")

    attention = heron("canvas", "attention", "-n", node_id)
    assert attention.code == 0, attention
    header, *rows = attention.out.splitlines()
    assert header.split()[:2] == ["REASON", "NODE"]
    assert any(row.startswith("asking") and f" {node_id} " in f"{row} " for row in rows)
    client.nodes.cancel(node_id)


def _render(width: int, columns: list[Column], rows: list[list[Any]]) -> str:
    console = Console(width=width, file=io.StringIO())
    print_table(columns, rows, console)
    assert isinstance(console.file, io.StringIO)
    return console.file.getvalue()


def test_columns_wrap_before_they_go_and_whole_ones_never_shrink() -> None:
    columns = [
        Column("ID", whole=True),
        Column("NOTE", wrap_min=10),
        Column("EXTRA", drop=1, wrap_min=10),
    ]
    rows: list[list[Any]] = [["x" * 30, "one two three four five six", "more words here"]]
    wrapped = _render(60, columns, rows)
    assert "x" * 30 in wrapped and "EXTRA" in wrapped.splitlines()[0]
    assert "left out" not in wrapped
    narrow = _render(45, columns, rows)
    assert "x" * 30 in narrow and "EXTRA" not in narrow.splitlines()[0]
    assert "(EXTRA left out to fit" in narrow
    assert "x" * 30 in _render(20, columns, rows)  # wider than the terminal, never cut


def test_every_listing_command_has_json(tmp_path: Path) -> None:
    for command in (
        ["nodes", "list"], ["inbox", "list"], ["inbox", "history"], ["canvas", "attention"],
        ["canvas", "roster"], ["crons", "list"], ["memory", "list"],
        ["models", "credentials", "list"], ["files", "list", str(tmp_path)],
    ):  # fmt: skip
        done = heron(*command, "--json")
        assert done.code == 0, (command, done)
        json.loads(done.out)
