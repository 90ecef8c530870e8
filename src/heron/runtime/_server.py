"""Running the daemon: bind the listeners, serve the API, stop cleanly."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import sys
from collections.abc import Callable

import uvicorn

from .. import api
from ._app import build_app, wrap
from ._config import RuntimeConfig
from ._engine import Engine
from ._errors import DaemonError
from ._local import daemon_pid, get_json

__all__ = ["DaemonError", "run_daemon", "serve"]

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
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(512)
    sock.setblocking(False)
    return sock


def _tcp_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise DaemonError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(512)
    sock.setblocking(False)
    return sock


async def serve(config: RuntimeConfig, *, on_ready: Callable[[list[api.Listener]], None]) -> None:
    """Serve until SIGINT/SIGTERM; then stop accepting, save events and return."""
    home = config.home
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    other = daemon_pid(config.pid_path)
    if other is not None and other != os.getpid():
        raise DaemonError(f"a Heron daemon already runs (pid {other}); `heron daemon stop` first")
    if config.listen is not None and not config.token:
        raise DaemonError("the TCP listener needs a token (HERON_TOKEN or `heron sys connect`)")
    sockets = [_unix_socket(config.socket_path)]
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
        engine = Engine(config)
        engine.listeners = listeners
        await engine.start()
    except BaseException:
        for sock in sockets:
            sock.close()
        with contextlib.suppress(OSError):
            os.unlink(config.socket_path)
        raise
    app = wrap(build_app(engine), token=config.token, max_body_bytes=config.max_body_bytes)
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            lifespan="off",
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=3,
            timeout_keep_alive=30,
        )
    )
    config.pid_path.write_text(f"{os.getpid()}\n")
    original_startup = server.startup

    async def startup(sockets: list[socket.socket] | None = None) -> None:
        await original_startup(sockets=sockets)
        on_ready(listeners)

    server.startup = startup  # type: ignore[method-assign]
    try:
        await server.serve(sockets=sockets)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(config.socket_path)
        with contextlib.suppress(OSError):
            if daemon_pid(config.pid_path) == os.getpid():
                config.pid_path.unlink()
        await engine.stop()


def run_daemon(config: RuntimeConfig, *, on_ready: Callable[[list[api.Listener]], None]) -> None:
    """Run the daemon in this process until it is told to stop.

    Node runs still going at the end are not cancelled: the process exits with
    their workflows pending, and the next start resumes each from its last
    completed step, exactly as after a crash.
    """
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")

    async def main() -> None:
        await serve(config, on_ready=on_ready)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)  # leave in-flight runs pending for the next start (see above)

    asyncio.run(main())
