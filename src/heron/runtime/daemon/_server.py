"""Running the daemon: bind the listeners, serve the API, stop cleanly."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import uvicorn

from ... import api
from .._config import RuntimeConfig
from .._local import daemon_pid, get_json
from ..db import DatabaseUnavailable
from ..nodes import Engine
from ..server import DaemonError, configure_logging, stopping
from ..ui import Page
from ._app import build_app, wrap
from ._features import FEATURES
from ._workers import Workers, serve_worker

__all__ = ["run_daemon", "serve"]

log = logging.getLogger("heron.runtime")


def _unix_socket(path: os.PathLike[str] | str) -> socket.socket:
    path = os.fspath(path)
    if os.path.exists(path):
        with contextlib.suppress(OSError):
            get_json(path, "/healthz", timeout=1.0)
            raise DaemonError(f"a Heron daemon already answers on {path}")
        os.unlink(path)  # left behind by a daemon that died
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)  # born 0600: no window where others could connect
    try:
        sock.bind(path)
    except OSError as exc:  # no such directory, not writable, path too long: one line
        sock.close()
        raise DaemonError(f"cannot listen on {path}: {exc.strerror or exc}") from None
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(512)
    sock.setblocking(False)
    return sock


def _tcp_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named, not 0: asyncio turns Nagle off only on accepted sockets whose
    # proto says TCP (they inherit this one's), and with Nagle on, every answer on a
    # kept-alive connection waited ~40 ms for the client's delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise DaemonError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(512)
    sock.setblocking(False)
    return sock


class _Server(uvicorn.Server):
    """uvicorn, minus re-raising SIGTERM/SIGINT once it has shut down.

    uvicorn re-raises the signal so that the default action ends the process;
    that would kill the daemon before it removes its socket and pid file and
    writes its pending events. The daemon exits on its own once it has.
    """

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """Turn SIGINT and SIGTERM into a graceful shutdown while serving."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        handled = (signal.SIGINT, signal.SIGTERM)
        original = {sig: signal.signal(sig, self.handle_exit) for sig in handled}
        try:
            yield
        finally:
            for sig, handler in original.items():
                signal.signal(sig, handler)


def _private_home(home: Path) -> None:
    """Create ``home`` as 0700, or tighten it: it holds the database and the token."""
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    info = home.stat()
    if info.st_uid == os.getuid() and info.st_mode & 0o077:
        os.chmod(home, 0o700)


def _hold_lock(path: Path, pid_path: Path) -> int:
    """Take the daemon lock of this home (one daemon per home) and keep its descriptor.

    The kernel drops the lock when the process dies, however it dies, so a stale
    pid file can never pass for a running daemon (see ``_local.daemon_pid``).
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    # A client probing the lock holds it shared for a moment: retry briefly before giving up.
    deadline = time.monotonic() + 1.0
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(fd)
                other = daemon_pid(pid_path)
                which = f" (pid {other})" if other is not None else ""
                message = f"a Heron daemon already runs on {path.parent}{which}"
                raise DaemonError(f"{message}; `heron daemon stop` first") from None
            time.sleep(0.02)


async def serve(config: RuntimeConfig, *, on_ready: Callable[[list[api.Listener]], None]) -> None:
    """Serve until SIGINT/SIGTERM; then stop accepting, save events and return.

    With ``config.workers``, the node runs go to that many worker processes this one
    starts (see ``_workers.py``); a worker (``config.worker``) serves no API."""
    if config.role == "worker":
        await serve_worker(config)
        return
    if config.listen is not None and not config.token:
        raise DaemonError("the TCP listener needs a token (HERON_TOKEN or `heron sys connect`)")
    _private_home(config.home)
    lock = _hold_lock(config.lock_path, config.pid_path)
    try:
        await _serve_locked(config, on_ready)
    finally:
        os.close(lock)


async def _serve_locked(
    config: RuntimeConfig, on_ready: Callable[[list[api.Listener]], None]
) -> None:
    # Written at once, so `heron daemon stop` reaches a daemon that is still starting.
    config.pid_path.write_text(f"{os.getpid()}\n")
    try:
        sockets = [_unix_socket(config.socket_path)]
    except BaseException:
        _remove_pid(config)
        raise
    listeners = [
        api.Listener(kind="unix", address=str(config.socket_path), auth="filesystem"),
    ]
    try:
        if config.listen is not None:
            tcp = _tcp_socket(*config.listen)
            sockets.append(tcp)
            host, port = tcp.getsockname()[:2]
            shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
            listeners.append(api.Listener(kind="tcp", address=shown, auth="bearer"))
        engine = Engine(config, FEATURES)
        engine.listeners = listeners
        try:
            await engine.start()
        except DatabaseUnavailable as exc:  # one readable line, no traceback, no password
            raise DaemonError(str(exc)) from None
    except BaseException:
        for sock in sockets:
            sock.close()
        with contextlib.suppress(OSError):
            os.unlink(config.socket_path)
        _remove_pid(config)
        raise
    api_app = build_app(engine)
    app = wrap(
        api_app,
        token=config.token,
        sessions=engine.features.get(Page).sessions,
        max_body_bytes=config.max_body_bytes,
        body_limits={
            path: limit
            for feature in engine.features
            for path, limit in feature.body_limits.items()
        },
    )
    server = _Server(
        uvicorn.Config(
            app,
            lifespan="off",
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=3,
            timeout_keep_alive=30,
        )
    )
    original_startup = server.startup

    async def startup(sockets: list[socket.socket] | None = None) -> None:
        await original_startup(sockets=sockets)
        on_ready(listeners)

    server.startup = startup  # type: ignore[method-assign]
    original_shutdown = server.shutdown

    async def shutdown(sockets: list[socket.socket] | None = None) -> None:
        # Ended first, their requests answer at once rather than holding the graceful
        # shutdown until it gives up on them (cancelled mid-answer, with a traceback):
        # event streams end, long polls answer, commands are killed.
        stopping(api_app).set()
        for feature in engine.features:
            await feature.end_requests()
        await original_shutdown(sockets=sockets)

    server.shutdown = shutdown  # type: ignore[method-assign]

    async def open_tcp(host: str, port: int) -> api.Listener:
        sock = _tcp_socket(host, port)
        # What uvicorn's own startup does for each socket, for one opened while serving;
        # it joins ``server.servers``, so the shutdown closes and drains it with the rest.
        uv = server.config

        def protocol(_loop: asyncio.AbstractEventLoop | None = None) -> asyncio.Protocol:
            made: asyncio.Protocol = uv.http_protocol_class(  # type: ignore[call-arg]
                config=uv,
                server_state=server.server_state,
                app_state=server.lifespan.state,
                _loop=_loop,
            )
            return made

        loop = asyncio.get_running_loop()
        try:
            opened = await loop.create_server(protocol, sock=sock, backlog=uv.backlog)
        except BaseException:
            sock.close()
            raise
        server.servers.append(opened)
        bound_host, bound_port = sock.getsockname()[:2]
        shown = (
            f"[{bound_host}]:{bound_port}" if ":" in bound_host else f"{bound_host}:{bound_port}"
        )
        listener = api.Listener(
            kind="tcp", address=shown, auth="bearer" if config.token else "session"
        )
        listeners.append(listener)
        log.info("listening on %s too", shown)
        return listener

    engine.open_listener = open_tcp
    workers = Workers(config)
    workers.start()
    try:
        await server.serve(sockets=sockets)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(config.socket_path)
        # Not taking over the workers as they stop: they resume their own runs next start.
        await engine.cluster.stop()
        await workers.stop()
        _remove_pid(config)
        await engine.stop()


def _remove_pid(config: RuntimeConfig) -> None:
    with contextlib.suppress(OSError, ValueError):
        if int(config.pid_path.read_text().strip()) == os.getpid():
            config.pid_path.unlink()


def run_daemon(config: RuntimeConfig, *, on_ready: Callable[[list[api.Listener]], None]) -> None:
    """Run the daemon in this process until it is told to stop.

    Node runs still going at the end are not cancelled: the process exits with
    their workflows pending, and the next start resumes each from its last
    completed step, exactly as after a crash.
    """
    configure_logging()

    async def main() -> None:
        await serve(config, on_ready=on_ready)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)  # leave in-flight runs pending for the next start (see above)

    asyncio.run(main())
