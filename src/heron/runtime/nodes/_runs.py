"""What a node's run is made of: why it stopped, what is in progress, ids and outcomes."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._durable import Steps
from ._types import FailureDetail, Outcome

if TYPE_CHECKING:
    from ...agents import BaseAgent

__all__ = [
    "DETERMINISTIC",
    "NOT_STARTED",
    "NO_RESULT",
    "RUN_STEPS",
    "SETTLED",
    "Active",
    "Stop",
    "failure_outcome",
    "run_workflow_id",
]

SETTLED = frozenset({"completed", "failed", "cancelled"})
"""Statuses a node never leaves."""

RUN_STEPS = 2
"""The version of the steps a run is made of, part of DBOS's application version: raised
whenever they change, so no run is replayed against steps other than those it recorded
(2: the inbox is read between turns without a step of its own)."""

NO_RESULT = "NoResultSubmitted"
"""``detail.error_type`` of a node that had to submit a result and ended without one."""

NOT_STARTED = "RunNotStarted"
"""``detail.error_type`` of a run that could not start (a vanished cwd, a missing API key)."""

DETERMINISTIC = frozenset({NO_RESULT, NOT_STARTED})
"""Failures (reason ``crashed``) that running again as it is would repeat: revive-all
leaves them alone."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Stop:
    """How a run's conversation ended (JSON-safe, recorded by the run's last step)."""

    kind: str
    """``done``, ``interrupted``, ``yielded`` (dormant until a message), ``closed`` or
    ``failed``."""
    reason: str | None = None
    """For ``closed`` and ``failed``: the outcome reason."""
    message: str | None = None
    """What happened, for failures."""
    error_type: str | None = None
    """The underlying error's class, for failures."""
    reply: str | None = None
    """The model's last answer, for ``done``."""
    asked: bool = False
    """For ``done``: the run ended by asking the human questions (the node waits)."""
    stop_reason: str | None = None
    """For ``done``: why the conversation's last turn ended (``end_turn``,
    ``max_tokens`` ...: the agent's ``RunResult.stop_reason``)."""


@dataclass(kw_only=True, slots=True, eq=False)
class Active:
    """A run in progress in this process."""

    node_id: str
    """The node."""
    run: int
    """Which run of the node."""
    model: str | None
    """The node's model override, read per turn (``PATCH …/config`` changes it)."""
    task: asyncio.Task[Any] | None = None
    """The task running the conversation, while it runs."""
    stop: Stop | None = None
    """Why the conversation was stopped from outside (interrupt, close, deadline)."""
    steps: Steps
    """The run's steps (its ``caught_up`` says whether a resumed run is still replaying)."""
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once the run has saved its end."""
    agent: BaseAgent | None = None
    """The run's agent once made: its conversation so far (saved only when the run
    ends) is what the canvas's history reads of a running node."""


def run_workflow_id(node_id: str, run: int) -> str:
    """The DBOS workflow id of a node's run."""
    return f"heron:{node_id}:{run}"


def failure_outcome(stop: Stop) -> Outcome:
    """The outcome a closed or failed run settles with."""
    detail: FailureDetail = {
        "message": stop.message or stop.reason or "failed",
        "error_type": stop.error_type,
    }
    return {"kind": "failure", "reason": stop.reason, "declined": None, "detail": detail}
