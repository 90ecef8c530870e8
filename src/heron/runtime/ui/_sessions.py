"""Browsers signed in to the daemon's page: one-time sign-in codes and sessions.

``heron ui`` asks the daemon (over its socket, or with the bearer token) for a sign-in
code; the browser exchanges it at ``/ui/login`` for a session cookie (HttpOnly,
``SameSite=Strict``): the bearer token never reaches the page. A session's requests that
change anything carry its CSRF token too (``X-Heron-CSRF``), which the page reads from
``/ui/session``: the server's auth middleware checks both (``server.BearerAuth``).

Codes and sessions live in the daemon's memory: a daemon that restarts has signed every
page out (the page says so, and ``heron ui`` signs in again). Only digests of the codes
and session ids are kept, compared in constant time.
"""

from __future__ import annotations

import hashlib
import html
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "CODE_SECONDS",
    "LOGIN_PATH",
    "MAX_SESSIONS",
    "PAGE_ROOT",
    "SESSION_SECONDS",
    "Session",
    "Sessions",
    "message_page",
]

CODE_SECONDS = 120.0
"""How long a sign-in code is accepted (it is accepted once)."""

SESSION_SECONDS = 7 * 24 * 3600.0
"""How long a session lasts from its sign-in."""

MAX_SESSIONS = 64
"""At most this many sessions are kept; signing in past it ends the oldest."""

MAX_CODES = 64
"""At most this many sign-in codes wait to be used; minting past it drops the oldest."""


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True, slots=True)
class Session:
    """One signed-in browser."""

    secret: str
    """The cookie's value (only the browser keeps it: the daemon keeps its digest)."""
    csrf_token: str
    """What its requests that change anything carry in ``X-Heron-CSRF``."""
    expires_at: float
    """When it ends (Unix time)."""


@dataclass(frozen=True, slots=True)
class _Kept:
    csrf_token: str
    expires_at: float


class Sessions:
    """The page's sign-in codes and sessions (see the module docstring); implements
    ``server.BrowserSessions`` for the auth middleware."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._codes: OrderedDict[str, float] = OrderedDict()  # digest → expiry
        self._sessions: OrderedDict[str, _Kept] = OrderedDict()  # digest → session

    # -- sign-in codes ---------------------------------------------------------

    def mint_code(self) -> tuple[str, float]:
        """A new one-time sign-in code and when it expires."""
        self._drop_expired()
        code = secrets.token_urlsafe(24)
        expires_at = self._clock() + CODE_SECONDS
        self._codes[_digest(code)] = expires_at
        while len(self._codes) > MAX_CODES:
            self._codes.popitem(last=False)
        return code, expires_at

    def sign_in(self, code: str) -> Session | None:
        """Exchange a sign-in code for a new session; ``None`` if the code is unknown,
        used already or expired (it can never be used again either way)."""
        expires_at = self._codes.pop(_digest(code), None)
        if expires_at is None or expires_at <= self._clock():
            return None
        secret = secrets.token_urlsafe(32)
        kept = _Kept(secrets.token_urlsafe(24), self._clock() + SESSION_SECONDS)
        self._sessions[_digest(secret)] = kept
        while len(self._sessions) > MAX_SESSIONS:
            self._sessions.popitem(last=False)
        return Session(secret, kept.csrf_token, kept.expires_at)

    # -- sessions --------------------------------------------------------------

    def session(self, secret: str) -> Session | None:
        """The live session ``secret`` (a cookie's value) names, if any."""
        key = _digest(secret)
        kept = self._sessions.get(key)
        if kept is None:
            return None
        if kept.expires_at <= self._clock():
            del self._sessions[key]
            return None
        return Session(secret, kept.csrf_token, kept.expires_at)

    def sign_out(self, secret: str) -> bool:
        """End the session ``secret`` names; whether there was one."""
        return self._sessions.pop(_digest(secret), None) is not None

    def __len__(self) -> int:
        self._drop_expired()
        return len(self._sessions)

    def _drop_expired(self) -> None:
        now = self._clock()
        for key in [k for k, expiry in self._codes.items() if expiry <= now]:
            del self._codes[key]
        for key in [k for k, kept in self._sessions.items() if kept.expires_at <= now]:
            del self._sessions[key]

    # -- server.BrowserSessions --------------------------------------------------

    def cookie_name(self, port: int) -> str:
        """The session cookie's name on the listener at ``port``."""
        return f"heron_session_{port}"

    def csrf_token(self, session: str) -> str | None:
        """The CSRF token of the live session ``session`` names, if any."""
        found = self.session(session)
        return found.csrf_token if found is not None else None

    def is_public(self, path: str) -> bool:
        """Only the sign-in is served without a session."""
        return path == LOGIN_PATH

    def refusal_page(self, path: str) -> bytes | None:
        """A browser opening the page without a session is told how to sign in."""
        if path == PAGE_ROOT or path.startswith(PAGE_ROOT + "/"):
            return REFUSAL_PAGE
        return None


PAGE_ROOT = "/ui"
"""Where the page is served."""

LOGIN_PATH = "/ui/login"
"""Where a browser exchanges a sign-in code for a session."""


def message_page(title: str, text: str) -> bytes:
    """A small self-contained HTML page (no script, no external resource)."""
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)} · Heron</title></head>"
        f"<body><main><h1>{html.escape(title)}</h1><p>{html.escape(text)}</p></main>"
        "</body></html>"
    ).encode()


REFUSAL_PAGE = message_page(
    "Not signed in",
    "This page needs a session. Run `heron ui` on the daemon's machine: it opens the page "
    "with a one-time sign-in link.",
)
"""What a browser without a session is shown at the page's addresses."""
