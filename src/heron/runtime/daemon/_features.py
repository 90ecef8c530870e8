"""The daemon's features, in the order the kernel makes, starts and stops them.

The order is deliberate (see ``nodes/_feature.py``): a feature comes after those it
needs when it is made (profiles after kinds; human after the canvas it feeds), the
daemon starts them in this order and stops them in reverse. So:

- the shell first: it supplies the sandbox node commands run in and reaps the commands
  (``/v1/bash``'s, node jobs) a dead daemon left, before anything else starts; then jobs,
  which records its commands in the shell's ledger; then models, which supplies the
  providers and loads the default model (or refuses to start without its key); the warm
  pool discards a dead daemon's warm nodes after them, before DBOS resumes any run;
- lineage before worktrees: a message to a node being relaunched is refused as such
  even if its worktree is gone;
- orchestration before human: the orchestration resumes parked parents before answers
  queued to humans' questions are delivered; on the way down, orchestration cancels its
  wait timeouts before the ``/v1/bash`` commands are killed (the shell stops last);
- orchestration before reports, and human, memory and crons last, in that order: the
  tools they give a node come in this order (an orchestrator's child tools and
  ``push-report`` first; the question tool, the memory and cron tools after the
  workspace's);
- the page after the canvas it shows (it only serves routes);
- crons last: it starts once everything else is up (its firings create nodes) and
  stops first (no firing creates a node in a stopping daemon).
"""

from __future__ import annotations

from ..canvas import Canvas
from ..crons import Crons
from ..db import NODES_SCHEMA, Schema
from ..files import Files
from ..human import Human
from ..jobs import Jobs
from ..kinds import Kinds
from ..lineage import Lineage
from ..memory import Memory
from ..models import Models
from ..nodes import FeatureFactory
from ..orchestration import Orchestration
from ..profiles import Profiles
from ..reports import Reports
from ..shell import Commands
from ..ui import Page
from ..warm import WarmPool
from ..worktrees import Worktrees

__all__ = ["FEATURES", "SCHEMAS"]

FEATURES: tuple[FeatureFactory, ...] = (
    Commands,
    Jobs,
    Models,
    Kinds.of,
    Profiles,
    Lineage,
    Worktrees,
    WarmPool,
    Files,
    Canvas,
    Page,
    Orchestration,
    Reports,
    Human,
    Memory,
    Crons,
)
"""Every feature of the daemon, in order (see the module docstring for why)."""


def _schema(make: FeatureFactory) -> Schema | None:
    # A feature made by a class method (``Kinds.of``) declares its schema on the class.
    return getattr(getattr(make, "__self__", make), "schema", None)


SCHEMAS: tuple[Schema, ...] = (
    NODES_SCHEMA,
    *(schema for make in FEATURES if (schema := _schema(make)) is not None),
)
"""Every table of the daemon, in the order the engine migrates them: the kernel's, then
the features'. What a tool or a test migrates to have the daemon's whole database."""
