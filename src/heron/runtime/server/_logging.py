"""The daemon's log: where it goes, and what never goes into it (secrets, conversations)."""

from __future__ import annotations

import logging
import re

__all__ = ["REDACTED_QUERY", "Scrub", "configure_logging", "scrubbed"]

REDACTED_QUERY = "?[redacted]"
"""What stands for a URL's query in the log."""

_URL_QUERY = re.compile(r"""(\bhttps?://[^\s?#"'<>]*)\?[^\s#"'<>]*""")
_CANCELLED = re.compile(r"^(Asyncio task cancelled for workflow or step )(.*)$", re.DOTALL)
_CALLABLE_NAME = re.compile(r"<(?:bound method|function|built-in function) ([\w.<>]+)")
_SERIALIZING = "Error serializing object:"


def _callable_name(text: str) -> str:
    """The name of the function a ``repr`` shows (a partial's, a bound method's ...)."""
    found = _CALLABLE_NAME.search(text)
    return found.group(1) if found else "(a step)"


def scrubbed(message: str) -> str:
    """``message`` as the log may hold it."""
    cancelled = _CANCELLED.match(message)
    if cancelled:
        return cancelled.group(1) + _callable_name(cancelled.group(2))
    if message.startswith(_SERIALIZING):
        return f"{_SERIALIZING} (the value is not logged)"
    if "://" in message and "?" in message:
        return _URL_QUERY.sub(lambda m: m.group(1) + REDACTED_QUERY, message)
    return message


class Scrub(logging.Filter):
    """Rewrites a record whose message would show a URL's query or a step's values."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Always keeps the record; rewrites its message if it must."""
        try:
            message = record.getMessage()
        except Exception:  # a malformed call: logging reports it itself
            return True
        clean = scrubbed(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True


def configure_logging(level: int = logging.INFO) -> None:
    """Log to stderr at ``level``, every line (DBOS's too) scrubbed.

    The filter sits on the root's handler, which every propagating logger reaches,
    and on DBOS's logger itself, which keeps its own handler and does not propagate.
    """
    logging.basicConfig(level=level, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    scrub = Scrub()
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, Scrub) for f in handler.filters):
            handler.addFilter(scrub)
    dbos = logging.getLogger("dbos")
    if not any(isinstance(f, Scrub) for f in dbos.filters):
        dbos.addFilter(scrub)
