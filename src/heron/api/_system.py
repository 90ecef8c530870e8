"""System routes: health and status."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from ._common import RequestModel, WireModel

__all__ = [
    "DaemonInfo",
    "EventStreamStats",
    "Health",
    "Listener",
    "SandboxStatus",
    "SystemStatus",
]


class Health(WireModel):
    """``GET /healthz``."""

    ok: Literal[True] = True
    """Always true when the daemon answers."""
    version: str
    """Heron's version."""


class Listener(WireModel):
    """One address the daemon listens on."""

    kind: Literal["unix", "tcp"]
    """Unix socket or TCP."""
    address: str
    """Socket path, or ``host:port``."""
    auth: Literal["filesystem", "bearer", "session"]
    """How callers authenticate there: the socket's file permission, a bearer token (the
    page's session cookie is taken too), or only the page's session cookie (a loopback
    listener ``heron ui`` opened on a daemon with no token)."""


class EventStreamStats(WireModel):
    """The daemon's node event streams (``GET /v1/status``, ``event_streams``)."""

    readers: int = 0
    """Event streams open now."""
    readers_dropped: int = 0
    """Readers cut off since the daemon started (fell too far behind, or stopped reading)."""
    hubs: int = 0
    """Nodes with an in-memory stream hub (replay ring and subscribers)."""
    hub_bytes: int = 0
    """Bytes those hubs hold together (bounded by ``HERON_STREAM_MEMORY``)."""


class SandboxStatus(WireModel):
    """Whether nodes' commands run in a sandbox (``GET /v1/status``, ``sandbox``)."""

    active: bool = False
    """Whether node commands run sandboxed (``false``: unconfined, as the daemon's user)."""
    backend: Literal["bubblewrap"] | None = None
    """The sandbox in use."""
    mode: Literal["auto", "require", "off"] = "auto"
    """``HERON_SANDBOX``: ``require`` refuses to start without one, ``off`` never uses one."""
    problem: str | None = None
    """Why there is no sandbox, when there is none."""
    program: str | None = None
    """The ``bwrap`` program run."""
    host_commands: Literal["pid_namespace", "process_group"] = "process_group"
    """How ``POST /v1/bash`` commands are held to their request: a PID namespace (nothing
    they start outlives them) or, where none can start, their process group."""


class DaemonInfo(WireModel):
    """One daemon sharing the database (``GET /v1/status``, ``daemons``).

    Times are the database's clock, so daemons on hosts whose clocks disagree still agree
    on which of them is alive.
    """

    executor_id: str
    """Its DBOS executor id (kept in its ``HERON_HOME``: the same across its restarts)."""
    host: str
    """The host name of the machine it runs on."""
    pid: int
    """Its process id on that host."""
    home: str
    """Its ``HERON_HOME``."""
    socket: str
    """Its Unix socket (on its host)."""
    version: str
    """The Heron version it runs (only a daemon of the same version takes over its runs)."""
    started_at: datetime
    """When it started."""
    heartbeat_at: datetime
    """Its last heartbeat."""
    running: int
    """Node runs going in it at its last heartbeat."""
    this: bool
    """Whether it is the daemon answering."""
    alive: bool
    """Whether it is running: it beat within the bound and has not stopped."""
    stopped_at: datetime | None = None
    """When it stopped cleanly, if it did."""
    recovered_by: str | None = None
    """The executor id of the daemon that took over its runs, once one did."""
    role: Literal["daemon", "front", "worker"] = "daemon"
    """``daemon``: one process running its nodes itself; ``front``: the API process of a
    daemon started with ``--workers``, which runs no nodes; ``worker``: one of those workers."""
    front: str | None = None
    """A worker's front: that daemon's executor id."""


class SystemStatus(WireModel):
    """``GET /v1/status``."""

    version: str
    """Heron's version."""
    started_at: datetime
    """When the daemon started."""
    uptime_seconds: float
    """Seconds since it started."""
    pid: int
    """The daemon's process id."""
    nodes: dict[str, int]
    """Node counts by status."""
    database: str
    """The database in use (``sqlite`` or ``postgresql``), without credentials."""
    listeners: list[Listener]
    """Where the daemon listens."""
    provider: str
    """The default provider spec nodes run on."""
    # ``model_construct`` makes the same default without building the model's validator at
    # import time (the models defer their build to first use; ``bench/cold_start.py``).
    event_streams: EventStreamStats = EventStreamStats.model_construct()
    """The node event streams' readers and memory."""
    sandbox: SandboxStatus = SandboxStatus.model_construct()
    """Whether node commands run in a sandbox, and if not, why."""
    daemons: list[DaemonInfo] = Field(default_factory=list)
    """Every daemon sharing the database (this one too), alive or not, the oldest first;
    one that died is listed for a day after its runs were taken over."""


class PageOpenRequest(RequestModel):
    """``POST /v1/ui/open``: where the daemon's page should be reachable."""

    port: int | None = Field(default=None, ge=0, le=65535)
    """The loopback port to listen on if the daemon has no TCP listener yet (0: any free
    port; left out: the port the page had last time, else any)."""


class PageOpen(WireModel):
    """How to reach the daemon's page (``POST /v1/ui/open``)."""

    url: str
    """The page's address (``http://127.0.0.1:PORT/ui/``)."""
    login_url: str
    """The address that signs a browser in: it holds a one-time code, good once and for a
    short while (see ``expires_at``), exchanged for the page's session cookie."""
    expires_at: float
    """When the code stops being accepted (Unix time)."""
    listener: Listener
    """The TCP listener the page is served on."""


class PageSession(WireModel):
    """``GET /ui/session``: the signed-in page's session."""

    csrf_token: str
    """What the page's requests that change anything carry in ``X-Heron-CSRF``."""
    version: str
    """The daemon's Heron version."""
    expires_at: float
    """When the session ends (Unix time): the page signs in again with ``heron ui``."""
