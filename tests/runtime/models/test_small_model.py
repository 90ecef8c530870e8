"""A node on the embedded model (a small one) gets the tools and instruction it can use."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from tests.support.daemon import Daemon, wait_settled

from heron.providers import LocalProvider, ScriptedProvider
from heron.runtime.nodes import RunSetup
from heron.runtime.nodes._tools import SMALL_MODEL_TOOLS, node_tools
from heron.runtime.nodes._workflow import _say_own, _small_model
from heron.tools import Tool, ToolContext

SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


async def _nothing(*args: Any) -> None:
    return None


def _names(tmp_path: Path, **kw: Any) -> list[str]:
    made = node_tools(
        workspace=tmp_path,
        submit=_nothing,
        decline=_nothing,
        scopes=kw.pop("scopes", None),
        output_schema=kw.pop("output_schema", None),
        **kw,
    )
    return sorted(t.name for t in made.tools)


def test_a_small_model_is_offered_a_few_tools_of_its_scopes(tmp_path: Path) -> None:
    every = _names(tmp_path, output_schema=SCHEMA)
    assert len(every) > 12  # what a node with every scope gets on a capable model
    small = _names(tmp_path, output_schema=SCHEMA, small=True)
    assert small == sorted(SMALL_MODEL_TOOLS)
    # Never more than its scopes allow: no scopes, the clock only.
    assert _names(tmp_path, scopes=[], small=True) == ["get-current-time"]
    assert _names(tmp_path, scopes=["memory:read"], small=True) == ["get-current-time"]


class _Spawn(Tool):
    name = "spawn-child"
    description = "Stands in for the orchestrator's tool."

    def __init__(self) -> None:
        super().__init__(input_schema={"type": "object", "properties": {}})

    async def execute(self, arguments: dict[str, Any], context: ToolContext) -> str:
        return "spawned"


def test_an_orchestrator_on_a_small_model_keeps_its_child_tools(tmp_path: Path) -> None:
    names = _names(tmp_path, scopes=[], small=True, granted=[_Spawn()])
    assert names == ["get-current-time", "spawn-child"]


def test_the_embedded_model_counts_as_small() -> None:
    assert _small_model(LocalProvider()) is True  # reads the file's metadata, loads nothing
    assert _small_model(LocalProvider(route_tools=False)) is False
    assert _small_model(ScriptedProvider(["hi"])) is False


def _instruction(plan: dict[str, Any], *, small: bool) -> str:
    """The kernel's own parts of a node's instruction, joined as a run joins them."""
    setup = RunSetup(
        node_id="n", run=1, plan=plan, workspace=Path("/srv/x"), small=small, network=False
    )
    _say_own(setup)
    return setup.instruction_text()


def test_a_small_models_instruction_is_only_what_the_task_needs() -> None:
    plan: dict[str, Any] = {
        "output_schema": None,
        "situational_context": None,
        "cwd": "/srv/x",
        "mode": "base",
    }
    general = _instruction(plan, small=False)
    assert general.startswith("You are a Heron node")
    assert "Working directory (file and shell tools work here): /srv/x" in general
    assert "submit-result" not in general
    assert "submit-result" in _instruction({**plan, "output_schema": SCHEMA}, small=False)
    assert _instruction(plan, small=True) == ""  # as `heron run` has none
    with_schema = _instruction({**plan, "output_schema": SCHEMA}, small=True)
    assert with_schema == "When you have the answer, call `submit-result` with it."
    context = _instruction({**plan, "situational_context": "It is a test."}, small=True)
    assert context == "Situational context (background, not a request):\nIt is a test."


@pytest.mark.slow
def test_the_readme_time_node_answers_on_the_embedded_model(tmp_path: Path) -> None:
    """The README's first node example on the embedded model itself, with every scope
    (two dozen tools before): it calls the clock and answers with the time, as
    ``heron run`` does."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERON_")}
    daemon = Daemon(tmp_path / "home", env={**env, "HERON_WARM_POOL": "0"})
    daemon.env.pop("HERON_PROVIDER", None)
    daemon.start()
    try:
        with daemon.client(timeout=60) as client:
            created = client.post("/v1/nodes", json={"prompt": "What time is it in UTC?"})
            node_id = created.json()["node_id"]
            told = wait_settled(client, node_id, timeout=900)["outcome"]
            assert told["kind"] == "result", told
            assert str(datetime.now(UTC).year) in (told["output_text"] or "")
            transcript = client.get("/v1/canvas/history/read", params={"node_id": node_id})
            assert "get-current-time" in transcript.text
    finally:
        daemon.stop()
