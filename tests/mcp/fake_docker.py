"""A Docker Engine API stand-in on a Unix socket, for Computer's Docker backend.

Not a test module. It speaks the HTTP the Docker SDK sends (version, ping, info,
create, inspect, start, logs, remove) and "runs" a container as a plain
subprocess, with the container's bind mounts mapped back to their host folders.
It records every request so tests can check what Computer asked for.
"""

from __future__ import annotations

import json
import re
import socketserver
import struct
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any


@dataclass
class FakeContainer:
    """One created container: its create body, and the process standing in for it."""

    id: str
    spec: dict[str, Any]
    process: subprocess.Popen[bytes] | None = None
    logs: bytes = b""


@dataclass
class FakeEngine:
    """The engine's state and behaviour switches."""

    socket: Path
    fail_start: bool = False
    """Answer 500 to every container start."""
    run_containers: bool = True
    """Start a subprocess for a started container (else it runs but never listens)."""
    canned_logs: bytes = b""
    """What a container's logs say when no process runs for it."""
    requests: list[tuple[str, str]] = field(default_factory=list)
    containers: dict[str, FakeContainer] = field(default_factory=dict)
    removed: list[str] = field(default_factory=list)


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    engine: FakeEngine


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return None  # quiet: a Unix client has no address to print

    def do_GET(self) -> None:
        self._route("GET")

    def do_POST(self) -> None:
        self._route("POST")

    def do_DELETE(self) -> None:
        self._route("DELETE")

    def _route(self, method: str) -> None:
        engine = self.server.engine
        path = re.sub(r"^/v[\d.]+", "", self.path.split("?")[0])
        engine.requests.append((method, path))
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        found = re.fullmatch(r"/containers/(\w+)/?(\w*)", path)
        if path == "/version":
            self._json(200, {"ApiVersion": "1.43", "Version": "24.0.0"})
        elif path == "/_ping":
            self._send(200, b"OK", "text/plain")
        elif path == "/info":
            self._json(200, {"SecurityOptions": ["name=seccomp,profile=builtin"]})
        elif path == "/containers/create":
            container = FakeContainer(id=f"c{len(engine.containers) + 1}", spec=body or {})
            engine.containers[container.id] = container
            self._json(201, {"Id": container.id, "Warnings": []})
        elif found is not None and found[1] in engine.containers:
            self._container(method, engine.containers[found[1]], found[2])
        else:
            self._json(404, {"message": f"no such thing: {method} {path}"})

    def _container(self, method: str, container: FakeContainer, action: str) -> None:
        engine = self.server.engine
        if method == "DELETE":
            if container.process is not None:
                if container.process.poll() is None:
                    container.process.terminate()
                    container.process.wait(10)
                if container.process.stderr is not None:
                    container.process.stderr.close()
            del engine.containers[container.id]
            engine.removed.append(container.id)
            self._send(204, b"", "text/plain")
        elif action == "json":
            running = container.process is not None and container.process.poll() is None
            status = "running" if running or not engine.run_containers else "exited"
            if container.process is None and engine.run_containers:
                status = "created"
            self._json(
                200,
                {
                    "Id": container.id,
                    "Name": f"/{container.id}",
                    "State": {"Status": status},
                    "Config": {"Tty": False},
                },
            )
        elif action == "start":
            if engine.fail_start:
                self._json(500, {"message": "cannot start: no such file /nope"})
                return
            if engine.run_containers:
                container.process = _run(container.spec)
            self._send(204, b"", "text/plain")
        elif action == "logs":
            logs = container.logs or engine.canned_logs
            if container.process is not None and container.process.poll() is not None:
                assert container.process.stderr is not None
                logs = container.process.stderr.read()
            frame = struct.pack(">BxxxL", 2, len(logs)) + logs if logs else b""
            self._send(200, frame, "application/vnd.docker.raw-stream")
        else:
            self._json(404, {"message": f"no such action {action}"})

    def _json(self, status: int, value: object) -> None:
        self._send(status, json.dumps(value).encode(), "application/json")

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _run(spec: dict[str, Any]) -> subprocess.Popen[bytes]:
    """The container's command as a subprocess, its binds mapped back to host folders."""
    binds = {}
    for bind in spec["HostConfig"]["Binds"]:
        host, inside, _mode = bind.split(":")
        binds[inside] = host

    def mapped(arg: str) -> str:
        for inside, host in binds.items():
            if arg.startswith(inside):
                return host + arg[len(inside) :]
        return arg

    command = [sys.executable if a == "python" else mapped(a) for a in spec["Cmd"]]
    return subprocess.Popen(
        command,
        cwd=mapped(spec["WorkingDir"]),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


class RunningEngine:
    """A :class:`FakeEngine` serving on its socket in a thread until :meth:`stop`."""

    def __init__(self, socket: Path) -> None:
        self.engine = FakeEngine(socket)
        self._server = _Server(str(socket), _Handler)
        self._server.engine = self.engine
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)
        for container in self.engine.containers.values():
            if container.process is not None and container.process.poll() is None:
                container.process.kill()
                container.process.wait(10)
            if container.process is not None and container.process.stderr is not None:
                container.process.stderr.close()
