"""The typed rows agree with their tables, and the field lists features share agree."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any, get_type_hints

import pytest
import sqlalchemy as sa

import heron.runtime
from heron.runtime.canvas._store import CARD_COLUMNS, CardRow
from heron.runtime.crons._store import CronRow, FiringRow
from heron.runtime.crons._tables import cron_firings, crons
from heron.runtime.db import events, nodes
from heron.runtime.events._store import EventRow
from heron.runtime.human._store import RequestRow
from heron.runtime.human._tables import human_requests
from heron.runtime.memory._tables import memory_entries, memory_versions
from heron.runtime.memory._types import EntryRow, VersionRow
from heron.runtime.nodes._types import (
    INHERITED,
    LAUNCH_FIELDS,
    RUN_SETUP,
    NodeExtra,
    NodeRow,
    RunPlan,
)
from heron.runtime.profiles._store import ProfileRow
from heron.runtime.profiles._tables import profiles
from heron.runtime.reports._store import ReportRow
from heron.runtime.reports._tables import reports


@pytest.mark.parametrize(
    ("row", "table"),
    [
        (NodeRow, nodes),
        (EventRow, events),
        (CronRow, crons),
        (FiringRow, cron_firings),
        (ProfileRow, profiles),
        (ReportRow, reports),
        (RequestRow, human_requests),
        (EntryRow, memory_entries),
        (VersionRow, memory_versions),
    ],
)
def test_a_row_type_names_every_column_of_its_table(row: Any, table: sa.Table) -> None:
    assert set(row.__annotations__) == {c.name for c in table.c}


def test_a_card_row_names_the_columns_the_canvas_reads() -> None:
    assert set(CardRow.__annotations__) == {c.name for c in CARD_COLUMNS}
    node, card = get_type_hints(NodeRow), get_type_hints(CardRow)
    assert all(card[name] == node[name] for name in card)  # the node row's types


def test_the_run_plan_reads_only_launch_fields_before_the_prompt() -> None:
    # What a warm node was prepared from must match the create it serves: every row
    # field the plan carries (all but its derived and per-run keys) is a launch field.
    derived = {"warm", "state", "branch", "prompt"}
    assert set(RunPlan.__annotations__) - derived <= set(LAUNCH_FIELDS)


def test_forks_copy_and_warm_nodes_match_the_same_run_setup() -> None:
    # A field that sets up a run is both copied by a fork and matched by the warm pool:
    # one list, so adding a column to one and not the other cannot happen.
    assert set(INHERITED) & set(LAUNCH_FIELDS) == set(RUN_SETUP)
    assert set(INHERITED) - set(RUN_SETUP) == {"root_lifecycle"}
    assert set(LAUNCH_FIELDS) - set(RUN_SETUP) == {"root", "parent", "creator"}
    assert len(set(INHERITED)) == len(INHERITED) and len(set(LAUNCH_FIELDS)) == len(LAUNCH_FIELDS)


def test_the_shared_fields_are_node_columns() -> None:
    columns = {c.name for c in nodes.c}
    assert set(INHERITED) <= columns and set(LAUNCH_FIELDS) <= columns


def _extra_keys_written() -> set[tuple[str, str]]:
    """``(file, key)`` of every ``extra`` key the runtime's code writes by name: the
    keywords of ``merge_extra(...)`` and the keys of ``extra={...}`` dict literals."""
    root = Path(heron.runtime.__file__).parent
    found: set[tuple[str, str]] = set()
    for path in root.rglob("*.py"):
        for call in ast.walk(ast.parse(path.read_text())):
            if not isinstance(call, ast.Call):
                continue
            name = getattr(call.func, "attr", getattr(call.func, "id", ""))
            for keyword in call.keywords:
                if name == "merge_extra" and keyword.arg is not None:
                    found.add((path.name, keyword.arg))
                if keyword.arg == "extra" and isinstance(keyword.value, ast.Dict):
                    for key in keyword.value.keys:
                        if isinstance(key, ast.Constant) and isinstance(key.value, str):
                            found.add((path.name, key.value))
    return found


def test_every_extra_key_the_runtime_writes_is_declared() -> None:
    written = _extra_keys_written()
    assert {key for _, key in written} >= {"waiting", "delivered", "interrupted_by"}
    undeclared = sorted((f, k) for f, k in written if k not in NodeExtra.__annotations__)
    assert undeclared == []
