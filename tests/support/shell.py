"""Shell (``/v1/bash``) tests' helpers: sleeping commands and their processes."""

from __future__ import annotations

import os
import random
from pathlib import Path

from .polling import eventually


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie waiting to be reaped does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] not in (b"Z", b"X")


def sleeper() -> str:
    """A ``sleep`` command line unique to its test, found on the host by :func:`wait_sleeping`
    (a command's ``$!`` is a pid of its own PID namespace, not the host's)."""
    return f"sleep {600 + random.random():.9f}"


def wait_sleeping(command: str, seconds: float = 15) -> int:
    """The host pid of the process running ``command`` (a :func:`sleeper`), once it runs."""
    wanted = command.encode().replace(b" ", b"\0") + b"\0"

    def find() -> int | None:
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    if Path(f"/proc/{entry}/cmdline").read_bytes() == wanted:
                        return int(entry)
                except OSError:
                    pass
        return None

    pid: int = eventually(
        find, timeout=seconds, interval=0.02, what=f"a process running {command!r}"
    )
    return pid
