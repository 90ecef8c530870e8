"""One shell command in its own process group: output pumped as it comes, killed as a group."""

from __future__ import annotations

import asyncio
import atexit
import codecs
import contextlib
import contextvars
import os
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from typing import Any, Literal, TypeVar

from ._bash_output import LineSplitter

__all__ = [
    "LineSink",
    "OutputSink",
    "ShellProcess",
    "Stream",
    "describe_exit",
    "group_alive",
    "kill_groups_now",
]

Stream = Literal["stdout", "stderr"]
T = TypeVar("T")

_CHUNK = 65_536
_POLL = 0.02  # seconds between checks while a signalled group winds down
_NAMESPACE_END = 0.5  # seconds a contained command's namespace init gets to go after it

# Process groups started and not yet seen dead. The commands run in sessions of
# their own, so they outlive this process unless killed: if the program ends
# without closing its tools, the exit hook below still stops them.
_live_groups: set[int] = set()


@atexit.register
def _kill_live_groups() -> None:
    for pgid in tuple(_live_groups):
        _signal_group(pgid, signal.SIGKILL)


def kill_groups_now(pgids: Iterable[int]) -> None:
    """SIGKILL those of ``pgids`` not yet seen dead, without waiting (for finalizers)."""
    # Only groups still in _live_groups: a group seen dead may have had its id reused.
    for pgid in tuple(pgids):
        if pgid in _live_groups:
            _signal_group(pgid, signal.SIGKILL)


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def group_alive(pgid: int) -> bool:
    """Whether any process of group ``pgid`` is still running (zombies do not count).

    Zombies matter here: children orphaned by a killed shell go to PID 1, which
    in a container is not always an init that reaps them.
    """
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True  # no /proc to tell zombies apart: assume the worst
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as file:
                stat = file.read()
        except OSError:
            continue  # gone meanwhile
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False


async def _group_gone(pgid: int, seconds: float) -> bool:
    """Poll until group ``pgid`` has no running process, for up to ``seconds``."""
    # No event announces a group's end (its members need not be our children).
    deadline = time.monotonic() + seconds
    while True:
        if not group_alive(pgid):
            return True
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(_POLL)


def describe_exit(returncode: int | None) -> tuple[int | None, str | None]:
    """A return code as (exit code, signal name): ``-9`` is ``(None, "SIGKILL")``."""
    if returncode is None or returncode >= 0:
        return returncode, None
    try:
        return None, signal.Signals(-returncode).name
    except ValueError:
        return None, f"signal {-returncode}"


async def _read_end(fd: int) -> tuple[asyncio.StreamReader, asyncio.BaseTransport]:
    """A stream reader over the read end ``fd`` of a pipe (which it then owns)."""
    reader = asyncio.StreamReader(limit=_CHUNK)
    file = os.fdopen(fd, "rb", buffering=0)
    try:
        transport, _ = await asyncio.get_running_loop().connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), file
        )
    except BaseException:
        file.close()
        raise
    return reader, transport


async def _feed(process: asyncio.subprocess.Process, data: bytes) -> None:
    """Write ``data`` to the process's standard input and close it."""
    pipe = process.stdin
    assert pipe is not None
    # A command that exits (or closes its input) without reading it all is no error.
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        pipe.write(data)
        await pipe.drain()
    pipe.close()


_Pipes = dict[Stream, tuple[asyncio.StreamReader, asyncio.BaseTransport]]
_Spawned = tuple[asyncio.subprocess.Process, _Pipes]


async def _spawn(
    command: str,
    shell: str,
    cwd: str,
    env: Mapping[str, str],
    with_stdin: bool,
    prefix: Sequence[str],
) -> _Spawned:
    """Start ``prefix... shell -c command`` in a new session, with readers on its output."""
    # Pipes of our own rather than asyncio's: the read ends are ours to
    # close, so a descendant that escaped the group and holds the write end
    # cannot keep a caller waiting.
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    try:
        process = await asyncio.create_subprocess_exec(
            *prefix,
            shell,
            "-c",
            command,
            stdin=subprocess.PIPE if with_stdin else subprocess.DEVNULL,
            stdout=out_write,
            stderr=err_write,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
        )
    except BaseException:
        os.close(out_read)
        os.close(err_read)
        raise
    finally:
        os.close(out_write)
        os.close(err_write)
    pipes: _Pipes = {}
    try:
        pipes["stdout"] = await _read_end(out_read)
        pipes["stderr"] = await _read_end(err_read)
    except BaseException:
        # Failed with the command already running: nobody would own it.
        _signal_group(process.pid, signal.SIGKILL)
        if "stdout" not in pipes:
            os.close(err_read)
        for _, transport in pipes.values():
            transport.close()
        raise
    return process, pipes


def _undo_spawn(spawning: asyncio.Future[_Spawned]) -> None:
    """Kill the group a start nobody waits for any more started, and stop reading it."""
    if spawning.cancelled() or spawning.exception() is not None:
        return
    process, pipes = spawning.result()
    _signal_group(process.pid, signal.SIGKILL)
    if process.stdin is not None:
        process.stdin.close()
    for _, transport in pipes.values():
        transport.close()


OutputSink = Callable[[Stream, str], None]
LineSink = Callable[[Stream, tuple[str, ...]], Awaitable[None]]
"""Receives the complete lines of each chunk read, at once; used only while ``wants_lines()``."""


class ShellProcess:
    """A command run by ``shell -c`` in a new session (so a process group of its own).

    Its stdin is closed; each chunk of stdout and stderr goes to ``on_output``
    as soon as it arrives, and the complete lines it holds to ``on_line``.
    """

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        pipes: dict[Stream, tuple[asyncio.StreamReader, asyncio.BaseTransport]],
        *,
        on_output: OutputSink,
        on_line: LineSink | None,
        wants_lines: Callable[[], bool],
        contained: bool = False,
    ) -> None:
        self._process = process
        self._contained = contained
        self.pid = process.pid
        """The shell's process id, which is also its process group id."""
        self.started = time.monotonic()
        """When it started (``time.monotonic()``)."""
        self.ended: float | None = None
        """When the shell exited (``time.monotonic()``), or ``None``."""
        self._on_output = on_output
        self._on_line = on_line
        self._wants_lines = wants_lines
        self._pipes = pipes
        self._transports = [transport for _, transport in pipes.values()]
        self._pumps: list[asyncio.Future[None]] = []
        self._progress = 0  # chunks read plus deliveries to on_line: tells slow from stuck
        # The context it was started in (an empty one for a background process), for
        # its own tasks: were they to copy a later caller's, that caller's objects
        # would live as long as the process.
        self._context = contextvars.copy_context()
        self._exit = self._task(self._watch_exit())
        self._feeder: asyncio.Task[None] | None = None
        _live_groups.add(self.pid)

    @classmethod
    async def start(
        cls,
        command: str,
        *,
        shell: str,
        cwd: str,
        env: Mapping[str, str],
        on_output: OutputSink,
        on_line: LineSink | None = None,
        wants_lines: Callable[[], bool] = lambda: True,
        stdin: bytes | None = None,
        prefix: Sequence[str] = (),
    ) -> ShellProcess:
        """Start ``command``; an ``OSError`` if the shell or ``cwd`` cannot be used.

        ``stdin`` is fed to its standard input, then closed (``None``: it reads end
        of file at once). ``prefix`` goes before the shell (a sandbox's ``bwrap ...``):
        the process group's leader is then that program.
        """
        # The start runs as a task of its own, shielded: once the command is forked, a
        # cancellation must not leave it behind. asyncio, cancelled while it connects
        # a new process's pipes, kills the shell alone, not what the shell started.
        spawning = asyncio.ensure_future(
            _spawn(command, shell, cwd, env, stdin is not None, tuple(prefix))
        )
        try:
            process, pipes = await asyncio.shield(spawning)
        except asyncio.CancelledError:
            # A start about to fail fails anyway; one about to succeed is undone (the
            # callback runs even if this wait is cancelled again).
            spawning.add_done_callback(_undo_spawn)
            await asyncio.wait({spawning})
            if not spawning.cancelled() and spawning.exception() is None:
                await spawning.result()[0].wait()  # killed: it ends at once
            raise
        shell_process = cls(
            process,
            pipes,
            on_output=on_output,
            on_line=on_line,
            wants_lines=wants_lines,
            contained=bool(prefix),
        )
        if stdin is not None:
            shell_process._feeder = shell_process._task(_feed(process, stdin))
        return shell_process

    def read_output(self) -> None:
        """Start passing output on (held back until then, so a start event can go first)."""
        if not self._pumps:
            self._pumps = [
                self._task(self._pump(name, reader)) for name, (reader, _) in self._pipes.items()
            ]

    def _task(self, coroutine: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        return asyncio.get_running_loop().create_task(coroutine, context=self._context)

    async def _pump(self, name: Stream, reader: asyncio.StreamReader) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        lines = LineSplitter()
        while True:
            chunk = await reader.read(_CHUNK)
            self._progress += 1
            text = decoder.decode(chunk, final=not chunk)
            if text:
                self._on_output(name, text)
                if self._on_line is not None and self._wants_lines():
                    # One call per chunk, not per line: awaiting a listener for each of
                    # the thousands of lines in a chunk made output-heavy commands crawl.
                    complete = lines.feed(text)
                    if complete:
                        await self._on_line(name, tuple(complete))
                        self._progress += 1
                else:
                    lines.skip(text)  # splitting megabytes nobody reads costs more than reading
            if not chunk:
                break
        if self._on_line is not None and self._wants_lines():
            last = lines.flush()
            if last:
                await self._on_line(name, tuple(last))

    async def _watch_exit(self) -> int:
        code = await self._process.wait()
        if self._contained:
            # bwrap exits as its command does; the namespace's init, in the same group,
            # a moment later (at once if nothing else runs there). Wait that moment, so
            # the group reads as gone when the command left nothing behind.
            await _group_gone(self.pid, _NAMESPACE_END)
        self.ended = time.monotonic()
        if not group_alive(self.pid):
            _live_groups.discard(self.pid)
        return code

    @property
    def returncode(self) -> int | None:
        """The shell's return code (negative: killed by that signal), ``None`` while running."""
        return self._exit.result() if self._exit.done() else None

    @property
    def running(self) -> bool:
        """Whether the shell has not exited yet."""
        return not self._exit.done()

    @property
    def output_done(self) -> bool:
        """Whether both output streams have reached their end."""
        return bool(self._pumps) and all(p.done() for p in self._pumps)

    async def wait(self, seconds: float | None = None) -> bool:
        """Wait up to ``seconds`` (``None``: for ever) for the shell to exit; whether it did."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await asyncio.shield(self._exit)
        return self._exit.done()

    async def wait_output(self, seconds: float) -> bool:
        """Wait up to ``seconds`` for the output to end; whether it did."""
        self.read_output()
        await asyncio.wait(self._pumps, timeout=seconds)
        return self.output_done

    async def settle_output(self, quiet: float) -> bool:
        """Wait for the output to end for as long as it keeps moving; whether it ended.

        Gives up once ``quiet`` seconds pass with no chunk read and no line
        delivered: then something still holds the pipes open, or a listener hangs.
        """
        while True:
            before = self._progress
            if await self.wait_output(quiet):
                return True
            if self._progress == before:
                return False

    async def kill(self, grace: float) -> None:
        """SIGTERM the whole group, then SIGKILL what is left after ``grace`` seconds."""
        _signal_group(self.pid, signal.SIGTERM)
        if not await _group_gone(self.pid, grace):
            _signal_group(self.pid, signal.SIGKILL)
        await self.wait()
        # SIGKILL cannot be refused: the group goes at once, short of a stuck kernel call.
        if await _group_gone(self.pid, max(grace, 1.0)):
            _live_groups.discard(self.pid)

    def kill_now(self) -> None:
        """SIGKILL the group without waiting: for cancellation, which cannot wait."""
        _signal_group(self.pid, signal.SIGKILL)
        self.close_output()
        if self._feeder is not None:
            self._feeder.cancel()

    def leftovers(self) -> bool:
        """Whether processes of the group still run after the shell exited."""
        alive = group_alive(self.pid)
        if not alive:
            _live_groups.discard(self.pid)
        return alive

    def close_output(self) -> None:
        """Stop reading output, even if some process still holds the pipes."""
        for transport in self._transports:
            transport.close()
        for pump in self._pumps:
            pump.cancel()

    async def close(self) -> None:
        """Stop reading and wait until the readers have let go."""
        self.close_output()
        await asyncio.gather(*self._pumps, return_exceptions=True)
        if self._feeder is not None:
            self._feeder.cancel()
            await asyncio.gather(self._feeder, return_exceptions=True)
        if not self._exit.done():
            self._exit.cancel()
            await asyncio.gather(self._exit, return_exceptions=True)
