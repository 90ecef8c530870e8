"""What a feature is to the kernel: :class:`Feature`, the :class:`Features` registered in a
daemon, and the :class:`Kernel`: the node operations a feature may use.

A feature (crons, memory, human requests ...) lives in a package of its own. The kernel
knows it only as a :class:`Feature`: something it starts and stops, whose routes it
serves, whose tools it offers a node's run, and which it tells when a node settles. The
engine builds the features of ``heron.runtime.daemon.FEATURES`` in that order and
names none of them.

Order is explicit: the list's order. Hooks run in it while the daemon starts
(:meth:`Feature.before_launch`, then :meth:`Feature.start`) and in reverse while it stops
(:meth:`Feature.stop`, then :meth:`Feature.after_shutdown`), so a feature that needs another comes
after it, and one whose work creates nodes (crons) comes last: it starts once everything
else is up and stops first.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from fastapi import FastAPI

    from ... import api
    from ...providers import Provider
    from ...tools import BashTools, Skill, Storage, Tool, ToolContext
    from .._config import RuntimeConfig
    from ..db import Database, Schema
    from ..events import EventLog
    from ._runs import Active, Stop
    from ._store import NodeStore
    from ._tools import NodeTools
    from ._types import NodeExtra, NodeRow, Outcome, RunPlan

__all__ = [
    "CommandSandbox",
    "Feature",
    "FeatureFactory",
    "Features",
    "Kernel",
    "ModelSource",
    "RunSetup",
    "RunTools",
    "Section",
]

F = TypeVar("F", bound="Feature")


@dataclass(frozen=True, kw_only=True, slots=True)
class RunTools:
    """What a feature is told of a run whose tools are being made (:meth:`Feature.tools`)."""

    node_id: str
    """The node."""
    run: int
    """Its run (the tools' calls are recorded as that run's steps)."""
    plan: Mapping[str, Any]
    """The run's plan (the row's fields the run was prepared from: ``profile``, ``mode`` ...)."""
    admits: Callable[[str], bool]
    """Whether the node's scopes and kind let it have a tool, by name."""


class Section:
    """Where a part of a node's instruction goes: the kernel joins the parts in this order,
    so a feature's text lands where it reads best, whatever the features' order."""

    PERSONA = 10
    """Who the node is: the kernel's opening line, then its kind's instruction."""
    ROLE = 20
    """What its mode makes of it (an orchestrator's way of working)."""
    WORKSPACE = 30
    """Where it works: its directory (the kernel's), then what that directory is."""
    TASK = 40
    """How it finishes: the result its schema asks for."""
    CONTEXT = 50
    """Background it was given (situational context)."""


@dataclass(kw_only=True, slots=True)
class RunSetup:
    """A run being set up: what the kernel knows of it, and what the features make of it
    (:meth:`Feature.setup`, called in the features' order, before its tools are made)."""

    node_id: str
    """The node."""
    run: int
    """Its run."""
    plan: RunPlan
    """The run's plan (as its ``begin`` step recorded it)."""
    workspace: Path
    """Where its file and shell tools work."""
    small: bool
    """Whether its model is too small to choose among many tools (a minimal instruction,
    no skills)."""
    network: bool
    """Whether its sandboxed commands may reach the network (its ``net`` scope)."""
    instruction: list[tuple[int, str]] = field(default_factory=list)
    """Parts of its instruction, each with its :class:`Section`."""
    keep: Callable[[str], bool] | None = None
    """Which tools its kind keeps, by name (``None``: all)."""
    shell: Callable[[Path], BashTools] | None = None
    """Its shell in a directory (its bash tools, and skills working on files, use it)."""
    hidden: tuple[str, ...] = ()
    """Paths its file tools must not show (the daemon's secrets)."""
    context: ToolContext | None = None
    """The env id and ids its tools are called with (``None``: a fresh context)."""
    storage: Storage | None = None
    """Its tools' storage."""
    skills: Callable[[NodeTools], list[Skill]] | None = None
    """Its skills, made once its tools are (their tools are added to those)."""

    def say(self, section: int, text: str) -> None:
        """Add ``text`` to the instruction in ``section`` (after what is there already)."""
        self.instruction.append((section, text))

    def instruction_text(self) -> str:
        """The instruction as the model gets it: the parts in section order (in the order
        they were said within one), a blank line between two."""
        ordered = sorted(self.instruction, key=lambda part: part[0])  # (stable: said order)
        return "\n\n".join(text for _, text in ordered)


class ModelSource(Protocol):
    """The model providers node runs use, supplied by one feature (:attr:`Feature.models`)."""

    @property
    def default(self) -> str:
        """The spec nodes use unless they name their own model."""
        ...

    def get(self, spec: str | None) -> Provider:
        """The provider for ``spec`` (``None``: the default)."""
        ...

    def use(self, spec: str | None) -> contextlib.AbstractAsyncContextManager[Provider]:
        """The provider for ``spec``, held for one call."""
        ...

    async def prepare(self, spec: str | None, *, reread: bool = False) -> None:
        """Load ``spec``'s model now (``UserError`` if it cannot be)."""
        ...


class CommandSandbox(Protocol):
    """Where node commands run, supplied by one feature (:attr:`Feature.sandbox`)."""

    def check(self) -> None:
        """Refuse to start (raise) if the daemon must sandbox commands and cannot."""
        ...

    def status(self) -> api.SandboxStatus:
        """The sandbox as ``/v1/status`` shows it."""
        ...


class Feature:
    """One feature of the daemon, as the kernel sees it: every hook does nothing unless
    the feature says otherwise.

    A feature is made with the :class:`Kernel` (``Feature(kernel)``, see
    :data:`FeatureFactory`); features listed before it are already registered then.
    """

    schema: Schema | None = None
    """The feature's own tables and their migrations (the engine migrates every
    feature's, after the kernel's, before it starts any)."""

    models: ModelSource | None = None
    """The model providers runs use, if this feature supplies them (one feature does)."""

    sandbox: CommandSandbox | None = None
    """Where node commands run, if this feature supplies it (one feature does)."""

    body_limits: Mapping[str, int] = {}
    """The largest request body each of the feature's routes takes, by path, where that
    can be more than the daemon's limit (the route refuses more itself)."""

    async def before_launch(self) -> None:
        """Called as the daemon starts, before DBOS launches (no run is going yet)."""

    async def start(self) -> None:
        """Called once DBOS has launched and the interrupted runs are resumed."""

    async def stop(self) -> None:
        """Called as the daemon stops, before DBOS is shut down (runs may still be going)."""

    async def after_shutdown(self) -> None:
        """Called as the daemon stops, after DBOS is shut down (no run is going any more)."""

    async def end_requests(self) -> None:
        """Called as the server stops serving, before the kernel stops: end the requests
        the feature holds open, so they answer at once rather than hold up the shutdown."""

    # -- a node's create, in the order the kernel calls these -----------------------

    def check_create(self, request: api.NodeCreateRequest) -> None:
        """Refuse a create the feature finds wrong (raise ``ApiError``) before anything
        is read."""

    async def derive(self, row: NodeRow, request: api.NodeCreateRequest) -> None:
        """Fill a new node's ``row`` from the node it derives from (a fork's original),
        before its placement is checked."""

    async def complete(self, row: NodeRow) -> None:
        """Settle the fields of a new node's ``row`` that the feature decides (profile,
        kind, model), or refuse the create."""

    async def provision(self, row: NodeRow) -> None:
        """Make what the new node needs before its row exists (a worktree), noting it in
        ``row``; :meth:`unprovision` undoes it if the node is not created after all."""

    async def unprovision(self, row: NodeRow) -> None:
        """Undo :meth:`provision`: the node was not created (never raises)."""

    async def claim(
        self, request: api.NodeCreateRequest, row: NodeRow, prompt: str | None
    ) -> NodeRow | None:
        """Serve the create with a node made ahead of it, whose run is already going:
        that node's row, or ``None`` (the kernel inserts ``row``). See :meth:`serve`."""
        return None

    def serve(self, node_id: str) -> None:
        """Let the run of a node this feature :meth:`claim`-ed go on (the create has
        announced the node)."""

    async def inserted(self, row: NodeRow) -> None:
        """The new node's row exists; its first run has not started yet."""

    # -- a node's life ---------------------------------------------------------------

    async def holds(self, node_id: str) -> bool:
        """Whether the node, its turn over with no result pending, waits (dormant) for
        something the feature brings it (its children's outcomes)."""
        return False

    async def final_report(self, row: NodeRow) -> str | None:
        """The file of the node's final report for the settlement its run is making now
        (``None``: none; the first feature that names one wins)."""
        return None

    def check_message(self, row: NodeRow) -> None:
        """Refuse a message to the unsettled node of ``row`` (raise ``ApiError``)."""

    async def quiet(self, node_id: str) -> None:
        """The node is being closed by its parent: its outcome is delivered to nobody."""

    def routes(self, app: FastAPI) -> None:
        """Add the feature's routes to ``app``."""

    def begin(self, row: NodeRow, plan: RunPlan) -> None:
        """A run of the node begins: adjust the ``plan`` it is prepared from (where it
        works ...), recorded with its ``begin`` step."""

    def setup(self, run: RunSetup) -> None:
        """Shape a run being set up: its instruction, its kind's tool filter, its shell,
        its tools' storage and context, its skills (raise to fail the run's start)."""

    async def warm(self, node_id: str, plan: RunPlan, failure: str | None) -> bool:
        """A node made ahead of a create has its run set up (``failure``: why it could not
        be): whether it goes on to serve a create (``False``: it was discarded, and what
        its run left is removed). Only the feature that makes such nodes answers."""
        return True

    def tools(self, run: RunTools) -> Sequence[Tool]:
        """The tools the feature gives a node for one run (the kernel keeps those the
        node's scopes and kind admit)."""
        return ()

    async def settled(self, node_id: str, outcome: Outcome) -> None:
        """React to a node settling here with ``outcome`` (run in the background, and
        only while that settlement stands: a revive may have taken it back)."""

    async def released(self, node_id: str) -> None:
        """React to a node's *status* becoming settled (run in the background; a resident
        root that answered keeps its outcome while dormant, and is released only when
        it is closed)."""


FeatureFactory = Callable[["Kernel"], Feature]
"""Makes a feature for a kernel: usually the feature's class."""


class Features:
    """The features registered in a daemon, in their order."""

    def __init__(self) -> None:
        self._features: list[Feature] = []
        self._hooked: dict[str, list[Feature]] = {}

    def add(self, feature: Feature) -> None:
        """Register ``feature`` after those registered before it."""
        if any(type(f) is type(feature) for f in self._features):
            raise ValueError(f"{type(feature).__name__} is registered already")
        self._features.append(feature)
        self._hooked.clear()

    def having(self, hook: str) -> list[Feature]:
        """The features that implement ``hook`` (a :class:`Feature` method's name), in
        order (the kernel calls only those, not every feature)."""
        hooked = self._hooked.get(hook)
        if hooked is None:
            default = getattr(Feature, hook)
            hooked = [f for f in self._features if getattr(type(f), hook) is not default]
            self._hooked[hook] = hooked
        return hooked

    def get(self, kind: type[F]) -> F:
        """The registered feature of class ``kind``; ``LookupError`` if there is none."""
        for feature in self._features:
            if isinstance(feature, kind):
                return feature
        raise LookupError(f"no {kind.__name__} feature is registered")

    def __iter__(self) -> Iterator[Feature]:
        return iter(self._features)

    def __reversed__(self) -> Iterator[Feature]:
        return reversed(self._features)

    def __len__(self) -> int:
        return len(self._features)


class Kernel(Protocol):
    """The node operations a feature may use (the engine implements them)."""

    @property
    def config(self) -> RuntimeConfig:
        """The daemon's configuration."""
        ...

    @property
    def db(self) -> Database:
        """The daemon's database, which every feature's store uses."""
        ...

    @property
    def store(self) -> NodeStore:
        """The kernel's rows: nodes, messages, outcomes, events."""
        ...

    @property
    def events(self) -> EventLog:
        """The nodes' event log (publish, prime, flush ...)."""
        ...

    @property
    def providers(self) -> ModelSource:
        """The model providers runs use."""
        ...

    @property
    def features(self) -> Features:
        """The registered features (how one feature finds another)."""
        ...

    @property
    def active(self) -> Mapping[str, Active]:
        """The runs in progress here, by node id."""
        ...

    @property
    def listeners(self) -> list[api.Listener]:
        """Where the daemon listens now."""
        ...

    async def listen(self, host: str, port: int) -> api.Listener:
        """Open another TCP listener while serving (see ``Engine.listen``)."""
        ...

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        """Run ``coro`` in the background (kept referenced until it ends)."""
        ...

    def workspace(self, node_id: str, cwd: str | None) -> Path:
        """Where a node's file and shell tools work."""
        ...

    async def row(self, node_id: str) -> NodeRow:
        """The node's row; ``404 node_not_found`` if there is none."""
        ...

    async def node(self, node_id: str) -> api.Node:
        """The node as the API shows it."""
        ...

    async def create(
        self, request: api.NodeCreateRequest, *, extra: NodeExtra | None = None
    ) -> api.Node:
        """Create a node and start its first run (unless ``no_kickoff``)."""
        ...

    async def message(
        self, node_id: str, body: str, *, extra: Mapping[str, Any] | None = None
    ) -> api.MessageAccepted:
        """Queue ``body`` for the node, waking it if dormant."""
        ...

    async def deliver(
        self, row: NodeRow, body: str, *, extra: Mapping[str, Any] | None = None
    ) -> api.MessageAccepted:
        """Queue ``body`` for an unsettled node (the caller holds :meth:`locked`)."""
        ...

    async def close(
        self, node_id: str, reason: str | None = None, *, quiet: bool = False
    ) -> api.Node:
        """Cancel the node and its subtree."""
        ...

    async def close_subtree(
        self, node_id: str, reason: str, message: str, *, quiet: bool = False
    ) -> None:
        """Settle the node (``cancelled`` with ``reason``), then the subtree it owns."""
        ...

    async def stop_run(self, node_id: str, run: int, stop: Stop) -> None:
        """Stop the node's running conversation with ``stop``."""
        ...

    async def start_next_run(self, node_id: str) -> bool:
        """Start the next run of a dormant or interrupted node (under its lock); ``False``
        if it is running already (another daemon woke it first)."""
        ...

    async def launch(self, node_id: str, run: int, *, here: bool = False) -> None:
        """Start the workflow of the node's run ``run`` (``here``: in this process, also
        in a daemon with workers)."""
        ...

    async def prepare_model(self, spec: str | None) -> None:
        """Load the model ``spec`` now; ``422 invalid_model``."""
        ...

    async def set_deadline(self, node_id: str, seconds: float | None) -> None:
        """Give an unsettled node a deadline ``seconds`` from now (``None``: none)."""
        ...

    def locked(self, node_id: str) -> contextlib.AbstractAsyncContextManager[None]:
        """Hold the node's lock (messages and run ends never interleave)."""
        ...
