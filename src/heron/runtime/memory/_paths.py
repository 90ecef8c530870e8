"""Memory's names: entry ids, normalised paths and their slugs, tags."""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable

from ... import api
from ..server import ApiError

__all__ = ["MAX_PATH", "check_entry_id", "new_entry_id", "normal_path", "normal_tags", "slug_of"]

MAX_PATH = 512
"""The longest path (characters, after normalising)."""

_SEGMENT = re.compile(r"[A-Za-z0-9_.-]+")


def new_entry_id() -> str:
    """A fresh entry id: ``mem_`` and 16 hex digits."""
    return f"mem_{secrets.token_hex(8)}"


def check_entry_id(entry_id: str) -> str:
    """``entry_id`` if well-formed, else ``400 invalid_memory_id``."""
    if not api.is_valid_id(entry_id):
        raise ApiError(400, "invalid_memory_id", f"not a valid memory id: {entry_id!r}")
    return entry_id


def normal_path(path: str, what: str = "path") -> str:
    """``path`` as ``a/b/c`` (surrounding ``/`` and whitespace dropped), or ``422
    invalid_memory_path`` saying which rule it breaks."""
    text = path.strip().strip("/")

    def refuse(why: str) -> ApiError:
        return ApiError(422, "invalid_memory_path", f"invalid memory {what} {path!r}: {why}")

    if not text:
        raise refuse("it is empty")
    if len(text) > MAX_PATH:
        raise refuse(f"longer than {MAX_PATH} characters")
    for segment in text.split("/"):
        if not segment:
            raise refuse("it has an empty segment (//)")
        if segment in (".", ".."):
            raise refuse("'.' and '..' are not segments")
        if not _SEGMENT.fullmatch(segment):
            raise refuse(f"segment {segment!r} may hold only letters, digits, '_', '.', '-'")
    return text


def slug_of(path: str) -> str:
    """The last segment of a normalised path."""
    return path.rsplit("/", 1)[-1]


def normal_tags(tags: Iterable[str]) -> list[str]:
    """Tags lower-cased (they match case-insensitively), first occurrence kept."""
    return list(dict.fromkeys(tag.lower() for tag in tags))
