"""The typed node row agrees with the table, and the field lists features share agree."""

from __future__ import annotations

from heron.runtime.db._database import nodes
from heron.runtime.nodes._types import INHERITED, LAUNCH_FIELDS, RUN_SETUP, NodeRow


def test_the_node_row_type_names_every_column_of_the_table() -> None:
    assert set(NodeRow.__annotations__) == {c.name for c in nodes.c}


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
