"""Where the daemon keeps its files and how it is reached: ``HERON_HOME`` and friends."""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

__all__ = [
    "ConnectInfo",
    "RuntimeConfig",
    "heron_home",
    "load_connect",
    "parse_listen",
    "save_connect",
]

CONNECT_FILE = "connect.json"

SandboxMode = Literal["auto", "require", "off"]
"""What the daemon does about sandboxing node commands (``HERON_SANDBOX``)."""

DEFAULT_WARM_POOL = 2
"""Warm nodes kept per launch tuple when ``HERON_WARM_POOL`` is not set."""

DEFAULT_MAX_RUNS = 64
"""Top-level nodes' runs a daemon process drives at once when ``HERON_MAX_RUNS`` is not set."""

DEFAULT_QUEUE_POLL = 0.05
"""Seconds between looks at the run queue when ``HERON_QUEUE_POLL`` is not set."""

DEFAULT_HEARTBEAT = 5.0
"""Seconds between a daemon's heartbeats when ``HERON_HEARTBEAT`` is not set."""

MAX_WORKERS = 64
"""The most worker processes ``--workers`` (``HERON_WORKERS``) may ask for."""

Role = Literal["daemon", "front", "worker"]
"""What a daemon process is: the one process of a daemon without workers (``daemon``),
the API process in front of its workers (``front``), or one of those workers."""


def heron_home() -> Path:
    """``$HERON_HOME``, or ``~/.heron``."""
    return Path(os.environ.get("HERON_HOME") or Path.home() / ".heron").expanduser()


def parse_listen(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) as a pair; ``ValueError`` with a reason otherwise."""
    host, sep, port = value.strip().rpartition(":")
    if not sep or not host:
        raise ValueError(f"--listen wants HOST:PORT, got {value!r}")
    host = host.strip("[]")
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--listen port must be a number from 0 to 65535, got {port!r}")
    return host, int(port)


@dataclass(frozen=True, kw_only=True, slots=True)
class ConnectInfo:
    """The TCP listener's address and bearer token, as ``heron sys connect`` stores them."""

    listen: str
    """``HOST:PORT``."""
    token: str
    """The owner credential every TCP request must carry."""


def load_connect(home: Path) -> ConnectInfo | None:
    """The stored TCP settings, or ``None`` if ``heron sys connect`` never ran."""
    try:
        data = json.loads((home / CONNECT_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read {home / CONNECT_FILE}: {exc}") from None
    if not isinstance(data, dict) or not all(
        isinstance(data.get(k), str) for k in ("listen", "token")
    ):
        raise ValueError(f"{home / CONNECT_FILE} must hold {{'listen': ..., 'token': ...}}")
    return ConnectInfo(listen=data["listen"], token=data["token"])


def save_connect(home: Path, listen: str, token: str | None = None) -> ConnectInfo:
    """Store the TCP settings (a fresh token unless one is given), readable by the owner only."""
    info = ConnectInfo(listen=listen, token=token or secrets.token_urlsafe(32))
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = home / CONNECT_FILE
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump({"listen": info.listen, "token": info.token}, f)
    os.replace(tmp, path)
    return info


@dataclass(frozen=True, kw_only=True, slots=True)
class RuntimeConfig:
    """Everything the daemon needs to start."""

    home: Path = field(default_factory=heron_home)
    """The daemon's directory (socket, pid file, SQLite database, logs)."""
    database_url: str | None = None
    """``HERON_DATABASE_URL``; ``None`` means SQLite at ``home/heron.db``."""
    listen: tuple[str, int] | None = None
    """TCP host and port, when the TCP listener is on."""
    token: str | None = None
    """The bearer token TCP requests must carry (required when ``listen`` is set)."""
    provider: str | None = None
    """The default provider spec for nodes (``HERON_PROVIDER``); ``None``: the embedded model."""
    max_body_bytes: int = 1024 * 1024
    """Largest request body accepted."""
    warm_pool: int = DEFAULT_WARM_POOL
    """``HERON_WARM_POOL``: pre-started nodes kept per launch tuple for ``prefer_warm``
    creates (0 turns the pool off)."""
    sse_keepalive: float = 15.0
    """Seconds between ``: keepalive`` comments on an idle stream (``HERON_SSE_KEEPALIVE``)."""
    sse_buffer: int = 2048
    """Events a stream reader may fall behind before it is dropped (``HERON_SSE_BUFFER``)."""
    sse_buffer_bytes: int = 4 * 1024 * 1024
    """Bytes a stream reader may fall behind before it is dropped (``HERON_SSE_BUFFER_BYTES``)."""
    sse_send_timeout: float = 30.0
    """Seconds one write to a stream reader may take before its connection is closed
    (``HERON_SSE_SEND_TIMEOUT``)."""
    stream_memory: int = 64 * 1024 * 1024
    """Bytes all nodes' replay rings may hold together (``HERON_STREAM_MEMORY``)."""
    max_runs: int = DEFAULT_MAX_RUNS
    """``HERON_MAX_RUNS``: top-level nodes' runs this daemon process drives at once;
    creates past it wait in the database's run queue (children and wake-ups never do)."""
    queue_poll: float = DEFAULT_QUEUE_POLL
    """``HERON_QUEUE_POLL``: seconds between the daemon's looks at the run queue (the most
    a queued run waits while there is room for it)."""
    heartbeat: float = DEFAULT_HEARTBEAT
    """``HERON_HEARTBEAT``: seconds between this daemon's heartbeats in the database; the
    daemons sharing it take the runs of one silent for three (see ``nodes/_cluster.py``)."""
    workers: int = 0
    """``HERON_WORKERS`` (``heron daemon --workers``): worker processes on this host that
    run the node runs, the daemon's process serving the API in front of them (PostgreSQL
    only); 0 runs everything in the one process."""
    worker: int = 0
    """Which of its front's workers this process is (1, 2 …); 0 for the daemon itself."""
    sandbox: SandboxMode = "auto"
    """``HERON_SANDBOX``: ``auto`` sandboxes node commands where bubblewrap works (and says
    so where it does not), ``require`` refuses to start without it, ``off`` never uses it."""
    sandbox_env: tuple[str, ...] = ()
    """``HERON_SANDBOX_ENV`` (comma-separated names): variables of the daemon's environment a
    sandboxed command keeps, beyond ``PATH``, the locale, ``TZ`` and ``TERM``."""

    @property
    def role(self) -> Role:
        """What this process is: a daemon on its own, a front with workers, or a worker."""
        if self.worker:
            return "worker"
        return "front" if self.workers else "daemon"

    @property
    def process_suffix(self) -> str:
        """What tells this process's own files and ids from the others' on the same home:
        ``-w1`` for worker 1, empty for the daemon itself."""
        return f"-w{self.worker}" if self.worker else ""

    @property
    def socket_path(self) -> Path:
        """The Unix socket (``HERON_SOCKET`` overrides ``home/heron.sock``)."""
        return Path(os.environ.get("HERON_SOCKET") or self.home / "heron.sock")

    @property
    def pid_path(self) -> Path:
        """Where the running daemon writes its pid."""
        return self.home / "heron.pid"

    @property
    def lock_path(self) -> Path:
        """The file the running daemon holds locked (one daemon per home)."""
        return self.home / "heron.lock"

    @property
    def log_path(self) -> Path:
        """Where a detached daemon writes its output."""
        return self.home / "daemon.log"

    @property
    def db_url(self) -> str:
        """The database URL in effect."""
        return self.database_url or f"sqlite:///{self.home / 'heron.db'}"

    @classmethod
    def from_env(
        cls, *, listen: str | None = None, workers: int | None = None, worker: int = 0
    ) -> RuntimeConfig:
        """Read ``HERON_HOME``, ``HERON_DATABASE_URL``, ``HERON_PROVIDER``, ``HERON_TOKEN``,
        the event-stream settings ``HERON_SSE_KEEPALIVE`` and ``HERON_SSE_BUFFER``,
        ``HERON_WARM_POOL``, the run queue's ``HERON_MAX_RUNS`` and ``HERON_QUEUE_POLL``,
        ``HERON_HEARTBEAT``, ``HERON_WORKERS`` (``workers`` overrides it), and
        ``HERON_SANDBOX`` and ``HERON_SANDBOX_ENV``. ``worker``: this process is that
        worker of a front (set by the front only).

        ``ValueError`` for workers on SQLite: it has one writer process.

        The TCP listener is on when ``listen`` is given or ``heron sys connect``
        stored settings; its token is ``HERON_TOKEN``, else the stored one, else
        a fresh one (stored, so clients can find it).
        """
        home = heron_home()
        stored = load_connect(home)
        token = os.environ.get("HERON_TOKEN") or None
        address: tuple[str, int] | None = None
        if listen is not None or stored is not None:
            chosen = listen if listen is not None else stored.listen  # type: ignore[union-attr]
            address = parse_listen(chosen)
            if token is None:
                if stored is not None:
                    token = stored.token
                else:
                    token = save_connect(home, chosen).token
        database_url = os.environ.get("HERON_DATABASE_URL") or None
        if workers is None:
            workers = _workers(os.environ.get("HERON_WORKERS"))
        elif not 0 <= workers <= MAX_WORKERS:
            raise ValueError(f"--workers must be from 0 to {MAX_WORKERS}, not {workers}")
        if workers and (database_url is None or database_url.startswith("sqlite")):
            raise ValueError(
                "--workers needs PostgreSQL (HERON_DATABASE_URL): SQLite takes one writer "
                "process, so a daemon on it runs its nodes in its own process (--workers 0)"
            )
        return cls(
            home=home,
            database_url=database_url,
            listen=address,
            token=token,
            provider=os.environ.get("HERON_PROVIDER") or None,
            sse_keepalive=_positive("HERON_SSE_KEEPALIVE", 15.0, float),
            sse_buffer=int(_positive("HERON_SSE_BUFFER", 2048, int)),
            warm_pool=_warm_pool(os.environ.get("HERON_WARM_POOL")),
            sse_buffer_bytes=int(_positive("HERON_SSE_BUFFER_BYTES", 4 * 1024 * 1024, int)),
            sse_send_timeout=_positive("HERON_SSE_SEND_TIMEOUT", 30.0, float),
            stream_memory=int(_positive("HERON_STREAM_MEMORY", 64 * 1024 * 1024, int)),
            max_runs=int(_positive("HERON_MAX_RUNS", DEFAULT_MAX_RUNS, int)),
            queue_poll=_positive("HERON_QUEUE_POLL", DEFAULT_QUEUE_POLL, float),
            heartbeat=_positive("HERON_HEARTBEAT", DEFAULT_HEARTBEAT, float),
            workers=workers,
            worker=worker,
            sandbox=_sandbox_mode(os.environ.get("HERON_SANDBOX")),
            sandbox_env=tuple(
                name.strip()
                for name in os.environ.get("HERON_SANDBOX_ENV", "").split(",")
                if name.strip()
            ),
        )


def _positive(name: str, default: float, kind: type[int] | type[float]) -> float:
    """The positive number in environment variable ``name`` (``default`` when unset)."""
    value = os.environ.get(name)
    if not value:
        return default
    try:
        number = kind(value)
    except ValueError:
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if number <= 0:
        raise ValueError(f"{name} must be above 0, got {value!r}")
    return number


def _sandbox_mode(value: str | None) -> SandboxMode:
    """``HERON_SANDBOX`` checked; ``ValueError`` naming the choices otherwise."""
    modes: dict[str, SandboxMode] = {"auto": "auto", "require": "require", "off": "off"}
    mode = modes.get((value or "auto").strip().lower())
    if mode is not None:
        return mode
    raise ValueError(f"HERON_SANDBOX must be auto, require or off, not {value!r}")


def _warm_pool(value: str | None) -> int:
    """``HERON_WARM_POOL`` as a count; ``ValueError`` saying what is wrong otherwise."""
    if value is None or not value.strip():
        return DEFAULT_WARM_POOL
    if not value.strip().isdigit() or int(value) > 64:
        raise ValueError(f"HERON_WARM_POOL must be a whole number from 0 to 64, not {value!r}")
    return int(value)


def _workers(value: str | None) -> int:
    """``HERON_WORKERS`` as a count; ``ValueError`` saying what is wrong otherwise."""
    if value is None or not value.strip():
        return 0
    if not value.strip().isdigit() or int(value) > MAX_WORKERS:
        raise ValueError(
            f"HERON_WORKERS must be a whole number from 0 to {MAX_WORKERS}, not {value!r}"
        )
    return int(value)
