"""``heron daemon`` (run, ``start``, ``stop``, ``status``) and ``heron sys connect``."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.text import Text

if TYPE_CHECKING:
    from ..api import DaemonInfo, SystemStatus

__all__ = ["daemon_app", "sys_app"]

daemon_app = typer.Typer(
    help="Run the Heron daemon: nodes as durable agent runs (foreground by default).",
    invoke_without_command=True,
    no_args_is_help=False,
)
sys_app = typer.Typer(help="Daemon settings: reach it over TCP.", no_args_is_help=True)

ListenOption = Annotated[
    str | None,
    typer.Option(
        "--listen",
        help="Also listen on TCP at HOST:PORT (every request then needs the bearer token).",
        show_default=False,
    ),
]


RequireSandboxOption = Annotated[
    bool,
    typer.Option(
        "--require-sandbox",
        help="Refuse to start unless node commands can run in a sandbox (bubblewrap).",
    ),
]


WorkersOption = Annotated[
    int | None,
    typer.Option(
        "--workers",
        min=0,
        max=64,
        metavar="N",
        help="Run the nodes in N worker processes on this host sharing the database "
        "(PostgreSQL only; default: HERON_WORKERS, else 0, everything in this one process). "
        "This process then serves the API, fires crons and keeps the warm pool (a node "
        "served warm runs here); every other run goes to a worker. A worker that dies is "
        "started again and its runs resume; jobs belong to the process running their node.",
        show_default=False,
    ),
]


def _say(message: str, *, err: bool = False, style: str | None = None) -> None:
    Console(stderr=err, highlight=False, soft_wrap=True).print(Text(message, style=style or ""))


def _fail(message: str) -> typer.Exit:
    _say(f"heron: error: {message}", err=True, style="red")
    return typer.Exit(1)


def _config(
    listen: str | None, require_sandbox: bool = False, workers: int | None = None, worker: int = 0
) -> object:
    import dataclasses

    from ..runtime import RuntimeConfig

    try:
        config = RuntimeConfig.from_env(listen=listen, workers=workers, worker=worker)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    return dataclasses.replace(config, sandbox="require") if require_sandbox else config


@daemon_app.callback()
def daemon(
    ctx: typer.Context,
    listen: ListenOption = None,
    detach: Annotated[
        bool, typer.Option("--detach", help="Run in the background and return once it is up.")
    ] = False,
    require_sandbox: RequireSandboxOption = False,
    workers: WorkersOption = None,
    worker: Annotated[int, typer.Option("--worker", hidden=True, min=0)] = 0,
) -> None:
    """Run the daemon on $HERON_HOME/heron.sock (and TCP with --listen)."""
    if ctx.invoked_subcommand is not None:
        if listen is not None or detach or require_sandbox or workers is not None:
            # Silently dropping them would start a daemon the caller did not ask for.
            raise _fail(
                f"give the options after the command: heron daemon {ctx.invoked_subcommand} ..."
            )
        return
    from ..runtime import RuntimeConfig

    config = _config(listen, require_sandbox, workers, worker)
    assert isinstance(config, RuntimeConfig)
    if detach:
        _detach(config, listen)
        return
    _foreground(config)


def _foreground(config: object) -> None:
    from ..api import Listener
    from ..runtime import DaemonError, RuntimeConfig, run_daemon

    assert isinstance(config, RuntimeConfig)

    def ready(listeners: list[Listener]) -> None:
        for listener in listeners:
            _say(f"heron daemon listening on {listener.kind} {listener.address}")
        if config.token and config.listen is not None:
            _say(f"bearer token: {_token_source(config.home)}")
        sys.stdout.flush()

    try:
        run_daemon(config, on_ready=ready)
    except DaemonError as exc:
        raise _fail(str(exc)) from None


def _detach(config: object, listen: str | None) -> None:
    from ..runtime import RuntimeConfig, daemon_pid, get_json, wait_healthy

    assert isinstance(config, RuntimeConfig)
    running = daemon_pid(config.pid_path)
    if running is not None:
        _already_running(config, running, listen)
        return
    config.home.mkdir(parents=True, exist_ok=True, mode=0o700)
    command = [sys.executable, "-m", "heron", "daemon"]
    if listen is not None:
        command += ["--listen", listen]
    if config.sandbox == "require":
        command += ["--require-sandbox"]
    if config.workers:
        command += ["--workers", str(config.workers)]
    with open(config.log_path, "ab") as log:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # survives this shell; Ctrl-C here does not reach it
            env=os.environ.copy(),
        )
    if not wait_healthy(config.socket_path, timeout=60, alive=lambda: process.poll() is None):
        tail = _tail(config.log_path)
        if process.poll() is None:
            process.terminate()
        raise _fail(f"the daemon did not come up; its log ({config.log_path}) ends:\n{tail}")
    _say(f"heron daemon running (pid {process.pid}) on {config.socket_path}")
    try:
        status = get_json(config.socket_path, "/v1/status")
    except OSError:
        return  # it answered /healthz a moment ago; the TCP address is a nicety
    for listener in status.get("listeners", []):
        if listener.get("kind") == "tcp":
            _say(f"also on tcp {listener['address']} (bearer token: {_token_source(config.home)})")
    sandbox = status.get("sandbox") or {}
    if sandbox and not sandbox.get("active"):
        _say(
            f"warning: node commands run without a sandbox ({sandbox.get('problem')}); "
            "--require-sandbox refuses to start like this",
            err=True,
            style="yellow",
        )


def _already_running(config: object, pid: int, listen: str | None) -> None:
    """``start`` with a daemon up: say so and succeed, unless it lacks the asked-for
    TCP listener (then starting nothing would not give what was asked)."""
    from ..runtime import RuntimeConfig, get_json

    assert isinstance(config, RuntimeConfig)
    where = f"on {config.socket_path}"
    if listen is not None:
        try:
            status = get_json(config.socket_path, "/v1/status")
        except OSError:
            status = {}
        tcp = [
            str(item.get("address", ""))
            for item in status.get("listeners", [])
            if item.get("kind") == "tcp"
        ]
        host, _, port = listen.rpartition(":")
        if not any(
            address == listen or (port == "0" and address.rpartition(":")[0] == host)
            for address in tcp
        ):
            has = f"listens on tcp {', '.join(tcp)}" if tcp else "has no TCP listener"
            raise _fail(
                f"a Heron daemon already runs (pid {pid}) and {has}, not {listen}: "
                "stop it first (heron daemon stop)"
            )
        where += f" and tcp {', '.join(tcp)}"
    _say(f"heron daemon already running (pid {pid}) {where}: nothing to do")


def _token_source(home: Path) -> str:
    """Where the TCP listener's token comes from, for the startup message."""
    if os.environ.get("HERON_TOKEN"):
        return "from HERON_TOKEN"
    return f"stored in {home / 'connect.json'}"


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@daemon_app.command("start")
def start(
    listen: ListenOption = None,
    require_sandbox: RequireSandboxOption = False,
    workers: WorkersOption = None,
) -> None:
    """Start the daemon in the background and return once it answers (what --detach does).

    With a daemon already running it says so and exits 0 (with --listen, only if that
    daemon listens there).
    """
    from ..runtime import RuntimeConfig

    config = _config(listen, require_sandbox, workers)
    assert isinstance(config, RuntimeConfig)
    _detach(config, listen)


@daemon_app.command("stop")
def stop() -> None:
    """Stop the running daemon (runs in progress resume at its next start)."""
    from ..runtime import heron_home, stop_daemon

    home = heron_home()
    try:
        pid = stop_daemon(home / "heron.pid")
    except TimeoutError as exc:
        raise _fail(str(exc)) from None
    if pid is None:
        _say("no Heron daemon is running")
        return
    _say(f"heron daemon (pid {pid}) stopped")


@sys_app.command("connect")
def connect(
    listen: Annotated[
        str, typer.Option("--listen", help="TCP address to listen on, HOST:PORT.")
    ] = "127.0.0.1:7717",
    rotate: Annotated[bool, typer.Option("--rotate", help="Issue a new token.")] = False,
) -> None:
    """Turn on the TCP listener with a bearer token; prints the address and token.

    A running daemon is handed over to a successor that boots with TCP on.
    """
    from ..runtime import (
        daemon_pid,
        heron_home,
        load_connect,
        parse_listen,
        save_connect,
        stop_daemon,
    )

    home = heron_home()
    try:
        address = parse_listen(listen)
        stored = load_connect(home)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    running = daemon_pid(home / "heron.pid")
    if running is not None:
        # Find out before stopping the daemon that its successor could not listen there.
        problem = _cannot_listen(home, *address)
        if problem is not None:
            raise _fail(f"cannot listen on {listen}: {problem} (the daemon keeps running)")
    # HERON_TOKEN, when set, is the token every daemon started here uses: store that one.
    token = os.environ.get("HERON_TOKEN") or None
    if token is not None and rotate:
        raise _fail("HERON_TOKEN is set: it is the token; unset it to have one issued")
    if token is None and not rotate and stored is not None:
        token = stored.token
    info = save_connect(home, listen, token)
    if running is not None:
        try:
            stop_daemon(home / "heron.pid")
        except TimeoutError as exc:
            raise _fail(str(exc)) from None
        config = _config(None)
        _detach(config, None)
    _say(f"address: http://{info.listen}")
    _say(f"token:   {info.token}")
    _say(
        f"Send it as a header: curl -H 'Authorization: Bearer {info.token}' http://{info.listen}/v1/status"
    )
    if running is None:
        _say("No daemon is running: `heron daemon` will listen there too from now on.")


def _cannot_listen(home: Path, host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be bound, or ``None`` if it can (or the daemon holds it)."""
    from ..runtime import get_json

    with contextlib.suppress(OSError):
        status = get_json(home / "heron.sock", "/v1/status")
        for listener in status.get("listeners", []):
            if listener.get("kind") == "tcp" and port != 0:
                bound_host, _, bound_port = str(listener.get("address")).rpartition(":")
                if bound_host.strip("[]") == host and bound_port == str(port):
                    return None  # the running daemon's own listener: its successor takes it over
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


_STATUS_ORDER = ("running", "dormant", "interrupted", "completed", "failed", "cancelled")
"""Node statuses in the order ``heron daemon status`` lists them (unknown ones follow)."""


@daemon_app.command("status")
def status(
    as_json: Annotated[bool, typer.Option("--json", help="Print GET /v1/status as JSON.")] = False,
) -> None:
    """Whether a daemon runs: pid, version, uptime, listeners, node counts, and the daemons
    sharing its database (executor ids, heartbeats, running counts).

    It never starts one. Reaches the daemon as every client does: HERON_BASE_URL
    (with HERON_TOKEN or the token `heron sys connect` stored), else HERON_SOCKET,
    else $HERON_HOME/heron.sock. Exit status: 0 running, 1 not running or an error.
    """
    from ..client import APIConnectionError, APIError, Heron
    from ._nodes import api_error_text

    try:
        client = Heron(auto_start=False)
    except (TypeError, ValueError) as exc:  # a malformed HERON_BASE_URL, say
        raise _fail(str(exc)) from None
    with client:
        try:
            info = client.system.status()
        except APIConnectionError as exc:
            if exc.code != "daemon_unavailable":
                raise _fail(api_error_text(exc)) from None
            _say(f"no Heron daemon is running at {client.settings.address}")
            raise typer.Exit(1) from None
        except APIError as exc:
            raise _fail(api_error_text(exc)) from None
    if as_json:
        typer.echo(info.model_dump_json(indent=2))
        return
    for line in status_lines(info):
        _say(line)


def status_lines(info: SystemStatus) -> list[str]:
    """``heron daemon status`` as lines of text."""
    since = info.started_at.astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")
    listeners = [
        f"{item.kind} {item.address} ({'bearer token' if item.auth == 'bearer' else 'filesystem'})"
        for item in info.listeners
    ] or ["(none)"]
    lines = [
        f"heron daemon is running (pid {info.pid})",
        f"  version    {info.version}",
        f"  uptime     {duration(info.uptime_seconds)} (since {since})",
        f"  listening  {listeners[0]}",
        *(f"             {more}" for more in listeners[1:]),
        f"  nodes      {node_counts(info.nodes)}",
        f"  database   {info.database}",
        f"  provider   {info.provider}",
        f"  sandbox    {sandbox_line(info)}",
    ]
    if info.daemons:
        alive = sum(1 for d in info.daemons if d.alive)
        many = len(info.daemons)
        lines.append(f"  daemons    {many} on the database ({alive} alive)")
        lines.extend(f"             {daemon_line(d)}" for d in info.daemons)
    return lines


def daemon_line(daemon: DaemonInfo, now: datetime | None = None) -> str:
    """One daemon sharing the database: ``host-1a2b (this one) on host, pid 12: 3 running,
    beat 2s ago``; a dead one says so, and who took over its runs."""
    now = now or datetime.now(UTC)
    this = " (this one)" if daemon.this else ""
    if daemon.role == "worker":
        this += f" (worker of {daemon.front})"
    elif daemon.role == "front":
        this += " (front: runs no nodes)"
    where = f"{daemon.executor_id}{this} on {daemon.host}, pid {daemon.pid}"
    ago = duration((now - daemon.heartbeat_at).total_seconds())
    if daemon.alive:
        return f"{where}: {daemon.running} running, beat {ago} ago"
    state = "stopped" if daemon.stopped_at is not None else f"DEAD (silent for {ago})"
    taken = f", runs taken over by {daemon.recovered_by}" if daemon.recovered_by else ""
    return f"{where}: {state}{taken}"


def sandbox_line(info: SystemStatus) -> str:
    """Whether node commands run sandboxed, and how ``/v1/bash`` commands are held."""
    box = info.sandbox
    host = "PID namespace" if box.host_commands == "pid_namespace" else "process group"
    if box.active:
        return f"{box.backend} (node commands); /v1/bash commands in a {host}"
    return f"NONE: node commands run unconfined ({box.problem}); /v1/bash in a {host}"


def node_counts(counts: dict[str, int]) -> str:
    """``2 running · 1 dormant (3 in all)``; statuses with no node are left out."""
    order = [*_STATUS_ORDER, *sorted(set(counts) - set(_STATUS_ORDER))]
    parts = [f"{counts[name]} {name}" for name in order if counts.get(name)]
    if not parts:
        return "none"
    return f"{' · '.join(parts)} ({sum(counts.values())} in all)"


def duration(seconds: float) -> str:
    """A span for people: ``12s``, ``4m 05s``, ``3h 12m``, ``2d 03h``."""
    whole = max(0, int(seconds))
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours:02d}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"
