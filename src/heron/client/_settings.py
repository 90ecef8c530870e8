"""Where the daemon is and how to reach it: constructor arguments, then the environment.

``HERON_BASE_URL``, ``HERON_SOCKET``, ``HERON_HOME`` and ``HERON_TOKEN`` are read
once, when a client is constructed; changing them later changes nothing for it.
"""

from __future__ import annotations

import ipaddress
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

__all__ = ["DEFAULT_MAX_RETRIES", "DEFAULT_TIMEOUT", "SOCKET_HOST", "Settings"]

DEFAULT_TIMEOUT = 60.0
"""Seconds each step of a request (connect, send, each read) may wait unless the call
or the client says otherwise (see ``RequestOptions.timeout``)."""
DEFAULT_MAX_RETRIES = 2
"""Retries of a ``GET``/``HEAD``/``DELETE`` unless the call or the client says otherwise."""

SOCKET_HOST = "http://heron"
"""The base URL of requests over the Unix socket (the host is never resolved)."""

_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


@dataclass(frozen=True, kw_only=True, slots=True)
class Settings:
    """A client's resolved connection settings."""

    base_url: str
    """``http://host:port`` of the TCP listener, or a placeholder over the Unix socket."""
    socket_path: Path | None
    """The Unix socket, or ``None`` over TCP."""
    home: Path
    """The daemon's directory (where an auto-started daemon keeps its files)."""
    token: str | None = field(repr=False)
    """Bearer token sent on every request (the TCP listener requires it)."""
    timeout: float
    """Default seconds each step of a request may wait (see ``RequestOptions.timeout``)."""
    max_retries: int
    """Default retries of a ``GET``/``HEAD``/``DELETE``."""
    auto_start: bool
    """Start the daemon when the Unix socket is cold."""
    headers: Mapping[str, str] = field(default_factory=dict)
    """Headers sent on every request."""
    environ: Mapping[str, str] = field(default_factory=dict, repr=False)
    """The environment as it was at construction (an auto-started daemon inherits it)."""

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
        then ``HERON_SOCKET`` (unless ``home`` is passed), then ``home/heron.sock``
        with ``home`` defaulting to ``$HERON_HOME``, else ``~/.heron``. Without a
        ``token``, ``HERON_TOKEN``; without that either, the token ``heron sys
        connect`` stored in ``home/connect.json`` when ``base_url`` is that listener.
        ``TypeError`` if both ``base_url`` and ``socket_path`` are given;
        ``ValueError`` for a bad URL, timeout or retry count.
        """
        if base_url is not None and socket_path is not None:
            raise TypeError("pass base_url (TCP) or socket_path (Unix socket), not both")
        env = dict(os.environ)
        home_path = Path(home or env.get("HERON_HOME") or Path.home() / ".heron").expanduser()
        if token is None:
            token = env.get("HERON_TOKEN") or None
        elif not isinstance(token, str) or not token or any(c in token for c in "\r\n"):
            raise ValueError("token must be a non-empty string on one line")
        if base_url is None and socket_path is None:
            base_url = env.get("HERON_BASE_URL") or None
            if base_url is None:
                socket_path = (None if home else env.get("HERON_SOCKET")) or (
                    home_path / "heron.sock"
                )
        url = SOCKET_HOST
        if base_url is not None:
            url = check_base_url(base_url)
            if token is None:
                token = stored_token(home_path, url)
            auto_start = False  # a TCP listener is someone else's daemon: never start one
        return cls(
            base_url=url,
            socket_path=None if socket_path is None else Path(socket_path).expanduser(),
            home=home_path,
            token=token,
            timeout=check_timeout(timeout),
            max_retries=check_retries(max_retries),
            auto_start=bool(auto_start),
            headers=check_headers(headers or {}),
            environ=env,
        )

    @property
    def address(self) -> str:
        """Where the daemon is, for messages: ``unix:/path`` or the base URL."""
        return f"unix:{self.socket_path}" if self.socket_path is not None else self.base_url


def check_timeout(value: object) -> float:
    """``value`` as seconds if it is a positive finite number; ``ValueError`` otherwise."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ValueError(f"timeout must be a positive number of seconds, got {value!r}")
    return float(value)


_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
"""An HTTP header name (RFC 9110 ``token``)."""
_BAD_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
"""What a header value may not hold: control characters other than tab (CR, LF, NUL ...)."""


def check_headers(value: object) -> dict[str, str]:
    """``value`` as a dict if it maps header names to one-line string values;
    ``TypeError`` / ``ValueError`` otherwise (caught here, not retried as a send failure)."""
    if not isinstance(value, Mapping):
        raise TypeError(f"headers must be a mapping, not {type(value).__name__}")
    for name, text in value.items():
        if not isinstance(name, str) or not isinstance(text, str):
            raise TypeError(f"header names and values must be strings, got {name!r}: {text!r}")
        if not _TOKEN.fullmatch(name):
            raise ValueError(f"invalid header name {name!r}")
        if _BAD_VALUE.search(text):
            raise ValueError(f"header {name!r} has a control character in its value")
    return dict(value)


def check_retries(value: object) -> int:
    """``value`` if it is a whole number from 0; ``ValueError`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"max_retries must be a whole number, 0 or more, got {value!r}")
    return value


def check_base_url(value: object) -> str:
    """``value`` without a trailing ``/`` if it is an ``http(s)://host[:port][/prefix]`` URL."""
    example = "an http(s) URL such as http://127.0.0.1:7717"
    if not isinstance(value, str):
        raise ValueError(f"base_url must be {example}, got {value!r}")
    text = value.strip()
    parts = urlsplit(text)
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"base_url has a bad port: {value!r}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or port == 0:
        raise ValueError(f"base_url must be {example}, got {value!r}")
    if parts.query or parts.fragment or parts.username or parts.password:
        raise ValueError(
            f"base_url takes no query, fragment or credentials (pass token=...), got {value!r}"
        )
    return text.rstrip("/")


def stored_token(home: Path, base_url: str) -> str | None:
    """The token ``heron sys connect`` stored in ``home/connect.json``, if ``base_url``
    is that listener: plain http, the same port, and the same host (a wildcard
    listener counts as its loopback addresses only — the token never leaves the machine
    because a listener binds every interface)."""
    try:
        data = json.loads((home / "connect.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("token"), str):
        return None
    listen_host, _, listen_port = str(data.get("listen", "")).rpartition(":")
    parts = urlsplit(base_url)
    if parts.scheme != "http" or parts.port is None or str(parts.port) != listen_port:
        return None
    if _same_host(listen_host.strip("[]"), parts.hostname or ""):
        return str(data["token"])
    return None


def _same_host(listen_host: str, url_host: str) -> bool:
    listen, url = _address(listen_host), _address(url_host)
    if listen is not None and listen.is_unspecified:  # 0.0.0.0 or ::
        return url is not None and url.is_loopback
    if listen is None or url is None:
        return listen_host.lower() == url_host.lower()
    return listen == url or (listen.is_loopback and url.is_loopback)


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    if host.lower() in _LOOPBACK_NAMES:
        return ipaddress.ip_address("127.0.0.1")
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None
