"""Where the daemon is and how to reach it: constructor arguments, then the environment.

``HERON_BASE_URL``, ``HERON_SOCKET``, ``HERON_HOME`` and ``HERON_TOKEN`` are read
once, when a client is constructed. A client on the Unix socket starts the daemon
itself when nothing listens there (``auto_start``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from ._errors import APIConnectionError

__all__ = ["DEFAULT_MAX_RETRIES", "DEFAULT_TIMEOUT", "Settings", "start_daemon"]

DEFAULT_TIMEOUT = 60.0
"""Seconds a request may take unless the call or the client says otherwise."""
DEFAULT_MAX_RETRIES = 2
"""Retries of a ``GET``/``HEAD``/``DELETE`` unless the call or the client says otherwise."""
START_TIMEOUT = 60.0
"""Seconds a started daemon has to answer ``/healthz``."""

_RACE_GRACE = 10.0
"""Seconds to wait for a daemon someone else is starting when ours could not start."""

_SOCKET_HOST = "http://heron"
"""The base URL of requests over the Unix socket (the host is never resolved)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Settings:
    """A client's resolved connection settings."""

    base_url: str
    """``http://host:port`` of the TCP listener, or a placeholder over the Unix socket."""
    socket_path: Path | None
    """The Unix socket, or ``None`` over TCP."""
    home: Path
    """The daemon's directory (where an auto-started daemon keeps its files)."""
    token: str | None
    """Bearer token sent on every request (the TCP listener requires it)."""
    timeout: float
    """Default seconds per request."""
    max_retries: int
    """Default retries of a ``GET``/``HEAD``/``DELETE``."""
    auto_start: bool
    """Start the daemon when the Unix socket is cold."""
    headers: Mapping[str, str] = field(default_factory=dict)
    """Headers sent on every request."""

    @classmethod
    def resolve(
        cls,
        *,
        base_url: str | None,
        socket_path: str | os.PathLike[str] | None,
        home: str | os.PathLike[str] | None,
        token: str | None,
        timeout: float,
        max_retries: int,
        auto_start: bool,
        headers: Mapping[str, str] | None,
    ) -> Settings:
        """Settings from arguments, falling back to the environment (read now, once).

        An explicit ``base_url`` or ``socket_path`` wins; otherwise ``HERON_BASE_URL``,
        then ``HERON_SOCKET``, then ``$HERON_HOME/heron.sock`` (``~/.heron``).
        ``TypeError`` if both ``base_url`` and ``socket_path`` are given.
        """
        if base_url is not None and socket_path is not None:
            raise TypeError("pass base_url (TCP) or socket_path (Unix socket), not both")
        if isinstance(timeout, bool) or not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if isinstance(max_retries, bool) or max_retries < 0:
            raise ValueError(f"max_retries must be 0 or more, got {max_retries!r}")
        env = os.environ
        home_path = Path(home or env.get("HERON_HOME") or Path.home() / ".heron").expanduser()
        token = token if token is not None else (env.get("HERON_TOKEN") or None)
        if base_url is None and socket_path is None:
            base_url = env.get("HERON_BASE_URL") or None
            if base_url is None:
                socket_path = env.get("HERON_SOCKET") or home_path / "heron.sock"
        common = {
            "home": home_path,
            "timeout": float(timeout),
            "max_retries": max_retries,
            "headers": dict(headers or {}),
        }
        if base_url is not None:
            url = _check_base_url(base_url)
            if token is None:
                token = _stored_token(home_path, url)
            return cls(base_url=url, socket_path=None, token=token, auto_start=False, **common)  # type: ignore[arg-type]
        assert socket_path is not None
        return cls(
            base_url=_SOCKET_HOST,
            socket_path=Path(socket_path).expanduser(),
            token=token,
            auto_start=auto_start,
            **common,  # type: ignore[arg-type]
        )

    @property
    def address(self) -> str:
        """Where the daemon is, for messages: ``unix:/path`` or the base URL."""
        return f"unix:{self.socket_path}" if self.socket_path is not None else self.base_url

    def transport_kwargs(self) -> dict[str, object]:
        """Keyword arguments for ``httpx.HTTPTransport`` / ``AsyncHTTPTransport``."""
        if self.socket_path is not None:
            return {"uds": os.fspath(self.socket_path)}
        return {}


def _check_base_url(value: str) -> str:
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            f"base_url must be an http(s) URL such as http://127.0.0.1:7717, got {value!r}"
        )
    return value.strip().rstrip("/")


def _stored_token(home: Path, base_url: str) -> str | None:
    """The token ``heron sys connect`` stored for this address, if it is that address."""
    try:
        data = json.loads((home / "connect.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("token"), str):
        return None
    listen = str(data.get("listen", ""))
    parts = urlsplit(base_url)
    stored_host, _, stored_port = listen.rpartition(":")
    if parts.port is not None and str(parts.port) == stored_port:
        if stored_host.strip("[]") in (parts.hostname, "0.0.0.0", "::"):
            return str(data["token"])
    return None


_start_lock = threading.Lock()


def start_daemon(settings: Settings) -> None:
    """Start the daemon for ``settings`` and wait until it answers ``/healthz``.

    Runs ``python -m heron daemon --detach`` with this client's ``HERON_HOME`` and
    socket. Several clients (threads or processes) finding the socket cold at once
    start one daemon: a file lock beside the socket serialises them, and whoever
    comes second finds it healthy. :class:`APIConnectionError`
    (``daemon_unavailable``) if it does not come up, with the end of its log.
    """
    assert settings.socket_path is not None
    if _healthy(settings.socket_path):
        return
    settings.home.mkdir(parents=True, exist_ok=True, mode=0o700)
    with _start_lock, _file_lock(settings.home / "client-start.lock"):
        if _healthy(settings.socket_path):
            return
        env = dict(os.environ)
        env["HERON_HOME"] = os.fspath(settings.home)
        env["HERON_SOCKET"] = os.fspath(settings.socket_path)
        try:
            done = subprocess.run(
                [sys.executable, "-m", "heron", "daemon", "--detach"],
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=START_TIMEOUT + 10,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise APIConnectionError(
                f"could not start the Heron daemon: {exc}", code="daemon_unavailable"
            ) from None
        if done.returncode == 0 and _healthy(settings.socket_path):
            return
        # `--detach` also fails when a daemon already runs (one another program
        # started a moment ago): what counts is whether the socket answers soon.
        deadline = time.monotonic() + _RACE_GRACE
        while time.monotonic() < deadline:
            if _healthy(settings.socket_path):
                return
            time.sleep(0.05)
        output = (done.stderr or done.stdout or b"").decode("utf-8", "replace").strip()
        raise APIConnectionError(
            f"the Heron daemon did not come up on {settings.socket_path}: "
            f"{output[-2000:] or f'exit status {done.returncode}'}",
            code="daemon_unavailable",
        )


def _healthy(socket_path: Path) -> bool:
    if not socket_path.exists():
        return False
    transport = httpx.HTTPTransport(uds=os.fspath(socket_path))
    with (
        contextlib.suppress(httpx.HTTPError),
        httpx.Client(transport=transport, timeout=2.0) as http,
    ):
        return http.get(f"{_SOCKET_HOST}/healthz").status_code == 200
    return False


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
