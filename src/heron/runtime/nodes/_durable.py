"""The agent's provider and tool client as DBOS steps: a recovered workflow gets the
recorded answers back (what runs again: ARCHITECTURE.md, "At least once")."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine, Iterator, Sequence
from typing import Any, TypeVar

from dbos import DBOS

from ..._core import (
    Capabilities,
    ChatResponse,
    ChunkCallback,
    Message,
    StreamChunk,
    ToolSchema,
)
from ..._core.compaction import is_compaction_request
from ...agents import ToolCallRecord, current_tool_call
from ...providers import Provider
from ...tools import ToolClient, ToolResult
from ..events import EventLog
from ._feature import ModelSource
from ._store import NodeStore

__all__ = ["DurableProvider", "DurableToolClient", "Steps", "call_key", "shape_summary"]

T = TypeVar("T")


def call_key(run: int) -> str:
    """The tool call being run, as ``run:step:call id``: the same when DBOS runs its step
    again after a crash (tools that make things key them on it, to make them once)."""
    call = current_tool_call()
    call_id = call.id if call is not None else ""
    step = DBOS.step_id if DBOS.step_id is not None else 0
    return f"{run}:{step}:{call_id}"


class Steps:
    """Runs a workflow's steps, knowing when the replay of recorded ones is over.

    After a restart DBOS replays the steps it recorded (returning their results
    without running them). ``caught_up`` is set once as many steps have gone by
    as were recorded: from then on the run is live, and only then may it be
    stopped, or its steps would no longer match the record.
    """

    def __init__(self, recorded: int, *, node_id: str, run: int, recovered: bool = False) -> None:
        self._left = recorded
        self.node_id = node_id
        """The node whose run this is."""
        self.run_number = run
        """The run's number (the node's ``runs`` when it started)."""
        self.recovered = recovered or recorded > 0
        """The run was begun by an earlier process: a crash came, a step may run again."""
        self.caught_up = asyncio.Event()
        """Set once every recorded step has been replayed."""
        if recorded <= 0:
            self.caught_up.set()

    def key(self) -> str:
        """The step being run, as ``run:step`` (the same when DBOS runs it again)."""
        step = DBOS.step_id if DBOS.step_id is not None else 0
        return f"{self.run_number}:{step}"

    async def ended_before(self, store: NodeStore, key: str) -> bool:
        """Whether step ``key`` ended in an earlier process (its mark was written): DBOS
        runs it again, its result unrecorded, and it must publish and count nothing."""
        return self.recovered and await store.step_mark(self.node_id) == key

    async def run(self, name: str, func: Callable[..., Coroutine[Any, Any, T]], *args: Any) -> T:
        """Run ``func(*args)`` as the workflow's next step, named ``name``."""
        try:
            result: T = await DBOS.run_step_async({"name": name}, func, *args)
            return result
        finally:
            self._left -= 1
            if self._left <= 0:
                self.caught_up.set()


_EXPLAINED_TOOLS = frozenset({"submit-result"})
"""Tools whose failure reason goes on ``node.tool_call.completed``: the daemon's own
check of the node's result, which whoever watches needs to see (other tools' output
stays off the stream)."""

_MAX_EXPLAINED = 2000
"""The most characters of a failure reason put on an event."""


def shape_summary(value: Any) -> str:
    """The shape of tool arguments without their values: ``object with 2 fields`` ..."""
    if value is None:
        return "null"
    if isinstance(value, dict):
        return f"object with {len(value)} field{'' if len(value) == 1 else 's'}"
    if isinstance(value, list | tuple):
        return f"array of {len(value)} item{'' if len(value) == 1 else 's'}"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return type(value).__name__


class DurableProvider(Provider):
    """A node's provider: each ``chat`` is one recorded step; the model is looked up per turn."""

    def __init__(
        self,
        *,
        steps: Steps,
        node_id: str,
        model: Callable[[], str | None],
        providers: ModelSource,
        store: NodeStore,
        events: EventLog,
    ) -> None:
        self._steps = steps
        self._node_id = node_id
        self._model = model
        self._providers = providers
        self._store = store
        self._events = events

    @property
    def _current(self) -> Provider:
        return self._providers.get(self._model())

    @property
    def name(self) -> str:  # type: ignore[override]
        """The current provider's name."""
        return self._current.name

    @property
    def model(self) -> str | None:  # type: ignore[override]
        """The current provider's model."""
        return self._current.model

    @property
    def capabilities(self) -> Capabilities:
        """The current provider's capabilities."""
        return self._current.capabilities

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] | None = None,
        on_chunk: ChunkCallback | None = None,
    ) -> ChatResponse:
        """One model turn, run (or, after a restart, replayed) as a workflow step."""
        return await self._steps.run("model-turn", self._turn, list(messages), list(tools or ()))

    async def _turn(self, messages: list[Message], tools: list[ToolSchema]) -> ChatResponse:
        node_id, events, key = self._node_id, self._events, self._steps.key()
        if await self._steps.ended_before(self._store, key):
            async with self._providers.use(self._model()) as provider:  # quietly: see above
                return await provider.chat(messages, tools=tools or None)
        # Folding the context into memory is the agent's housekeeping, not a turn of the
        # conversation: its summary is not the node's output, so none of it is streamed.
        shown = not is_compaction_request(messages)
        if shown:
            events.publish(node_id, "node.turn.started", {})

        def relay(chunk: StreamChunk) -> None:
            if chunk.role == "assistant" and chunk.content:
                events.publish(node_id, "node.output_text.delta", {"delta": chunk.content})

        relayed = relay if shown else None
        try:
            # (A refused key's message is scrubbed of it before it becomes the outcome.)
            async with self._providers.use(self._model()) as provider:
                response = await provider.chat(messages, tools=tools or None, on_chunk=relayed)
            if shown and response.content:
                events.publish(node_id, "node.output_text.done", {"text": response.content})
        except asyncio.CancelledError:
            if shown:  # (a stop or a shutdown: the next step, or the next daemon, writes it)
                events.publish(node_id, "node.turn.completed", {})
            raise
        except BaseException:
            # A turn that failed still ends, so a reader never waits on it.
            if shown:
                events.publish(node_id, "node.turn.completed", {})
            await events.step_done(node_id, key)
            raise
        if shown:
            events.publish(node_id, "node.turn.completed", {})
        usage = (response.input_tokens, response.output_tokens)
        await events.step_done(node_id, key, usage=usage)
        return response


class DurableToolClient(ToolClient):
    """A node's tools: each call is one recorded step, announced by tool-call events."""

    def __init__(
        self, inner: ToolClient, *, node_id: str, events: EventLog, steps: Steps, store: NodeStore
    ) -> None:
        self._steps = steps
        self._store = store
        self._inner = inner
        self._node_id = node_id
        self._events = events
        self._reached: set[str] = set()  # ids of calls that reached call_tool

    async def list_tools(self) -> list[ToolSchema]:
        """The inner client's tools."""
        return await self._inner.list_tools()

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run the call as a workflow step (replayed from the record after a restart)."""
        call = current_tool_call()
        call_id = call.id if call is not None else ""
        self._reached.add(call_id)
        return await self._steps.run("tool-call", self._call, call_id, name, arguments)

    async def on_tool_result(self, record: ToolCallRecord) -> None:
        """Announce a call the agent answered without reaching a tool (an unknown tool, or
        arguments that were not valid JSON): a watcher sees it fail like any other call.

        Such calls are no workflow step, so a resumed run answers them again: they are
        announced only once the run has caught up with its record.
        """
        if record.id in self._reached:
            self._reached.discard(record.id)
            return
        if not self._steps.caught_up.is_set():
            return
        with self._announced(record.id, record.name, record.arguments):
            pass  # answered by the agent itself, as an error

    async def _call(self, call_id: str, name: str, arguments: dict[str, Any]) -> ToolResult:
        key = self._steps.key()
        if await self._steps.ended_before(self._store, key):
            return await self._inner.call_tool(name, arguments)  # quietly (module docstring)
        try:
            with self._announced(call_id, name, arguments) as step:
                result = await self._inner.call_tool(name, arguments)
                step["status"] = "error" if result.is_error else "ok"
                if result.is_error and name in _EXPLAINED_TOOLS:
                    step["error"] = result.text[:_MAX_EXPLAINED]
        except asyncio.CancelledError:
            raise
        except BaseException:
            await self._events.step_done(self._node_id, key)
            raise
        await self._events.step_done(self._node_id, key)
        return result

    @contextlib.contextmanager
    def _announced(
        self, call_id: str, name: str, arguments: dict[str, Any]
    ) -> Iterator[dict[str, str]]:
        """``node.tool_call.started`` now, ``node.tool_call.completed`` on the way out
        with the ``status`` the block set: ``error`` unless it says otherwise, so a call
        that raised or was cancelled is completed too, as an error."""
        common = {"tool_call_id": call_id, "tool": name, "summary": shape_summary(arguments)}
        step = {"status": "error"}
        self._events.publish(self._node_id, "node.tool_call.started", common)
        try:
            yield step
        finally:
            self._events.publish(self._node_id, "node.tool_call.completed", {**common, **step})
