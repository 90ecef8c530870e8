"""The sandbox a node's commands run in: bubblewrap, unless it cannot start here
(``HERON_SANDBOX`` says what then)."""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from ... import api
from ...tools import (
    Sandbox,
    contained,
    find_bwrap,
    sandbox_environment,
    sandbox_problem,
)
from .._config import CONNECT_FILE
from ..models import CREDENTIALS_FILE
from ..server import DaemonError

if TYPE_CHECKING:
    from .._config import RuntimeConfig

__all__ = ["ENGINE_SOCKETS", "SANDBOX_MODES", "NodeSandbox", "git_paths"]

SANDBOX_MODES = ("auto", "require", "off")
"""``HERON_SANDBOX``'s values."""

ENGINE_SOCKETS = (
    "/run/docker.sock",
    "/var/run/docker.sock",
    "/run/containerd/containerd.sock",
    "/run/podman/podman.sock",
)
"""Container engines' sockets, hidden too: whoever reaches one runs containers as root
(a read-only mount does not stop a connect)."""

log = logging.getLogger("heron.runtime")


class NodeSandbox:
    """Whether node commands are sandboxed in this daemon, and each node's sandbox."""

    def __init__(self, config: RuntimeConfig) -> None:
        self.mode = config.sandbox
        """``auto``, ``require`` or ``off``."""
        self.keep_env = config.sandbox_env
        """Variables of the daemon's environment node commands keep."""
        self.root = config.home / "sandbox"
        """Where each node's ``/tmp`` lives (``<root>/<node_id>``), inside the hidden home."""
        # The home's secrets by name too: for file tools whose root is the home itself.
        secrets = [config.home / name for name in (CREDENTIALS_FILE, CONNECT_FILE)]
        hidden = [config.home, *secrets, config.socket_path, *map(Path, ENGINE_SOCKETS)]
        database = _sqlite_path(config.db_url)
        if database is not None:
            hidden += [Path(f"{database}{end}") for end in ("", "-wal", "-shm", "-journal")]
        hidden += map(Path, _postgres_sockets(config.db_url))
        self.hidden = tuple(dict.fromkeys(os.path.realpath(path) for path in hidden))
        """What node commands never see."""
        self.problem: str | None = "not checked yet"
        """Why commands are not sandboxed (``None``: they are)."""
        self.contain: list[str] | None = None
        """What ``/v1/bash`` commands run under (``bwrap ... --``: a PID namespace of their
        own), or ``None`` where that cannot start (a process group is all there is)."""

    def check(self) -> None:
        """Try the sandbox once (at start): log a warning, or refuse to start, if it fails."""
        if self.mode == "off":
            self.problem = "HERON_SANDBOX=off"
        else:
            self.problem = sandbox_problem(Sandbox(hidden=self.hidden))
        shutil.rmtree(self.root, ignore_errors=True)  # no shell lives yet: old /tmps go
        try:
            works = self.mode != "off" and _runs(contained(["/bin/sh", "-c", "exit 0"]))
        except FileNotFoundError:  # no bubblewrap
            works = False
        self.contain = contained([]) if works else None
        if self.contain is None and self.mode != "off":
            log.warning(
                "/v1/bash commands get no PID namespace (bubblewrap cannot start one): "
                "what a command starts in a session of its own can outlive its request"
            )
        if self.problem is None:
            return
        if self.mode == "require":
            raise DaemonError(
                f"no sandbox for node commands ({self.problem}); install bubblewrap "
                "(apt-get install bubblewrap) and allow user namespaces, or start without "
                "--require-sandbox"
            )
        log.warning(
            "node commands run WITHOUT a sandbox (%s): an agent with `act` can read "
            "whatever this daemon's user can, $HERON_HOME included. `heron daemon "
            "--require-sandbox` refuses to start like this.",
            self.problem,
        )

    @property
    def hidden_from_files(self) -> tuple[str, ...]:
        """What a node's file tools refuse even inside its directory (unless ``off``)."""
        return () if self.mode == "off" else self.hidden

    @property
    def active(self) -> bool:
        """Whether node commands run in the sandbox."""
        return self.problem is None

    def status(self) -> api.SandboxStatus:
        """What ``GET /v1/status`` says about it."""
        return api.SandboxStatus(
            active=self.active,
            backend="bubblewrap" if self.active else None,
            mode=self.mode,
            problem=self.problem,
            program=find_bwrap() if self.active or self.contain else None,
            host_commands="pid_namespace" if self.contain is not None else "process_group",
        )

    def for_node(self, node_id: str, workspace: Path, *, network: bool = True) -> Sandbox | None:
        """The sandbox of ``node_id``'s commands in ``workspace`` (``None``: none here);
        without ``network`` each command gets a network namespace of its own (a loopback)."""
        if not self.active:
            return None
        tmp = self.root / node_id
        tmp.mkdir(parents=True, exist_ok=True, mode=0o700)
        writable, readonly = git_paths(workspace)
        return Sandbox(
            writable=(str(workspace), *writable),
            readonly=readonly,
            hidden=self.hidden,
            tmp=str(tmp),
            network=network,
            outlive=True,  # a bash-start job's leftovers live on, listed, until cancelled
        )

    def environment(self) -> dict[str, str]:
        """The environment node commands start from."""
        return sandbox_environment(keep=self.keep_env)

    async def forget(self, node_id: str) -> None:
        """Remove the node's ``/tmp`` (its shell is closed). It is moved aside at once (a
        new shell of the node, made while the rest is deleted, gets an empty one) and
        deleted in a worker thread: the event loop never walks a directory tree."""
        tmp = self.root / node_id
        gone = self.root / f".gone-{node_id}-{secrets.token_hex(4)}"
        try:
            tmp.rename(gone)
        except FileNotFoundError:
            return
        except OSError:
            gone = tmp  # (cannot happen within one directory; delete it in place)
        await asyncio.to_thread(shutil.rmtree, gone, ignore_errors=True)


def git_paths(workspace: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """For a git worktree: its repository's git directory (to commit, writable) and what in
    it stays read-only (hooks and config: rewritten, they would run code as the owner)."""
    marker = workspace / ".git"
    try:
        text = marker.read_text(encoding="utf-8").strip() if marker.is_file() else ""
    except OSError:
        return (), ()
    if not text.startswith("gitdir:"):
        return (), ()  # a plain checkout: its .git is inside the workspace already
    own = (workspace / text.removeprefix("gitdir:").strip()).resolve()
    try:
        common = (own / (own / "commondir").read_text(encoding="utf-8").strip()).resolve()
    except OSError:
        common = own
    if not common.is_dir():
        return (), ()
    readonly = [common / "hooks", common / "config", own / "config.worktree"]
    return (str(common),), tuple(str(path) for path in readonly if path.exists())


def _runs(argv: list[str]) -> bool:
    """Whether ``argv`` runs and exits 0 (bubblewrap can start what it describes)."""
    try:
        return subprocess.run(argv, capture_output=True, timeout=10, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _postgres_sockets(url: str) -> list[str]:
    """The folders of a PostgreSQL database's Unix sockets, when it is reached by one: there
    the daemon's user may get in with no password at all (peer authentication)."""
    if not url.startswith("postgres"):
        return []
    try:
        parsed = make_url(url)
    except ArgumentError:
        return []
    given = parsed.query.get("host") or parsed.host or ""
    hosts = [given] if isinstance(given, str) else list(given)
    if any(host and not host.startswith("/") for host in hosts):
        return []  # over TCP: nothing on the filesystem to hide
    return [h for h in hosts if h] or ["/run/postgresql", "/var/run/postgresql"]


def _sqlite_path(url: str) -> str | None:
    """The database file of an SQLite URL (``None`` for other databases)."""
    if not url.startswith("sqlite"):
        return None
    path = url.partition(":///")[2].partition("?")[0]
    return path if path and path != ":memory:" else None
