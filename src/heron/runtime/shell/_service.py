"""``POST /v1/bash``: one command, run to its end, as the daemon's user (no sandbox)."""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from typing import TYPE_CHECKING

from ... import api
from ...tools.bash import ShellProcess, Stream, describe_exit
from ..files import check_path
from ..nodes import Feature, Kernel, RunSetup
from ..server import ApiError
from ._environment import WITHHELD_VARIABLES, command_environment
from ._ledger import JobLedger
from ._sandbox import NodeSandbox

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = [
    "KILL_GRACE",
    "OUTPUT_LIMIT",
    "WITHHELD_VARIABLES",
    "Commands",
    "command_environment",
]

OUTPUT_LIMIT = 1024 * 1024
"""Bytes of each output stream a result keeps."""
KILL_GRACE = 2.0
"""Seconds a stopped command's group gets between SIGTERM and SIGKILL."""
_DRAIN = 0.5  # seconds output may keep coming after the shell exited, before leftovers go


class _Capture:
    """The first ``limit`` bytes (UTF-8) of one output stream; the rest only counted."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._parts: list[bytes] = []
        self._size = 0
        self.truncated = False
        """Whether output went past the limit."""

    def write(self, text: str) -> None:
        if self.truncated:
            return
        data = text.encode("utf-8")
        room = self._limit - self._size
        if len(data) > room:
            data = data[:room]
            self.truncated = True
        self._parts.append(data)
        self._size += len(data)

    def text(self) -> str:
        # Only the last character can be cut (at the limit): "ignore" drops just that.
        return b"".join(self._parts).decode("utf-8", "ignore")


def _check_env(env: dict[str, str] | None) -> dict[str, str]:
    """``env``, or ``422 invalid_env`` naming a variable the system cannot hold."""
    for name, value in (env or {}).items():
        if not name or "=" in name or "\0" in name or "\0" in value:
            raise ApiError(
                422,
                "invalid_env",
                f"environment variable {name!r}: a name is non-empty without '=' or NUL, "
                "and a value holds no NUL",
            )
    return dict(env or {})


def _check_cwd(raw: str) -> str:
    """The normalised ``cwd``; ``422 invalid_cwd`` unless it is an existing directory."""
    path = check_path(raw, code="invalid_cwd", what="cwd")
    if not os.path.isdir(path):
        reason = "does not exist" if not os.path.exists(path) else "is not a directory"
        raise ApiError(422, "invalid_cwd", f"cwd {path} {reason}", {"path": path})
    return path


class Commands(Feature):
    """The commands running for ``/v1/bash``, and where node commands run."""

    sandbox: NodeSandbox

    def __init__(self, engine: Kernel) -> None:
        self._engine = engine
        self._running: set[ShellProcess] = set()
        self._stopping = False
        self.shell = shutil.which("bash") or "/bin/bash"
        """The shell every command runs in."""
        self.sandbox = NodeSandbox(engine.config)
        """Where node commands run (bubblewrap, when the daemon has it)."""
        # One per process on the home: a worker's commands are its own to reap.
        self.ledger = JobLedger(engine.config.home / f"jobs{engine.config.process_suffix}.json")
        """The process groups of the commands running (``/v1/bash``'s and the nodes' jobs),
        on disk for the next daemon, should this one die."""

    async def before_launch(self) -> None:
        """Reap before any run resumes: the commands a dead daemon left are nobody's now."""
        self.ledger.reap()

    async def run(self, request: api.BashRequest) -> api.BashResult:
        """Run the command to its end (or its timeout) and describe how it ended."""
        cwd = _check_cwd(request.cwd)
        if "\0" in request.command:
            raise ApiError(422, "invalid_command", "the command contains a NUL character")
        env = command_environment(_check_env(request.env))
        if self._stopping:
            raise ApiError(503, "daemon_stopping", "the daemon is stopping: no command starts")
        output = {"stdout": _Capture(OUTPUT_LIMIT), "stderr": _Capture(OUTPUT_LIMIT)}

        def on_output(stream: Stream, text: str) -> None:
            output[stream].write(text)

        try:
            process = await ShellProcess.start(
                request.command,
                shell=self.shell,
                cwd=cwd,
                env=env,
                on_output=on_output,
                stdin=None if request.stdin is None else request.stdin.encode("utf-8", "replace"),
                prefix=self.sandbox.contain or (),
            )
        except OSError as exc:
            if exc.filename == cwd:
                message = f"cwd {cwd}: {exc.strerror or exc}"
                raise ApiError(422, "invalid_cwd", message, {"path": cwd}) from None
            raise ApiError(500, "bash_unavailable", f"cannot start {self.shell}: {exc}") from None
        ledger = self.ledger
        self._running.add(process)
        ledger.add(process.pid)
        try:
            process.read_output()
            if self._stopping:  # the daemon began to stop while it started: aclose missed it
                await process.kill(KILL_GRACE)
            timed_out = not await process.wait(request.timeout)
            if timed_out:
                await process.kill(KILL_GRACE)
            await self._settle(process)
        except BaseException:
            process.kill_now()  # cancelled (the client went away): nothing outlives the call
            raise
        finally:
            self._running.discard(process)
            ledger.remove([process.pid])
        await process.close()
        code, signal_name = describe_exit(process.returncode)
        if self.sandbox.contain and code is not None and 128 < code <= 128 + 64:
            # The namespace's init reports a shell killed by signal n as 128 + n.
            code, signal_name = describe_exit(128 - code)
        ended = process.ended if process.ended is not None else time.monotonic()
        result = api.BashResult(
            exit_code=code,
            signal=signal_name,
            stdout=output["stdout"].text(),
            stderr=output["stderr"].text(),
            stdout_truncated=output["stdout"].truncated,
            stderr_truncated=output["stderr"].truncated,
            truncated=output["stdout"].truncated or output["stderr"].truncated,
            timed_out=timed_out,
            duration_ms=round((ended - process.started) * 1000),
        )
        if self._stopping and not timed_out:
            raise ApiError(
                503,
                "daemon_stopping",
                "the daemon stopped while the command ran: it was killed",
                result.model_dump(mode="json"),
            )
        return result

    async def _settle(self, process: ShellProcess) -> None:
        """Read the rest of an exited shell's output; stop what it left running."""
        settled = await process.settle_output(_DRAIN)
        if process.leftovers():
            await process.kill(KILL_GRACE)
            settled = await process.settle_output(_DRAIN)
        if not settled:
            # A process outside the group (a new session) holds the pipes: stop reading.
            process.close_output()

    def setup(self, run: RunSetup) -> None:
        """A node's file tools never show the daemon's secrets."""
        run.hidden = self.sandbox.hidden_from_files

    def routes(self, app: FastAPI) -> None:
        """Serve ``POST /v1/bash``."""
        from ._routes import add_shell_routes  # (it imports this module)

        add_shell_routes(app, self)

    async def stop(self) -> None:
        """Kill the commands still running: they never outlive the daemon."""
        await self.aclose()

    async def end_requests(self) -> None:
        """Kill the commands still running: their requests answer at once."""
        await self.aclose()

    async def aclose(self) -> None:
        """Kill every running command (the daemon stops); their requests answer 503."""
        self._stopping = True
        await asyncio.gather(*(process.kill(KILL_GRACE) for process in list(self._running)))
