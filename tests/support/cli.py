"""Running ``heron`` in process against the shared daemon, for the CLI tests."""

from __future__ import annotations

import re
from typing import Any

from typer.testing import CliRunner

from heron import api
from heron.cli import app
from heron.client import Heron

from .polling import eventually


class Done:
    """What one ``heron`` invocation did."""

    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    def __repr__(self) -> str:
        return f"Done({self.code}, out={self.out!r}, err={self.err!r})"


def heron(*args: str) -> Done:
    """Run ``heron *args`` in process (Typer's ``CliRunner``); an escaped exception is raised."""
    result = CliRunner().invoke(app, list(args), prog_name="heron")
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # an escaped exception is a bug, not an outcome
    return Done(result.exit_code, result.stdout, result.stderr)


def created(done: Done) -> str:
    """The node id ``heron nodes create`` printed (asserting it succeeded)."""
    match = re.match(r"created node (\S+) \(", done.out)
    assert done.code == 0 and match, done
    return match[1]


def settle(client: Heron, node_id: str) -> api.NodeOutcome:
    """Wait (up to 60 s) for the node's outcome."""
    return client.nodes.wait_for_outcome(node_id, timeout=60)


def wait_status(client: Heron, node_id: str, status: str) -> api.Node:
    """Poll the node until it has ``status``; returns it."""
    return eventually(
        lambda: client.nodes.retrieve(node_id),
        lambda node: node.status == status,
        interval=0.02,
        what=f"{node_id} being {status}",
    )


QUESTIONS = [
    {"question": "Which branch?", "choices": ["main", "dev", "release"], "multiple": True},
    {"question": "Anything else?"},
]
"""The two questions :func:`asking` files."""


def asking(client: Heron, scripts: Any, name: str, after: str) -> tuple[str, str]:
    """A node that asks :data:`QUESTIONS`; its id and its ticket's, once it sleeps."""
    ask = {"tool_calls": [{"name": "ask-questions", "arguments": {"questions": QUESTIONS}}]}
    node = client.nodes.create(prompt="ship it", scopes=["ask"], model=scripts(name, [ask, after]))
    tickets = eventually(
        lambda: client.human.inbox.list(node_id=node.node_id),
        interval=0.02,
        what=f"a ticket of {node.node_id}",
    )
    return node.node_id, tickets[0].ticket_id
