"""The processes of one set of bash tools: commands run to the end, and background ones."""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import os
import time
import weakref
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from .._core import TextPart, ToolError
from ._bash_events import BashExited, BashInteraction, BashOutput, BashOutputSize, BashStarted
from ._bash_output import HeadTailBuffer, TailBuffer
from ._bash_process import OutputSink, ShellProcess, Stream, describe_exit, kill_groups_now
from ._context import ToolContext
from ._result import ToolResult
from ._sandbox import Sandbox

__all__ = ["BashSession"]

# How long output may keep coming once the shell has exited: longer means that
# something it started in the background still holds the pipes.
_DRAIN = 0.5
# Exited background processes kept for bash-read and bash-list; older ones go.
_KEEP_EXITED = 32
_COMMAND_SHOWN = 200  # characters of a command bash-list shows

T = TypeVar("T")


@dataclass(kw_only=True, eq=False)
class _Background:
    """A process started by ``bash-start`` and what of its output is still unread."""

    id: str
    env_id: str
    command: str
    cwd: str
    process: ShellProcess
    loop: asyncio.AbstractEventLoop
    unread: dict[Stream, TailBuffer]
    killed: bool = False
    monitor: asyncio.Future[None] | None = field(default=None)


class BashSession:
    """Runs the commands of one ``bash_tools()`` call and owns their processes.

    Nothing a running process needs refers back to the session, so a session
    nobody holds any more is garbage-collected even while its background
    processes run, and its finalizer kills them.
    """

    def __init__(
        self,
        cwd: Path,
        *,
        shell: str,
        env: Mapping[str, str] | None,
        interaction: BashInteraction,
        base_env: Mapping[str, str] | None = None,
        default_timeout: float,
        max_timeout: float,
        output_limit: int,
        kill_grace: float,
        max_processes: int,
        sandbox: Sandbox | None = None,
    ) -> None:
        self.cwd = cwd
        self.sandbox = sandbox
        self.shell = shell
        self.env = env
        self.base_env = base_env
        self.interaction = interaction
        self.default_timeout = default_timeout
        self.max_timeout = max_timeout
        self.output_limit = output_limit
        self.kill_grace = kill_grace
        self.max_processes = max_processes
        self.wait_default = min(30.0, max_timeout)
        """Seconds bash-wait waits when the call gives none."""
        self._runs = itertools.count(1)
        self._fallback_ids = itertools.count(1)
        self._background: dict[tuple[str, str], _Background] = {}
        # Every group bash-start made, until forgotten; the finalizer gets the set, not self.
        self._groups: set[int] = set()
        weakref.finalize(self, kill_groups_now, self._groups)

    # -- shared ------------------------------------------------------------

    def resolve_cwd(self, cwd: str | None) -> str:
        """The absolute directory for a call's ``cwd`` (relative ones start at the tools' cwd).

        It must lie inside the tools' cwd once symlinks are resolved. That keeps
        the model's work where it was meant to be; it is no sandbox: a command
        may still ``cd`` anywhere.
        """
        if cwd is None or not cwd.strip():
            path = self.cwd
        else:
            path = (self.cwd / os.path.expanduser(cwd.strip())).resolve()
            if path != self.cwd and self.cwd not in path.parents:
                raise ToolError(
                    f"cwd {cwd!r} ({path}) is outside {self.cwd}: commands start there or in "
                    "a directory below it; give a path relative to it"
                )
        if not path.is_dir():
            raise ToolError(
                f"working directory {str(path)!r} does not exist or is not a directory"
                if cwd is None or not cwd.strip()
                else f"cwd {cwd!r} ({path}) does not exist or is not a directory"
            )
        return str(path)

    def check_timeout(self, timeout: float | None, default: float) -> float:
        """``timeout`` (``default`` when absent), refused past ``max_timeout``."""
        value = default if timeout is None else timeout
        if not value > 0:
            raise ToolError(f"timeout must be a positive number of seconds, not {value!r}")
        if value > self.max_timeout:
            raise ToolError(f"timeout may be at most {self.max_timeout:g} seconds, not {value:g}")
        return float(value)

    async def _spawn(
        self,
        command: str,
        cwd: str,
        process_id: str,
        *,
        background: bool,
        on_output: OutputSink,
    ) -> ShellProcess:
        # The callbacks the process keeps hold the interaction, never self: see the class.
        interaction = self.interaction

        async def on_line(stream: Stream, lines: tuple[str, ...]) -> None:
            await interaction.emit(
                BashOutput(process_id=process_id, command=command, stream=stream, lines=lines)
            )

        if not command.strip():
            raise ToolError("command is empty")
        size = BashOutputSize()

        def counted(stream: Stream, text: str) -> None:
            size.add(text)
            on_output(stream, text)

        try:
            prefix = () if self.sandbox is None else tuple(self.sandbox.prefix(cwd))
        except FileNotFoundError as exc:  # no bwrap: never run the command unconfined
            raise ToolError(f"cannot start the command in its sandbox: {exc}") from None
        base = os.environ if self.base_env is None else self.base_env
        environment = {**base, **(self.env or {})}
        starting = ShellProcess.start(
            command,
            shell=self.shell,
            cwd=cwd,
            env=environment,
            on_output=counted,
            on_line=on_line,
            wants_lines=lambda: interaction.wants_output,
            prefix=prefix,
        )
        try:
            if background:
                # Started in an empty context: the process outlives the call, and the
                # call's context holds the agent's objects (hence these very tools).
                process = await _detached(starting)
            else:
                process = await starting
        except OSError as exc:
            raise ToolError(f"could not start {self.shell}: {exc}") from exc
        started = BashStarted(
            process_id=process_id,
            command=command,
            cwd=cwd,
            pid=process.pid,
            background=background,
            size=size,
        )
        try:
            await self.interaction.emit(started)
        except BaseException:
            process.kill_now()  # cancelled while a listener ran: nobody would own it
            raise
        process.read_output()
        return process

    async def _settle_output(self, process: ShellProcess) -> bool:
        """Read the rest of an exited shell's output; stop what keeps it open.

        Returns whether processes were left running and had to be stopped.
        """
        if await process.settle_output(_DRAIN):
            return False
        stopped = process.leftovers()
        if stopped:
            await process.kill(self.kill_grace)
        if not await process.settle_output(_DRAIN):
            # Something outside the group (a new session) holds the pipes, or a
            # listener hangs: stop reading.
            process.close_output()
        return stopped

    # -- bash-run ----------------------------------------------------------

    async def run(self, command: str, *, cwd: str | None, seconds: float | None) -> ToolResult:
        """Run ``command`` to the end (or ``seconds``) and report its exit and output."""
        where = self.resolve_cwd(cwd)
        limit = self.check_timeout(seconds, self.default_timeout)
        process_id = f"run-{next(self._runs)}"
        buffers = {
            "stdout": HeadTailBuffer(self.output_limit),
            "stderr": HeadTailBuffer(self.output_limit),
        }

        def on_output(stream: Stream, text: str) -> None:
            buffers[stream].write(text)

        process = await self._spawn(
            command, where, process_id, background=False, on_output=on_output
        )
        try:
            timed_out = not await process.wait(limit)
            if timed_out:
                await process.kill(self.kill_grace)
            stopped = await self._settle_output(process)
        except BaseException:
            process.kill_now()  # cancelled: nothing may outlive the call
            # The call cannot wait for the exit, so a task sees it and publishes it.
            reaper = _detached(_reap(self.interaction, process_id, command, process))
            _reapers.add(reaper)
            reaper.add_done_callback(_reapers.discard)
            raise
        await process.close()
        await _exited(self.interaction, process_id, command, process, timed_out=timed_out)
        code, signal_name = describe_exit(process.returncode)
        stdout, stderr = buffers["stdout"].text(), buffers["stderr"].text()
        if timed_out:
            status = (
                f"timed out after {limit:g} s: the command and everything it started were "
                f"stopped ({signal_name or f'exit code {code}'}); output until then:"
            )
        elif signal_name is not None:
            status = f"killed by {signal_name} after {_duration(process):.2f} s"
        else:
            status = f"exit code {code} after {_duration(process):.2f} s"
        notes = []
        if stopped:
            notes.append(
                "processes the command left running in the background were stopped when it "
                "exited; use bash-start for long-running processes"
            )
        data = {
            "exit_code": code,
            "signal": signal_name,
            "timed_out": timed_out,
            "duration": round(_duration(process), 3),
            "stdout": stdout,
            "stderr": stderr,
            "stdout_cut": buffers["stdout"].cut,
            "stderr_cut": buffers["stderr"].cut,
        }
        text = "\n".join(
            [status, _section("stdout", stdout, "(empty)"), _section("stderr", stderr, "(empty)")]
            + [f"note: {n}" for n in notes]
        )
        return _result(text, data)

    # -- background processes ---------------------------------------------

    async def start(self, command: str, *, cwd: str | None, context: ToolContext) -> ToolResult:
        """Start ``command`` in the background and return its id at once."""
        where = self.resolve_cwd(cwd)
        running = [p for p in self._background.values() if p.process.running]
        if len(running) >= self.max_processes:
            raise ToolError(
                f"{len(running)} background processes are already running (the limit): stop "
                "one with bash-kill or wait for one with bash-wait "
                f"({', '.join(p.id for p in running)})"
            )
        process_id = await self._new_id(context)
        unread: dict[Stream, TailBuffer] = {
            "stdout": TailBuffer(self.output_limit),
            "stderr": TailBuffer(self.output_limit),
        }

        def on_output(stream: Stream, text: str) -> None:
            unread[stream].write(text)

        process = await self._spawn(
            command, where, process_id, background=True, on_output=on_output
        )
        record = _Background(
            id=process_id,
            env_id=context.env_id,
            command=command,
            cwd=where,
            process=process,
            loop=asyncio.get_running_loop(),
            unread=unread,
        )
        record.monitor = _detached(_monitor(self.interaction, record))
        self._background[(context.env_id, process_id)] = record
        self._groups.add(process.pid)
        self._forget_old()
        return _result(
            f"started {process_id} (pid {process.pid}) in {where}; read its output with "
            f"bash-read, wait for it with bash-wait, stop it with bash-kill",
            {"id": process_id, "pid": process.pid, "cwd": where},
        )

    async def _new_id(self, context: ToolContext) -> str:
        while True:
            if context.ids is not None:
                # Stable across restarts with a persistent storage: an old id is never reused.
                process_id = await context.ids.next("bash")
            else:
                process_id = f"bash-{next(self._fallback_ids)}"
            if (context.env_id, process_id) not in self._background:
                return process_id

    def _forget_old(self) -> None:
        exited = [key for key, p in self._background.items() if not p.process.running]
        for key in exited[: max(0, len(exited) - _KEEP_EXITED)]:
            record = self._background.pop(key)
            record.process.close_output()
            self._groups.discard(record.process.pid)

    def _get(self, process_id: str, context: ToolContext) -> _Background:
        record = self._background.get((context.env_id, process_id.strip()))
        if record is None:
            known = sorted(p.id for p in self._background.values() if p.env_id == context.env_id)
            raise ToolError(
                f"no background process {process_id!r}; "
                + (f"known: {', '.join(known)}" if known else "none has been started (bash-start)")
            )
        if record.loop is not asyncio.get_running_loop():
            raise ToolError(
                f"{record.id} was started in another event loop, which cannot reach it; "
                "keep one event loop for the life of the tools"
            )
        return record

    async def read(self, process_id: str, context: ToolContext) -> ToolResult:
        """The output ``process_id`` wrote since the last read, and whether it still runs."""
        return self._report(self._get(process_id, context))

    async def wait(
        self, process_id: str, *, seconds: float | None, context: ToolContext
    ) -> ToolResult:
        """Wait for ``process_id`` to exit (or ``seconds``), then report like :meth:`read`."""
        record = self._get(process_id, context)
        limit = self.check_timeout(seconds, self.wait_default)
        if await record.process.wait(limit):
            await record.process.settle_output(_DRAIN)
            return self._report(record)
        return self._report(record, waited=limit)

    async def kill(self, process_id: str, context: ToolContext) -> ToolResult:
        """Stop ``process_id`` and everything it started: SIGTERM, then SIGKILL."""
        record = self._get(process_id, context)
        if record.process.running:
            record.killed = True
            await record.process.kill(self.kill_grace)
        elif record.process.leftovers():
            await record.process.kill(self.kill_grace)
        if not await record.process.settle_output(_DRAIN):
            record.process.close_output()
        return self._report(record)

    async def list(self, context: ToolContext) -> ToolResult:
        """Every background process of the caller's environment, oldest first."""
        rows = [p for p in self._background.values() if p.env_id == context.env_id]
        if not rows:
            return _result("no background processes", [])
        data = [
            {
                "id": p.id,
                "status": _status(p),
                "running": p.process.running,
                "exit_code": describe_exit(p.process.returncode)[0],
                "signal": describe_exit(p.process.returncode)[1],
                "pid": p.process.pid,
                "command": p.command,
                "cwd": p.cwd,
                "unread": sum(len(b) for b in p.unread.values()),
            }
            for p in rows
        ]
        lines = [
            f"{d['id']}: {d['status']}; {d['unread']:,} unread characters; $ {_shorten(p.command)}"
            for d, p in zip(data, rows, strict=True)
        ]
        return _result("\n".join(lines), data)

    def _report(self, record: _Background, *, waited: float | None = None) -> ToolResult:
        status = _status(record)
        header = f"{record.id}: {status}"
        if waited is not None:
            header += f" (still running after waiting {waited:g} s)"
        texts: dict[str, str] = {}
        data: dict[str, Any] = {
            "id": record.id,
            "running": record.process.running,
            "exit_code": None,
            "signal": None,
            "killed": record.killed,
        }
        data["exit_code"], data["signal"] = describe_exit(record.process.returncode)
        for stream, buffer in record.unread.items():
            text, dropped = buffer.take()
            if dropped:
                text = f"[... {dropped:,} earlier characters dropped ...]\n{text}"
            texts[stream] = text
            data[stream] = texts[stream]
            data[f"{stream}_dropped"] = dropped
        body = [_section(s, t, "(nothing new)") for s, t in texts.items()]
        return _result("\n".join([header, *body]), data)

    # -- cleanup -----------------------------------------------------------

    async def aclose(self) -> None:
        """Stop every background process still running and forget them all."""
        records = list(self._background.values())
        self._background.clear()
        current = asyncio.get_running_loop()
        for record in records:
            if record.loop is not current:
                record.process.kill_now()  # its loop is elsewhere: no waiting on it here
                self._groups.discard(record.process.pid)
                continue
            if record.process.running or record.process.leftovers():
                record.killed = record.killed or record.process.running
                await record.process.kill(self.kill_grace)
            await record.process.close()
            self._groups.discard(record.process.pid)
            if record.monitor is not None:
                # Let it publish the exit it just saw; a listener that hangs is cut short.
                await asyncio.wait([record.monitor], timeout=_DRAIN)
                record.monitor.cancel()
                await asyncio.gather(record.monitor, return_exceptions=True)


async def _exited(
    interaction: BashInteraction,
    process_id: str,
    command: str,
    process: ShellProcess,
    *,
    timed_out: bool,
) -> None:
    code, signal_name = describe_exit(process.returncode)
    await interaction.emit(
        BashExited(
            process_id=process_id,
            command=command,
            exit_code=code,
            signal=signal_name,
            timed_out=timed_out,
            duration=_duration(process),
        )
    )


def _detached(coroutine: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
    """A task for ``coroutine`` that does not copy the caller's context variables."""
    return asyncio.get_running_loop().create_task(coroutine, context=contextvars.Context())


# Tasks publishing the end of cancelled bash-run calls, held until they finish.
_reapers: set[asyncio.Future[None]] = set()


async def _reap(
    interaction: BashInteraction, process_id: str, command: str, process: ShellProcess
) -> None:
    await process.wait()  # soon: the group was sent SIGKILL
    await process.close()
    await _exited(interaction, process_id, command, process, timed_out=False)


async def _monitor(interaction: BashInteraction, record: _Background) -> None:
    # A function, not a method: the task keeps the session alive otherwise (see BashSession).
    await record.process.wait()
    await record.process.settle_output(_DRAIN)
    await _exited(interaction, record.id, record.command, record.process, timed_out=False)


def _duration(process: ShellProcess) -> float:
    return (process.ended or time.monotonic()) - process.started


def _status(record: _Background) -> str:
    process = record.process
    if process.running:
        return f"running (pid {process.pid}, {_duration(process):.1f} s)"
    code, signal_name = describe_exit(process.returncode)
    how = f"exited with code {code}" if signal_name is None else f"killed by {signal_name}"
    if record.killed:
        how += " (bash-kill)"
    return f"{how} after {_duration(process):.1f} s"


def _section(name: str, text: str, empty: str) -> str:
    if not text:
        return f"{name}: {empty}"
    return f"{name}:\n{text.removesuffix(chr(10))}"


def _shorten(command: str) -> str:
    flat = " ".join(command.split())
    return flat if len(flat) <= _COMMAND_SHOWN else flat[: _COMMAND_SHOWN - 3] + "..."


def _result(text: str, data: Any) -> ToolResult:
    return ToolResult(content=(TextPart(text=text),), structured=data)
