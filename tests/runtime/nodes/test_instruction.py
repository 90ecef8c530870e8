"""A node's instruction, as the model receives it: the kernel's parts and the features'
(kind, orchestrator role, worktree branch), in their sections' order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.daemon import create, wait_settled
from tests.support.models import KEY, fake_openai, keyless_daemon
from tests.support.worktrees import repo as repo  # the fixture, shared

from heron.runtime.kinds._service import BUILTIN_KINDS
from heron.runtime.orchestration._service import ORCHESTRATOR_INSTRUCTION

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}}


def _system(request: dict[str, Any]) -> str:
    """The system message of a recorded OpenAI chat completion request."""
    (message,) = [m for m in request["messages"] if m["role"] == "system"]
    content = message["content"]
    return content if isinstance(content, str) else "".join(p["text"] for p in content)


def test_an_orchestrator_in_a_worktree_is_told_each_part_in_order(
    tmp_path: Path, repo: Path
) -> None:
    daemon = keyless_daemon(tmp_path / "home")
    daemon.start()
    try:
        with fake_openai() as server, daemon.client() as client:
            port = server.server_address[1]
            body = {"api_key": KEY, "base_url": f"http://127.0.0.1:{port}/v1"}
            assert client.put("/v1/model-auth/openai", json=body).status_code == 200
            node = create(
                client,
                prompt="Plan the work.",
                model="openai:gpt-5",
                mode="orchestrator",
                cwd=str(repo),
                worktree="planning",
                output_schema=SCHEMA,
                situational_context="The team meets on Mondays.",
            )
            # (its fake model never submits a result: the node fails, having been told)
            wait_settled(client, node["node_id"])
    finally:
        daemon.stop()
    told = _system(server.requests[0])  # type: ignore[attr-defined]
    general = next(kind for kind in BUILTIN_KINDS if kind.name == "general")
    parts = [
        "You are a Heron node: an agent working on the task in the user's messages.",
        general.instruction,
        ORCHESTRATOR_INSTRUCTION,
        "Working directory (file and shell tools work here): ",
        "on branch heron/planning: commit your work on it (nothing is merged for you).",
        "Finish by calling `submit-result` with a result matching this JSON schema",
        "Situational context (background, not a request):\nThe team meets on Mondays.",
    ]
    places = [told.find(part) for part in parts]
    assert -1 not in places, (places, told)
    assert places == sorted(places), told
