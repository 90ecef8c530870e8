"""Agents as tools, and delegation: one agent handing a task to another."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Generator, Sequence
from typing import TYPE_CHECKING, Any, Generic

from .._core import ChunkCallback, ToolError, UserError
from .._core.result import OutputT, RunResult
from ..tools import Tool, ToolContext, ToolResult
from ._team import current_scope, ended, run_worker, settle, start_worker

if TYPE_CHECKING:
    from ._agent import BaseAgent

__all__ = ["AgentTool", "DelegationFuture", "gather_delegations"]

_log = logging.getLogger("heron.agents")

_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


class AgentTool(Tool):
    """Another agent, offered to a model as a tool taking one argument, ``task``.

    Made by :meth:`BaseAgent.as_tool`. The worker keeps its conversation
    between calls, so a later task can build on an earlier one; calls made
    while it is busy wait their turn. Its chunks reach the calling run's
    ``on_chunk`` tagged with its name, and its :class:`RunResult` is kept on
    the calling run's tool-call record (``record.runs``), its tokens counted
    into the calling run's.
    """

    def __init__(
        self, worker: BaseAgent, *, name: str | None = None, description: str | None = None
    ) -> None:
        self.worker = worker
        """The agent that does the work."""
        name = name if name is not None else worker.name
        if not _TOOL_NAME.fullmatch(name):
            raise UserError(
                f"{name!r} is not usable as a tool name (1-64 letters, digits, '_' and '-'); "
                "pass another as as_tool(name=...)"
            )
        if description is None:
            role = worker.instruction.strip().split("\n", 1)[0]
            description = f"Hand a task to the {worker.name!r} agent and get its answer." + (
                f" Its role: {role}" if role else ""
            )
        super().__init__(
            name=name,
            description=description,
            input_schema={
                "type": "object",
                "properties": {
                    "task": {
                        "type": "string",
                        "description": "The task, with every detail the agent needs: "
                        "it sees nothing of this conversation.",
                    }
                },
                "required": ["task"],
                "additionalProperties": False,
            },
        )

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Check for exactly one string argument, ``task`` (cheaper than a schema check)."""
        task = arguments.get("task")
        if not isinstance(task, str) or len(arguments) != 1:
            raise ToolError(
                f"invalid arguments for tool {self.name!r}: expected one string "
                f"argument 'task', got {json.dumps(arguments)[:200]}"
            )
        return arguments

    async def execute(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Run the worker on ``arguments["task"]``; its reply is the tool's result."""
        scope = current_scope()
        result = await run_worker(
            self.worker,
            arguments["task"],
            delegated_by=scope.agent_name if scope is not None else None,
        )
        if not result.reply and not result.stopped:
            return ToolResult.error(
                f"agent {self.worker.name!r} stopped ({result.stop_reason}) without an answer"
            )
        if result.stop_reason == "max_tokens":
            # The calling model must not take half an answer for a whole one.
            return ToolResult.of_text(
                f"{result.reply}\n\n[agent {self.worker.name!r}'s answer was cut off by "
                "its model's token limit]"
            )
        return ToolResult.of_text(result.reply or "(no answer)")


class DelegationFuture(Generic[OutputT]):
    """A delegated run going on in the background: ``await`` it for its :class:`RunResult`.

    Made by :meth:`BaseAgent.delegate_later`. The run starts at once; awaiting
    the future returns its result or raises its error, and cancelling the
    awaiting task cancels the run. Once it is done, :meth:`result` and
    :meth:`exception` read the outcome without waiting; :attr:`task` is the
    underlying :class:`asyncio.Task`, for ``asyncio.wait()`` and friends.

    Started inside a tool call, the run is on that call's record from the
    start and may not outlive the call: it is cancelled when the call ends,
    which is also what cancelling the calling run does. Started outside any
    call and awaited inside one, it is recorded on the awaiting call. A
    failure nobody looked at (by awaiting, :meth:`result`, :meth:`exception`
    or :func:`gather_delegations`) is logged when the future is dropped.
    """

    def __init__(
        self,
        worker: BaseAgent,
        task: str,
        *,
        delegated_by: str,
        on_chunk: ChunkCallback | None = None,
        output_type: Any = None,
    ) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            raise UserError(
                "delegate_later() needs a running event loop: call it from async code "
                "(an `async def` tool, say), or use `await delegate()`"
            ) from None
        partial, run = start_worker(
            worker, task, delegated_by=delegated_by, on_chunk=on_chunk, output_type=output_type
        )
        self.agent_name = worker.name
        """Name of the agent doing the work."""
        self.task = task
        """The task handed over."""
        self.partial: RunResult[OutputT] = partial
        """The run's result as it fills in: the full result once done, the partial one
        after a failure or cancellation."""
        self._observed = False
        self._task: asyncio.Task[RunResult[OutputT]] = asyncio.ensure_future(run)
        self._task.add_done_callback(self._ended)
        scope = current_scope()
        self._recorded = scope is not None
        if scope is not None:
            scope.own(self._task)

    @property
    def asyncio_task(self) -> asyncio.Task[RunResult[OutputT]]:
        """The task running the delegation: pass it to ``asyncio.wait()``,
        ``asyncio.as_completed()`` and the like."""
        self._observed = True
        return self._task

    def done(self) -> bool:
        """Whether the run has ended (finished, failed or cancelled)."""
        return self._task.done()

    def cancel(self) -> bool:
        """Ask the run to stop; ``False`` if it had already ended."""
        return self._task.cancel()

    def result(self) -> RunResult[OutputT]:
        """The finished run's result, without waiting.

        Raises the run's error if it failed, :class:`asyncio.CancelledError` if
        it was cancelled, and :class:`asyncio.InvalidStateError` while it runs.
        """
        self._observed = True
        return self._task.result()

    def exception(self) -> BaseException | None:
        """The run's error, or ``None`` if it finished; raises as :meth:`result`
        does while it runs or once cancelled."""
        self._observed = True
        return self._task.exception()

    def __await__(self) -> Generator[Any, None, RunResult[OutputT]]:
        self._claim()
        return self._task.__await__()

    def _claim(self) -> None:
        """Mark the outcome as looked at; a run started outside any tool call and
        awaited inside one is put on that call's record (and counted in its run)."""
        self._observed = True
        scope = current_scope()
        if scope is not None and not self._recorded:
            self._recorded = True
            scope.record(self.partial)

    def __repr__(self) -> str:
        state = "done" if self.done() else "running"
        return f"<DelegationFuture {self.agent_name!r} {state}>"

    def __del__(self) -> None:
        task = getattr(self, "_task", None)
        if task is None or self._observed or not task.done() or task.cancelled():
            return
        error = task.exception()
        if error is not None:
            _log.error(
                "delegation to %r (task %r) failed and nobody awaited it: %s: %s",
                self.agent_name,
                self.task,
                type(error).__name__,
                error,
            )

    def _ended(self, task: asyncio.Task[Any]) -> None:
        if task.cancelled():
            if self.partial.stop_reason is None:  # cancelled before the run began
                ended(self.partial, None)
        else:
            # Read here so that asyncio does not log "Task exception was never
            # retrieved": an unread failure is logged by __del__ instead, once.
            task.exception()


async def gather_delegations(
    *futures: DelegationFuture[Any], cancel_on_error: bool = False
) -> list[RunResult[Any]]:
    """Wait for every delegation; return their results in the order given.

    A failed run does not stop the others: its partial result comes back like
    the rest, with ``stop_reason == "error"`` and ``error`` saying what went
    wrong. With ``cancel_on_error=True`` the first failure cancels the runs
    still going and is raised once they have stopped. Cancelling the caller
    cancels every run::

        futures = [lead.delegate_later(to=w, task=t) for w, t in assignments]
        for result in await gather_delegations(*futures):
            print(result.agent_name, result.stop_reason, result.reply)
    """
    for f in futures:
        if not isinstance(f, DelegationFuture):
            raise UserError(
                f"gather_delegations() takes DelegationFuture values, not {type(f).__name__}"
            )
    tasks = [f._task for f in futures]
    for f in futures:
        f._claim()  # failures come back on the partial results, or are raised
    try:
        if cancel_on_error:
            await _until_first_failure(tasks)
        else:
            if tasks:
                await asyncio.wait(tasks)
    except asyncio.CancelledError:
        for t in tasks:
            t.cancel()
        await settle(tasks)
        raise
    return [f.partial for f in futures]


async def _until_first_failure(tasks: Sequence[asyncio.Task[Any]]) -> None:
    pending = set(tasks)
    while pending:
        done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_EXCEPTION)
        failed = [t for t in done if not t.cancelled() and t.exception() is not None]
        if failed:
            for t in pending:
                t.cancel()
            await settle(pending)
            # The first failure in the order the futures were given.
            error = next(t for t in tasks if t in failed).exception()
            assert error is not None
            raise error
