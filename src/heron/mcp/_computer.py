"""Sandboxed tool execution: a Heron tool server in a container or in its own namespaces."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from ..tools import Sandbox, find_bwrap, sandbox_environment
from ._connections import UnixSocketConnection
from ._errors import ComputerError
from ._forward import forward_socket_name, serve_outside
from ._lifecycle import Lifecycle

__all__ = ["DEFAULT_TOOLS", "Computer"]

SANDBOX_IMAGE = "heron-sandbox:latest"
"""Default Docker image: any image with Python and Heron installed will do; build this
one from the repository with ``docker build -f docker/sandbox.Dockerfile -t heron-sandbox .``."""
CONTAINER_MOUNT = "/workspace"
"""Where ``mount_path`` appears inside a Docker sandbox."""
_SOCKET_NAME = "mcp.sock"

DEFAULT_TOOLS = ("heron.tools:filesystem_tools", "heron.tools:bash_tools")
"""What a :class:`Computer` serves unless told otherwise: the file and shell tools,
working in its mount."""


class Computer(Lifecycle):
    """Runs a Heron MCP tool server in a sandbox and hands back a ready connection.

    By default it serves the built-in file and shell tools (``fs-*`` and
    ``bash-*``), working in ``mount_path``: one line runs them sandboxed::

        async with Computer("/srv/job-17", backend="bubblewrap") as computer:
            async with MCPClient("job-17", computer.get_connection()) as client:
                agent = BaseAgent(provider=provider, tool_client=client)
                ...

    ``tools`` names others (``["my_tools:FILE_TOOLS"]``, ``["heron.tools:catalog"]``
    for every built-in tool).

    Two backends:

    - ``"docker"`` (default): a container of ``image`` started through the
      Docker Engine API, ``mount_path`` mounted at ``/workspace``, ``ports``
      published on the same host ports (``"*"``: host networking).
      ``start()`` fails at once when no engine is reachable.
    - ``"bubblewrap"``: no Docker needed; the server runs as a subprocess under
      ``bwrap`` (:class:`heron.tools.Sandbox`) in its own user, PID, IPC and
      network namespaces. It sees ``/usr``, ``/etc`` (and the ``/bin``,
      ``/lib``... links), the Python installation, the folders on ``sys.path``
      and the tool files' folders, all read-only; ``mount_path`` (at its own
      path), writable; a private ``/tmp``, which is also its ``HOME``. Nothing
      else of the host (homes, ``/root``, ``/var``, ``/run``...) exists inside.
      Its environment is cleared down to ``PATH``, ``LANG``, ``LC_*``, ``TZ``,
      ``TERM`` and ``PYTHONPATH``: the agent's API keys do not reach the tools.
      Its network is its own loopback: each of ``ports`` is forwarded from
      ``127.0.0.1:PORT`` on the host to the same port inside (a server the tools
      start there is reachable from the host), and nothing else of the host
      network is reachable from inside. ``"*"`` shares the host network whole.

    ``tools`` are ``module:attribute`` or ``file.py:attribute`` specs loaded
    by ``python -m heron.mcp serve`` inside the sandbox.
    """

    def __init__(
        self,
        mount_path: str | os.PathLike[str],
        ports: Sequence[int] | Literal["*"] = (),
        *,
        tools: Sequence[str] | None = None,
        backend: Literal["docker", "bubblewrap"] = "docker",
        image: str = SANDBOX_IMAGE,
        start_timeout: float = 30.0,
    ) -> None:
        mount = Path(mount_path).resolve()
        if not mount.is_dir():
            raise ComputerError(f"mount_path {mount} is not a folder")
        if ports != "*" and (
            isinstance(ports, str) or not all(isinstance(p, int) and 0 < p < 65536 for p in ports)
        ):
            raise ComputerError(f'ports must be a list of port numbers or "*", not {ports!r}')
        if isinstance(tools, str):
            raise ComputerError("tools must be a list of module:attribute specs")
        if tools is not None and not tools:
            raise ComputerError(
                "tools is empty: a Computer serves at least one tool spec "
                f"(leave tools out for the file and shell tools: {', '.join(DEFAULT_TOOLS)})"
            )
        if backend not in ("docker", "bubblewrap"):
            raise ComputerError(f"backend must be 'docker' or 'bubblewrap', not {backend!r}")
        self.mount_path = mount
        """The host folder the sandbox may write to."""
        self.ports: tuple[int, ...] | Literal["*"] = ports if ports == "*" else tuple(ports)
        """Ports reachable from outside, or ``"*"`` for the host network."""
        self.tools = DEFAULT_TOOLS if tools is None else tuple(tools)
        """Tool specs the sandboxed server loads."""
        self.backend = backend
        """``"docker"`` or ``"bubblewrap"``."""
        self.image = image
        """Docker image of the sandbox."""
        self.start_timeout = start_timeout
        """Seconds to wait for the server inside to listen."""
        self._socket_dir: Path | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._container: Any = None
        self._docker: Any = None  # the Docker SDK's client, closed on stop()
        self._log: Path | None = None
        self._forwards: list[asyncio.Server] = []  # bubblewrap: the host ends of ``ports``

    @property
    def socket_path(self) -> Path:
        """The host path of the sandboxed server's socket (once started)."""
        if self._socket_dir is None:
            raise ComputerError("the computer is not started")
        return self._socket_dir / _SOCKET_NAME

    def get_connection(self) -> UnixSocketConnection:
        """A client connection to the sandboxed server (after :meth:`start`)."""
        return UnixSocketConnection(mode="client", path=self.socket_path)

    async def start(self) -> None:
        """Start the sandbox and wait until its server listens."""
        if self._socket_dir is not None:
            raise ComputerError("the computer is already started")
        self._socket_dir = Path(tempfile.mkdtemp(prefix="heron-computer-"))
        self._log = self._socket_dir / "server.log"
        try:
            if self.backend == "docker":
                await self._start_docker()
            else:
                await self._start_bubblewrap()
            await self._wait_listening()
            if self.backend == "bubblewrap" and self.ports != "*":
                await self._forward_ports()
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> None:
        """Stop and remove the sandbox; safe to call twice."""
        forwards, self._forwards = self._forwards, []
        for forward in forwards:
            forward.close()
        process, self._process = self._process, None
        if process is not None and process.returncode is None:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 5.0)
            except TimeoutError:
                process.kill()
                await process.wait()
        container, self._container = self._container, None
        if container is not None:
            await asyncio.to_thread(_remove_container, container)
        docker_client, self._docker = self._docker, None
        if docker_client is not None:
            await asyncio.to_thread(docker_client.close)
        socket_dir, self._socket_dir = self._socket_dir, None
        if socket_dir is not None:
            shutil.rmtree(socket_dir, ignore_errors=True)

    async def close(self) -> None:
        """Same as :meth:`stop`: what ``async with`` calls on the way out."""
        await self.stop()

    def _serve_command(self, python: str, socket: str) -> list[str]:
        return [python, "-m", "heron.mcp", "serve", *self.tools, "--unix", socket]

    async def _start_docker(self) -> None:
        import docker  # only the docker backend needs the SDK loaded
        import docker.errors

        endpoint = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
        # Probed with a socket of our own first: the SDK leaks one when the engine is away.
        reachable = await asyncio.to_thread(_engine_listens, endpoint)
        try:
            if not reachable:
                raise ConnectionRefusedError(f"nothing listens at {endpoint}")
            client = await asyncio.to_thread(docker.from_env)
            self._docker = client
            await asyncio.to_thread(client.ping)
            rootless = await asyncio.to_thread(_engine_is_rootless, client)
        except Exception as exc:  # the SDK raises requests' errors as well as its own
            raise ComputerError(
                f"no Docker engine is reachable ({exc}); start one, set DOCKER_HOST, "
                "or use Computer(..., backend='bubblewrap')"
            ) from None
        assert self._socket_dir is not None
        options: dict[str, Any] = {
            "command": self._serve_command("python", f"/run/heron/{_SOCKET_NAME}"),
            "volumes": {
                str(self.mount_path): {"bind": CONTAINER_MOUNT, "mode": "rw"},
                str(self._socket_dir): {"bind": "/run/heron", "mode": "rw"},
            },
            "working_dir": CONTAINER_MOUNT,
        }
        if not rootless:
            # A rootful engine runs the image as root: its socket and the files it
            # writes in the mount would belong to root, out of this user's reach.
            # (A rootless engine maps the container's root to this user already.)
            options["user"] = f"{os.getuid()}:{os.getgid()}"
        if self.ports == "*":
            options["network_mode"] = "host"
        else:
            options["ports"] = {f"{p}/tcp": p for p in self.ports}
        try:
            # Created, then started: a container that fails to start is still
            # known here, so stop() removes it instead of leaving it behind.
            self._container = await asyncio.to_thread(
                lambda: client.containers.create(self.image, **options)
            )
            await asyncio.to_thread(self._container.start)
        except docker.errors.DockerException as exc:
            raise ComputerError(f"could not start a container of {self.image}: {exc}") from None

    async def _start_bubblewrap(self) -> None:
        if find_bwrap() is None:
            raise ComputerError(
                "bubblewrap is not installed (apt-get install bubblewrap), or use Docker"
            )
        assert self._socket_dir is not None and self._log is not None
        sockets = str(self._socket_dir)
        sandbox = Sandbox(
            visible=tuple(self._code_paths()),
            writable=(str(self.mount_path), sockets),
            network=self.ports == "*",
        )
        serve = self._serve_command(sys.executable, str(self.socket_path))
        if self.ports != "*":
            for port in self.ports:
                serve += ["--forward", f"{port}={self._socket_dir / forward_socket_name(port)}"]
        with self._log.open("wb") as log:
            self._process = await asyncio.create_subprocess_exec(
                *sandbox.wrap(serve, self.mount_path),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=_sandbox_env(),  # only what the tool server needs: no keys, no tokens
                start_new_session=True,
            )

    async def _forward_ports(self) -> None:
        """Listen on ``127.0.0.1:PORT`` for each port, relayed into the sandbox."""
        assert self._socket_dir is not None and self.ports != "*"
        for port in self.ports:
            try:
                self._forwards.append(
                    await serve_outside(port, str(self._socket_dir / forward_socket_name(port)))
                )
            except OSError as exc:
                raise ComputerError(f"cannot forward port {port}: {exc}") from None

    def _code_paths(self) -> list[str]:
        """The Python installation, the import path and the tool files' folders."""
        wanted = {sys.prefix, sys.base_prefix, sys.exec_prefix, *sys.path}
        for spec in self.tools:
            where = spec.rpartition(":")[0]
            if where.endswith(".py"):
                wanted.add(str(Path(where).resolve().parent))
        # Parents before children: a child bound later stays visible inside its parent.
        return sorted(p for p in wanted if p.startswith("/") and Path(p).exists())

    async def _wait_listening(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        while not _accepts(self.socket_path):
            if self._process is not None and self._process.returncode is not None:
                raise ComputerError(f"the sandboxed server exited: {self._log_tail()}")
            if self._container is not None:
                await asyncio.to_thread(self._container.reload)
                if self._container.status in ("exited", "dead"):
                    logs = await asyncio.to_thread(self._log_tail)
                    raise ComputerError(f"the sandbox container exited: {logs}")
            if time.monotonic() > deadline:
                # The container's logs or the process's output: why it never listened.
                logs = await asyncio.to_thread(self._log_tail)
                raise ComputerError(
                    f"the sandboxed server did not listen within {self.start_timeout:g} s: {logs}"
                )
            await asyncio.sleep(0.02)  # polling a file the sandbox creates: no event to wait on

    def _log_tail(self) -> str:
        if self._container is not None:
            try:
                logs: bytes = self._container.logs(tail=50)
            except Exception as exc:  # the SDK raises requests' errors as well as its own
                return f"(container logs unavailable: {exc})"
            return logs.decode(errors="replace")[-2000:].strip() or "(no output)"
        if self._log is None or not self._log.exists():
            return "(no output)"
        return self._log.read_text(errors="replace")[-2000:].strip() or "(no output)"


def _sandbox_env() -> dict[str, str]:
    """The variables a sandboxed server gets: locale, PATH and import path, HOME=/tmp."""
    return sandbox_environment(keep=("PYTHONPATH",))


def _accepts(path: Path) -> bool:
    """Whether a server listens on the socket ``path`` (its file exists before it listens)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
    except OSError:
        return False
    finally:
        probe.close()
    return True


def _engine_listens(endpoint: str) -> bool:
    """Whether something accepts connections at a ``DOCKER_HOST`` address."""
    scheme, _, rest = endpoint.partition("://")
    if scheme == "unix":
        return _accepts(Path(rest))
    if scheme in ("tcp", "http", "https"):
        host, _, port = rest.rstrip("/").rpartition(":")
        try:
            socket.create_connection((host, int(port)), timeout=2).close()
        except (OSError, ValueError):
            return False
        return True
    return True  # ssh:// and others: let the SDK try


def _engine_is_rootless(client: Any) -> bool:
    """Whether the Docker engine runs rootless (its root is the host user)."""
    options = client.info().get("SecurityOptions") or []
    return any("name=rootless" in option for option in options)


def _remove_container(container: Any) -> None:
    import docker.errors

    try:
        container.remove(force=True)
    except docker.errors.NotFound:
        pass
