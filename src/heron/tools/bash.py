"""The bash tools: run shell commands, in the foreground or the background, with live output.

``bash_tools()`` returns six tools sharing one set of processes:

- ``bash-run`` runs a command to its end (or its timeout) and returns its exit
  code, stdout and stderr; a non-zero exit is a result, not an error.
- ``bash-start`` starts a long-running command (a server, a watcher) and
  returns its id; ``bash-read`` returns what it wrote since the last read,
  ``bash-wait`` waits for it to exit, ``bash-kill`` stops it and everything it
  started, ``bash-list`` lists them all.

Every command runs as ``/bin/bash -c <command>`` in a process group of its own
with stdin closed, so a timeout or a kill reaches its children too. Processes
are scoped by the calling client's ``env_id``. A :class:`BashInteraction`
publishes output lines as they appear.

A call's ``cwd`` must lie inside the tools' directory (symlinks resolved), but
commands are not sandboxed unless given ``sandbox=`` (a :class:`Sandbox`:
bubblewrap around each command): they run with this process's rights and may
read or write anything it can. Sandbox them, or serve the tools from a
``Computer``, when the model is not trusted.

:class:`ShellProcess` is the process one command runs in (the daemon's ``/v1/bash``
routes run theirs the same way).
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from .._core import UserError
from .._core.closing import AsyncClosing
from ._bash_events import (
    BashEvent,
    BashExited,
    BashInteraction,
    BashOutput,
    BashOutputSize,
    BashStarted,
)
from ._bash_output import HeadTailBuffer
from ._bash_process import ShellProcess, Stream, describe_exit
from ._bash_session import BashSession
from ._context import ToolContext
from ._result import ToolResult
from ._sandbox import Sandbox
from ._tool import Tool

__all__ = [
    "BashEvent",
    "BashExited",
    "BashInteraction",
    "BashOutput",
    "BashOutputSize",
    "BashStarted",
    "BashTools",
    "ShellProcess",
    "Stream",
    "bash_tools",
    "describe_exit",
]

Handler = Callable[[dict[str, Any], ToolContext], Awaitable[ToolResult]]


class _BashTool(Tool):
    """One of the bash tools: its arguments go to the shared session."""

    def __init__(
        self, *, name: str, description: str, properties: dict[str, Any], handler: Handler
    ) -> None:
        self._handler = handler
        required = [key for key in ("command", "id") if key in properties]
        super().__init__(
            name=name,
            description=description,
            input_schema={
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        )

    async def execute(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Hand the call to the session that owns the processes."""
        return await self._handler(arguments, context)


class BashTools(list[Tool], AsyncClosing):
    """The tools one :func:`bash_tools` call made: a list of :class:`Tool`, plus cleanup.

    Background processes outlive the call that started them. Close the tools
    when done, so none is left running::

        async with bash_tools("/srv/project") as tools:
            agent = SimpleAgent(provider=provider, tools=tools)
            await agent.run("Start the dev server and check that / answers")

    (or ``await tools.aclose()``). Should that not happen, the processes are
    SIGKILLed once nothing refers to the tools any more (they are garbage
    collected), or at the latest when the program exits.
    """

    def __init__(self, tools: Iterable[Tool], session: BashSession) -> None:
        super().__init__(tools)
        self._session = session

    @property
    def interaction(self) -> BashInteraction:
        """Where these tools publish their commands' progress."""
        return self._session.interaction

    @property
    def cwd(self) -> Path:
        """The directory commands run in unless a call gives another."""
        return self._session.cwd

    async def aclose(self) -> None:
        """Stop every background process still running (SIGTERM, then SIGKILL).

        The tools stay usable: later calls start new processes.
        """
        await self._session.aclose()


def bash_tools(
    cwd: str | os.PathLike[str] | None = None,
    *,
    interaction: BashInteraction | None = None,
    timeout: float = 120,
    max_timeout: float = 600,
    output_limit: int = 30_000,
    kill_grace: float = 2.0,
    max_processes: int = 8,
    env: Mapping[str, str] | None = None,
    base_env: Mapping[str, str] | None = None,
    shell: str = "/bin/bash",
    sandbox: Sandbox | None = None,
) -> BashTools:
    """Make the six bash tools, sharing one working directory and set of processes.

    Args:
        cwd: Where commands run (default: the current directory now). A call
            may give a ``cwd`` inside it (relative ones start here); one
            outside is refused. Commands themselves are not sandboxed (see ``sandbox``).
        interaction: Publishes each command's start, output lines and exit
            (default: a new one, at ``tools.interaction``).
        timeout: Seconds ``bash-run`` lets a command run when the call gives none.
        max_timeout: The longest timeout a call may ask for, in seconds.
        output_limit: Characters of each stream kept: ``bash-run`` keeps the
            first half and the last half, cutting the middle; a background
            process keeps the latest unread output, dropping the oldest.
        kill_grace: Seconds between SIGTERM and SIGKILL when stopping a process group.
        max_processes: Background processes that may run at once.
        env: Variables added to the base environment for every command.
        base_env: The environment commands start from (default: this process's,
            as it is when each command starts). Pass a copy without your secrets to
            keep them from the commands (the daemon does: no API key or token).
        shell: The shell that runs commands with ``-c``.
        sandbox: Run every command under bubblewrap (:class:`heron.tools.Sandbox`):
            the host read-only but for ``cwd`` (made writable here) and the
            sandbox's own ``writable`` paths, its ``hidden`` ones gone, a PID
            namespace of its own. Pair it with
            ``base_env=sandbox_environment()``: the environment is passed in as is.

    Hold on to the returned :class:`BashTools` and close it (``aclose()`` or
    ``async with``) to stop background processes::

        async with bash_tools("/srv/project") as tools:
            agent = SimpleAgent(provider=provider, tools=[*tools, get_current_time])
            ...
    """
    root = Path(os.getcwd() if cwd is None else os.fspath(cwd)).expanduser().resolve()
    if not root.is_dir():
        raise UserError(f"bash_tools cwd {str(root)!r} does not exist or is not a directory")
    if not (os.path.isfile(shell) and os.access(shell, os.X_OK)):
        raise UserError(f"no executable shell at {shell!r}: install bash (apt-get install bash)")
    if interaction is None:
        interaction = BashInteraction()
    elif not isinstance(interaction, BashInteraction):
        raise UserError(f"interaction must be a BashInteraction, not {type(interaction).__name__}")
    for label, value in (("timeout", timeout), ("max_timeout", max_timeout)):
        if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
            raise UserError(f"{label} must be a positive number of seconds, not {value!r}")
    if timeout > max_timeout:
        raise UserError(f"timeout ({timeout:g} s) exceeds max_timeout ({max_timeout:g} s)")
    if not (isinstance(output_limit, int) and output_limit >= 100):
        raise UserError(f"output_limit must be an integer of at least 100, not {output_limit!r}")
    if not (isinstance(kill_grace, int | float) and 0 <= kill_grace < math.inf):
        raise UserError(f"kill_grace must be a number of seconds >= 0, not {kill_grace!r}")
    if not (isinstance(max_processes, int) and max_processes >= 1):
        raise UserError(f"max_processes must be a positive integer, not {max_processes!r}")
    if sandbox is not None:
        if not isinstance(sandbox, Sandbox):
            raise UserError(f"sandbox must be a Sandbox, not {type(sandbox).__name__}")
        if str(root) == "/":
            raise UserError(
                "a sandboxed shell cannot work in /: its directory is made writable, and all "
                "of / cannot be; give a narrower cwd"
            )
        if str(root) not in sandbox.writable:
            sandbox = dataclasses.replace(sandbox, writable=(*sandbox.writable, str(root)))
    session = BashSession(
        root,
        shell=shell,
        env=dict(env or {}),
        base_env=None if base_env is None else dict(base_env),
        interaction=interaction,
        default_timeout=float(timeout),
        max_timeout=float(max_timeout),
        output_limit=output_limit,
        kill_grace=float(kill_grace),
        max_processes=max_processes,
        sandbox=sandbox,
    )
    return BashTools(_make_tools(session), session)


def _make_tools(session: BashSession) -> list[Tool]:
    command = {
        "type": "string",
        "description": "The bash command line; pipes, redirections, && and ; work.",
    }
    cwd = {
        "type": "string",
        "description": f"Working directory: {session.cwd} (the default) or a directory "
        "inside it, relative to it or absolute.",
    }
    process_id = {"type": "string", "description": "The id bash-start returned."}

    def timeout(default: float, what: str) -> dict[str, Any]:
        return {
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": session.max_timeout,
            "description": f"Seconds to {what} (default {default:g}, at most "
            f"{session.max_timeout:g}).",
        }

    async def run(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return await session.run(
            arguments["command"], cwd=arguments.get("cwd"), seconds=arguments.get("timeout")
        )

    async def start(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return await session.start(arguments["command"], cwd=arguments.get("cwd"), context=context)

    async def read(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return await session.read(arguments["id"], context)

    async def wait(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return await session.wait(
            arguments["id"], seconds=arguments.get("timeout"), context=context
        )

    async def kill(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return await session.kill(arguments["id"], context)

    async def listing(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return await session.list(context)

    limit = f"{session.output_limit:,}"
    head, tail = HeadTailBuffer.split(session.output_limit)
    unsandboxed = (
        f"Commands start in {session.cwd} or a directory below it, but are not sandboxed: "
        "they run with the user's full rights."
    )
    return [
        _BashTool(
            name="bash-run",
            description=(
                "Run a shell command with bash and wait for it to finish; returns its exit "
                "code, stdout and stderr (a non-zero exit code is reported, not an error). "
                "stdin is closed, so interactive prompts fail: pass flags like -y. Each "
                f"stream keeps its first {head:,} and its last {tail:,} characters, cutting "
                "the middle. On timeout the command and its children are killed and the "
                "output so far is returned. For servers and other long-running commands use "
                f"bash-start instead. {unsandboxed}"
            ),
            properties={
                "command": command,
                "cwd": cwd,
                "timeout": timeout(session.default_timeout, "let the command run"),
            },
            handler=run,
        ),
        _BashTool(
            name="bash-start",
            description=(
                "Start a long-running shell command in the background (a server, a watcher, a "
                "long build) and return its id at once. Follow it with bash-read, bash-wait "
                f"and bash-kill. {unsandboxed}"
            ),
            properties={"command": command, "cwd": cwd},
            handler=start,
        ),
        _BashTool(
            name="bash-read",
            description=(
                "Return what a background process wrote since the last read, and whether it "
                f"is still running or how it exited. At most the latest {limit} unread "
                "characters per stream are kept."
            ),
            properties={"id": process_id},
            handler=read,
        ),
        _BashTool(
            name="bash-wait",
            description=(
                "Wait until a background process exits or the timeout passes, then return "
                "its new output and status, like bash-read."
            ),
            properties={"id": process_id, "timeout": timeout(session.wait_default, "wait")},
            handler=wait,
        ),
        _BashTool(
            name="bash-kill",
            description=(
                "Stop a background process and everything it started (SIGTERM, then SIGKILL); "
                "returns its last output and how it ended."
            ),
            properties={"id": process_id},
            handler=kill,
        ),
        _BashTool(
            name="bash-list",
            description="List the background processes with their status and unread output.",
            properties={},
            handler=listing,
        ),
    ]
