"""What the bash tools publish while commands run: started, output lines as they come, exited."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from ._events import Interaction, Listener

__all__ = [
    "BashEvent",
    "BashExited",
    "BashInteraction",
    "BashOutput",
    "BashOutputSize",
    "BashStarted",
]


@dataclass(kw_only=True, slots=True, eq=False)
class BashOutputSize:
    """How much a command has written so far, kept up to date as its output is read.

    Counting costs a length and a count of line breaks per chunk read, so a
    listener that only wants sizes need not have every command's output cut
    into lines (see :meth:`BashInteraction.subscribe`'s ``output``).
    """

    chars: int = 0
    """Characters written, stdout and stderr together (line breaks not counted)."""
    lines: int = 0
    """Line breaks written (a last line without one is not counted)."""

    def add(self, text: str) -> None:
        """Count ``text``, a chunk just read."""
        breaks = text.count("\n")
        self.chars += len(text) - breaks
        self.lines += breaks


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
    size: BashOutputSize = field(default_factory=BashOutputSize)
    """What it has written so far, updated in place while it runs."""


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

    def subscribe(
        self, listener: Listener[BashEvent], *, output: bool = True
    ) -> Callable[[], None]:
        """Call ``listener`` with every event; with ``output=False`` only starts and exits.

        Output lines are cut and published only while some listener wants them:
        one that follows commands' lifecycle (and reads ``BashStarted.size``)
        costs the commands nothing per line.
        """
        return super().subscribe(listener if output else _NoOutput(listener))

    @property
    def wants_output(self) -> bool:
        """Whether a listener wants :class:`BashOutput` events (the tools skip them otherwise)."""
        return any(not isinstance(s.listener, _NoOutput) for s in self._subscriptions)


class _NoOutput:
    """A listener that is not given output events."""

    __slots__ = ("listener",)

    def __init__(self, listener: Listener[BashEvent]) -> None:
        self.listener = listener

    def __call__(self, event: BashEvent) -> Awaitable[None] | None:
        return None if isinstance(event, BashOutput) else self.listener(event)
