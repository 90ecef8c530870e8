"""What the bash tools publish while commands run: started, output lines as they come, exited."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from ._events import Interaction

__all__ = ["BashEvent", "BashExited", "BashInteraction", "BashOutput", "BashStarted"]


@dataclass(frozen=True, kw_only=True, slots=True)
class BashStarted:
    """A command has started."""

    process_id: str
    """The tools' id for it: ``run-N`` for ``bash-run``, else the id ``bash-start`` returned."""
    command: str
    """The command line, as the model wrote it."""
    cwd: str
    """The absolute working directory it runs in."""
    pid: int
    """The shell's operating-system process id (also its process group id)."""
    background: bool
    """Whether it was started by ``bash-start`` (``False``: by ``bash-run``)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class BashOutput:
    """Lines a command wrote, published as soon as they are complete.

    One event carries every line completed by one read of the stream (a
    handful for a slow command, thousands for a fast one), so a listener
    costs the command one call per read, not one per line.
    """

    process_id: str
    """The tools' id for the command."""
    command: str
    """The command line."""
    stream: Literal["stdout", "stderr"]
    """Which stream the lines came from."""
    lines: tuple[str, ...]
    """The lines in order, without line endings (never empty; a last line without
    one comes at the end; a line longer than 65,536 characters comes in pieces)."""

    @property
    def line(self) -> str:
        """The lines joined by newlines: the single line when there is one."""
        return "\n".join(self.lines)


@dataclass(frozen=True, kw_only=True, slots=True)
class BashExited:
    """A command's shell has exited and its output has been read."""

    process_id: str
    """The tools' id for the command."""
    command: str
    """The command line."""
    exit_code: int | None
    """The exit status, or ``None`` when a signal ended it."""
    signal: str | None
    """The signal that ended it (``"SIGKILL"``...), or ``None``."""
    timed_out: bool
    """Whether the tools killed it for running past its timeout."""
    duration: float
    """Seconds from start to exit."""


BashEvent: TypeAlias = BashStarted | BashOutput | BashExited
"""Any event :class:`BashInteraction` publishes."""


class BashInteraction(Interaction[BashEvent]):
    """Live progress of the bash tools: each command's start, output lines and exit.

    Pass one to :func:`~heron.tools.bash_tools` (or use the one its tools made,
    ``tools.interaction``) and subscribe a sync or async listener::

        interaction = BashInteraction()
        interaction.subscribe(
            lambda e: print(*e.lines, sep="\n") if isinstance(e, BashOutput) else None
        )
        agent = SimpleAgent(provider=..., tools=bash_tools(interaction=interaction))
    """
