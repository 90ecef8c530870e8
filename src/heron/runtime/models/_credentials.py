"""The daemon's private JSON files: installed model credentials (mode 0600 from the first
byte, written atomically) and the model config. No key goes into an exception, a ``repr``
or a log line."""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..server import DaemonError

__all__ = [
    "CREDENTIALS_FILE",
    "MODEL_CONFIG_FILE",
    "REDACTED",
    "Credential",
    "load_credentials",
    "load_model_config",
    "redact",
    "save_credentials",
    "save_model_config",
]

log = logging.getLogger("heron.runtime")

CREDENTIALS_FILE = "credentials.json"
"""The installed credentials, in ``HERON_HOME``."""
MODEL_CONFIG_FILE = "model-config.json"
"""The daemon's model settings set through ``PUT /v1/model-config``, in ``HERON_HOME``."""

_VERSION = 1
"""The files' format version (written, and checked when read)."""


@dataclass(frozen=True, slots=True)
class Credential:
    """One provider's installed credential."""

    api_key: str = field(repr=False)
    """The API key (kept out of ``repr``, so no traceback shows it)."""
    base_url: str | None
    """The endpoint to use instead of the vendor's, if any."""
    installed_at: float
    """When it was installed (seconds since the epoch)."""


def write_private(path: Path, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` atomically, readable by the owner only.

    The temporary file is made 0600 by ``open`` itself (no window where another
    user could read it) and renamed over ``path`` once it is on disk, so a crash
    leaves the old file or the new one, never half of one.
    """
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, sort_keys=True)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)  # the rename itself survives a power cut
    finally:
        os.close(directory)


def _read(path: Path, what: str) -> dict[str, Any] | None:
    """The JSON object in ``path`` (``None`` if there is no file); ``DaemonError`` naming
    the file (never quoting it: it may hold keys) when it cannot be used."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise DaemonError(f"cannot read the {what} file {path}: {exc.strerror}") from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        where = f"line {exc.lineno}" if isinstance(exc, json.JSONDecodeError) else "its encoding"
        raise DaemonError(
            f"the {what} file {path} is not valid JSON ({where}): fix or remove it"
        ) from None
    if not isinstance(data, dict) or data.get("version") != _VERSION:
        raise DaemonError(
            f"the {what} file {path} is not a version-{_VERSION} Heron file: fix or remove it"
        )
    return data


def load_credentials(home: Path) -> dict[str, Credential]:
    """The credentials installed in ``home``, by provider; ``DaemonError`` if the file is
    damaged (the daemon refuses to start rather than silently drop a key)."""
    path = home / CREDENTIALS_FILE
    data = _read(path, "credentials")
    if data is None:
        return {}
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        log.warning("%s was readable by others (mode %o): made 0600", path, mode)
        os.chmod(path, 0o600)
    entries = data.get("credentials")
    if not isinstance(entries, dict):
        raise DaemonError(f"the credentials file {path} has no 'credentials' object")
    found = {}
    for provider, entry in entries.items():
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("api_key"), str)
            and isinstance(entry.get("base_url"), str | None)
            and isinstance(entry.get("installed_at"), int | float)
        ):
            raise DaemonError(f"the credentials file {path}: the {provider!r} entry is malformed")
        found[provider] = Credential(
            api_key=entry["api_key"],
            base_url=entry["base_url"],
            installed_at=float(entry["installed_at"]),
        )
    return found


def save_credentials(home: Path, credentials: dict[str, Credential]) -> None:
    """Replace the credentials file with ``credentials`` (see :func:`write_private`)."""
    entries = {
        provider: {
            "api_key": credential.api_key,
            "base_url": credential.base_url,
            "installed_at": credential.installed_at,
        }
        for provider, credential in sorted(credentials.items())
    }
    write_private(home / CREDENTIALS_FILE, {"version": _VERSION, "credentials": entries})


def load_model_config(home: Path) -> dict[str, Any]:
    """The stored model settings (``{}`` if none were ever set)."""
    path = home / MODEL_CONFIG_FILE
    data = _read(path, "model config")
    if data is None:
        return {}
    default = data.get("default_model")
    updated = data.get("updated_at")
    if not isinstance(default, str | None) or not isinstance(updated, int | float | None):
        raise DaemonError(f"the model config file {path} is malformed: fix or remove it")
    return {"default_model": default, "updated_at": updated}


def save_model_config(home: Path, default_model: str | None, updated_at: float) -> None:
    """Replace the model config file."""
    data = {"version": _VERSION, "default_model": default_model, "updated_at": updated_at}
    write_private(home / MODEL_CONFIG_FILE, data)


REDACTED = "[redacted]"
"""What stands where a key (or a recognisable part of one) was."""

_TOKEN = re.compile(r"[^\s\"'`,;()\[\]{}<>=]+")
"""A run of characters a key, or a vendor's masked copy of one, is made of."""

_MASK = re.compile(r"\*{3,}|(?:\.{3}|\u2026)(?=\w)")
"""How vendors mask a key they echo (``sk-ab***wxyz``, ``****wxyz``, ``sk-...wxyz``)."""

_PART = 4
"""The shortest run of a key's characters taken for a recognisable part of it."""


def redact(text: str, keys: Iterable[str]) -> str:
    """``text`` without any of ``keys`` nor a recognisable part of one.

    A vendor refusing a key often quotes it back masked ("Incorrect API key provided:
    sk-ab***...***wxyz", "Your api key: ****wxyz is invalid"), and that message becomes
    a node's outcome, an event, a log line, an answer. Every word that is masked like
    a key, holds eight characters in a row of one of ``keys``, or is its first or last
    four or more, is replaced by :data:`REDACTED`.
    """
    secrets_ = [key for key in keys if len(key) >= _PART]

    def word(match: re.Match[str]) -> str:
        token = match.group(0)
        if _MASK.search(token) and any(c.isalnum() for c in _MASK.sub("", token)):
            return REDACTED
        bare = _MASK.sub("", token).strip(".:!?*")
        for key in secrets_:
            if key in token or (
                len(bare) >= _PART and (key.startswith(bare) or key.endswith(bare))
            ):
                return REDACTED
            if any(key[i : i + 2 * _PART] in token for i in range(len(key) - 2 * _PART + 1)):
                return REDACTED
        return token

    return _TOKEN.sub(word, text)
