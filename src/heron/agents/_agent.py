"""Agents: :class:`BaseAgent` (any tool client) and :class:`SimpleAgent` (in-process tools)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from contextvars import ContextVar
from typing import Any, TypedDict, TypeVar, overload

from typing_extensions import Unpack

from .._core import ChunkCallback, Message, ToolSchema, Usage, UserError
from .._core.result import RunResult
from ..providers import Provider
from ..tools import (
    LocalToolClient,
    Skill,
    Storage,
    Tool,
    ToolClient,
    merge_tools,
    render_skills,
    require_skills,
)
from ._compaction import Compaction
from ._conversation import Conversation
from ._delegation import AgentTool, DelegationFuture
from ._iter import AgentRun
from ._limits import DEFAULT_MAX_TURNS
from ._output import OutputSpec
from ._roles import ImageDescriber, ProvidersInput, resolve_providers
from ._run import Run, ToolCallHook, ToolResultHook, system_text
from ._state import AgentState
from ._stream import AgentStream
from ._team import run_worker

__all__ = ["DEFAULT_MAX_TURNS", "AgentOptions", "BaseAgent", "SimpleAgent"]

T = TypeVar("T")


# The agents whose run() is in progress in this task (and the tasks it started),
# outermost first, so that a tool calling its own agent, or two agents calling
# each other, fail clearly instead of deadlocking.
_RUNNING: ContextVar[tuple[BaseAgent, ...]] = ContextVar("heron_running_agents", default=())


class BaseAgent:
    """An agent loop over a provider and an explicit :class:`ToolClient`.

    Use :class:`SimpleAgent` unless the tools live elsewhere (an MCP server, a
    sandbox); ``allowed_tools`` then limits which of the client's tools the
    model sees (skills' tools are added to it)::

        agent = BaseAgent(
            provider=provider,
            instruction="You are a helpful assistant.",
            tool_client=client,
            allowed_tools=["get-current-time"],
        )
        result = await agent.run("What time is it?")

    ``provider`` is one provider, or ``[("main", p1), ("image", p2)]`` to have
    images in tool output described to text by ``p2`` (a single provider
    describes them itself if it accepts images; otherwise they are dropped
    and the model is told so).
    """

    def __init__(
        self,
        *,
        provider: ProvidersInput,
        tool_client: ToolClient,
        instruction: str = "",
        allowed_tools: Sequence[str] | None = None,
        skills: Sequence[Skill] = (),
        name: str | None = None,
        state: AgentState | Mapping[str, Any] | None = None,
        max_turns: int = DEFAULT_MAX_TURNS,
        output_retries: int = 2,
        on_tool_call: ToolCallHook | None = None,
        on_tool_result: ToolResultHook | None = None,
    ) -> None:
        skills = () if skills is None else skills
        instruction = instruction or ""
        roles = resolve_providers(provider)
        if not isinstance(tool_client, ToolClient):
            raise UserError(
                f"tool_client must be a heron ToolClient, not {type(tool_client).__name__}"
            )
        if not _is_int(max_turns) or max_turns < 1:
            raise UserError(f"max_turns must be a whole number of at least 1, not {max_turns!r}")
        if not _is_int(output_retries) or output_retries < 0:
            raise UserError(f"output_retries must be a whole number >= 0, not {output_retries!r}")
        if isinstance(allowed_tools, str):
            raise UserError("allowed_tools must be a list of tool names, not one string")
        saved = AgentState.load(state) if state is not None else AgentState()
        self.provider: Provider = roles.main
        """The provider driving the loop (the ``main`` role)."""
        self.image_provider: Provider | None = roles.image
        """The provider describing images in tool output (the ``image`` role), if any."""
        self.image_describer = ImageDescriber(roles.image)
        """Turns images in tool results into text before the model sees them."""
        self.tool_client = tool_client
        """Where the agent's tools run."""
        self.instruction = instruction
        """The agent's instruction, first in the system prompt."""
        self.skills: tuple[Skill, ...] = require_skills(skills)
        """Skills folded into the system prompt."""
        self.name = agent_name(name, saved)
        """The agent's name, carried on its results."""
        self.max_turns = max_turns
        """Model turns one run may take."""
        self.output_retries = output_retries
        """How many times an invalid structured answer is sent back for another try."""
        self.on_tool_call = on_tool_call
        """Called with each :class:`ToolCall` before it runs."""
        self.on_tool_result = on_tool_result
        """Called with each :class:`ToolCallRecord` once its call has finished."""
        self.last_result: RunResult[Any] | None = None
        """The most recent run's result, including failed and cancelled runs."""
        self._allowed: frozenset[str] | None = None
        if allowed_tools is not None:
            skill_tools = (t.name for s in self.skills for t in s.tools)
            self._allowed = frozenset((*allowed_tools, *skill_tools))
        self._base_prompt = "\n\n".join(
            part for part in (instruction.strip(), render_skills(self.skills)) if part
        )
        self._conversation = Conversation(saved)
        self._lock: asyncio.Lock | None = None
        self._lock_loop: asyncio.AbstractEventLoop | None = None
        self._runs_in_flight = 0
        self._guard = threading.Lock()
        # Agents whose lock a run this agent's run is part of waits for (one entry
        # per wait): what deadlock detection follows.
        self._blocked_on: list[BaseAgent] = []

    # -- public surface -------------------------------------------------

    @property
    def messages(self) -> list[Message]:
        """The working context sent to the model (a copy)."""
        return list(self._conversation.working)

    @property
    def messages_full(self) -> list[Message]:
        """Every message ever added, never rewritten by compaction (a copy)."""
        return list(self._conversation.full)

    @property
    def memory(self) -> str | None:
        """The running summary of compacted context, if any compaction happened."""
        return self._conversation.memory

    @property
    def usage(self) -> Usage:
        """Tokens and requests over the agent's life, compaction included."""
        return self._conversation.usage

    @property
    def compactions(self) -> int:
        """How many times the working context has been compacted."""
        return self._conversation.compactions

    def system_prompt(self, output_type: Any = None) -> str:
        """The system prompt as the model sees it now (memory included)."""
        spec = OutputSpec(output_type) if output_type is not None else None
        return system_text(self._base_prompt, spec, self._conversation.memory)

    def state(self) -> dict[str, Any]:
        """A JSON-serialisable, versioned snapshot; pass it back as ``state=`` to resume."""
        return self._conversation.snapshot(self.name).model_dump(mode="json")

    async def compact(self) -> Compaction:
        """Fold the working context into :attr:`memory` now, as automatic compaction does.

        The same summariser (a request to the main provider) rewrites the
        memory from the old one and everything the model has acted on; what it
        has not acted on yet (a prompt left without an answer) stays verbatim.
        Unlike the automatic kind, it does not wait for the context to fill,
        and it folds even a small context. Returns a :class:`Compaction` saying
        what it did; its tokens count in :attr:`usage`, and
        :attr:`messages_full` keeps every message as always::

            done = await agent.compact()
            print(done.compacted, done.folded, done.memory)

        A run in progress is waited for; calling it from inside this agent's
        own run (a tool, a callback, an ``iter()`` block) is a :class:`UserError`.
        """
        chain = _RUNNING.get()
        if any(a is self for a in chain):
            raise UserError(
                f"agent {self.name!r} was asked to compact from inside its own run; "
                "compact between runs (the run compacts by itself when its context fills)"
            )
        lock = self._enter()
        try:
            async with self._waiting(lock, chain):
                return await self._conversation.fold(self.provider)
        finally:
            with self._guard:
                self._runs_in_flight -= 1

    async def visible_tools(self) -> list[ToolSchema]:
        """The tools the model is offered: the client's, narrowed by ``allowed_tools``."""
        tools = await self.tool_client.list_tools()
        names = {t.name for t in tools}
        wanted = self._allowed or {t.name for s in self.skills for t in s.tools}
        missing = sorted(wanted - names)
        if missing:
            raise UserError(
                f"tools not provided by the agent's tool client: {', '.join(missing)} "
                "(register skills' tools with the client too)"
            )
        if self._allowed is None:
            return tools
        return [t for t in tools if t.name in self._allowed]

    @overload
    async def run(
        self,
        prompt: str | Message,
        on_chunk: ChunkCallback | None = None,
        *,
        output_type: None = None,
    ) -> RunResult[None]: ...

    @overload
    async def run(
        self,
        prompt: str | Message,
        on_chunk: ChunkCallback | None = None,
        *,
        output_type: type[T],
    ) -> RunResult[T]: ...

    @overload
    async def run(
        self,
        prompt: str | Message,
        on_chunk: ChunkCallback | None = None,
        *,
        output_type: Mapping[str, Any],
    ) -> RunResult[Any]: ...

    async def run(
        self,
        prompt: str | Message,
        on_chunk: ChunkCallback | None = None,
        *,
        output_type: Any = None,
    ) -> RunResult[Any]:
        """Run the loop on ``prompt`` until the model answers; return the :class:`RunResult`.

        ``on_chunk`` (sync or async) receives the live :class:`StreamChunk`
        sequence. ``output_type`` (a pydantic model, any type pydantic
        validates, or a JSON schema dict) asks for a structured answer, put on
        ``result.output_value`` and typed accordingly. A call made while
        another run is in progress waits for it, so prompts are taken in call
        order; a call from inside this agent's own run (from a tool, a
        callback, or a task either of them started) is refused with
        :class:`UserError`, since it could only wait for itself.
        """
        message, spec = self._prepare(prompt, output_type)
        return await self._execute(message, on_chunk, spec, RunResult(agent_name=self.name))

    def iter(
        self,
        prompt: str | Message,
        on_chunk: ChunkCallback | None = None,
        *,
        output_type: Any = None,
    ) -> AgentRun:
        """Drive a run turn by turn: ``async with agent.iter(prompt) as run``.

        Iterating the run takes one model turn (and its tool calls) per step and
        yields a :class:`Turn`; between turns the caller may :meth:`AgentRun.add`
        a message or stop early (the run then ends ``cancelled``). Arguments are
        those of :meth:`run`; ``run.result`` is the :class:`RunResult`::

            async with agent.iter("Plan the trip") as run:
                async for turn in run:
                    print(turn.index, turn.message.text)
            print(run.result.reply)
        """
        message, spec = self._prepare(prompt, output_type)
        return AgentRun(self._running(on_chunk, spec, RunResult(agent_name=self.name)), message)

    def _prepare(self, prompt: object, output_type: Any) -> tuple[Message, OutputSpec | None]:
        """Check a run's arguments before anything happens."""
        if not isinstance(prompt, str | Message):
            raise UserError(
                f"a prompt must be a str or a Message, not {type(prompt).__name__}; "
                "build images into one with Message.user(text, ImagePart(...))"
            )
        if any(a is self for a in _RUNNING.get()):
            raise UserError(
                f"agent {self.name!r} was asked to run from inside its own run (a tool or "
                "callback); that would wait for itself forever. Use another agent."
            )
        if not self.provider.capabilities.supports_tools:
            raise UserError(
                f"provider {self.provider.name!r} does not support native tool calling, "
                "which agents require; pick a model that does (or set supports_tools=True "
                "if it really can)"
            )
        spec = OutputSpec(output_type) if output_type is not None else None
        message = prompt if isinstance(prompt, Message) else Message.user(prompt)
        if message.role != "user":
            raise UserError(f"a prompt must be a user message, not {message.role!r}")
        return message, spec

    async def _execute(
        self,
        message: Message,
        on_chunk: ChunkCallback | None,
        spec: OutputSpec | None,
        result: RunResult[Any],
        *,
        fresh: bool = False,
    ) -> RunResult[Any]:
        """Queue behind any run in progress, then run the loop, filling in ``result``.

        A ``fresh`` run starts from an empty conversation (instruction and skills
        only) and leaves the agent's own untouched, its tokens counted in
        :attr:`usage` all the same.
        """
        async with self._running(on_chunk, spec, result, fresh=fresh) as run:
            return await run.execute(message)

    @contextlib.asynccontextmanager
    async def _running(
        self,
        on_chunk: ChunkCallback | None,
        spec: OutputSpec | None,
        result: RunResult[Any],
        *,
        fresh: bool = False,
    ) -> AsyncIterator[Run]:
        """Hold this agent's turn (queueing behind a run in progress) for one :class:`Run`."""
        chain = _RUNNING.get()
        lock = self._enter()
        try:
            async with self._waiting(lock, chain):
                token = _RUNNING.set((*chain, self))
                conversation = Conversation(AgentState()) if fresh else self._conversation
                try:
                    yield Run(
                        self,
                        conversation,
                        base_prompt=self._base_prompt,
                        on_chunk=on_chunk,
                        spec=spec,
                        result=result,
                    )
                finally:
                    if fresh:
                        own = self._conversation
                        own.usage = own.usage + conversation.usage
                    # A run abandoned on a closed loop is closed later by the garbage
                    # collector, in another context, where the token cannot be reset.
                    with contextlib.suppress(ValueError):
                        _RUNNING.reset(token)
        finally:
            with self._guard:
                self._runs_in_flight -= 1

    @contextlib.asynccontextmanager
    async def _waiting(
        self, lock: asyncio.Lock, chain: tuple[BaseAgent, ...]
    ) -> AsyncIterator[None]:
        """Hold ``lock`` for the block, refusing a wait that could never end.

        Every run in ``chain`` (the callers, outermost first) cannot finish
        until this agent's lock is free. If this agent's own run is already
        waiting, directly or through the agents it waits for, for one of them,
        nobody would ever move on.
        """
        cycle = self._wait_cycle(chain)
        if cycle:
            caller = chain[-1]
            raise UserError(
                f"agent {caller.name!r} cannot wait for agent {self.name!r}, which is busy "
                f"waiting for {' -> '.join(repr(a.name) for a in cycle[1:])}: they would "
                "wait for each other forever. Ask one of them at a time."
            )
        for agent in chain:
            agent._blocked_on.append(self)
        try:
            await lock.acquire()
        finally:
            for agent in chain:
                agent._blocked_on.remove(self)
        try:
            yield
        finally:
            lock.release()

    def _wait_cycle(self, chain: tuple[BaseAgent, ...]) -> list[BaseAgent]:
        """The agents from this one to one of ``chain`` it waits for, if any (else [])."""
        if not chain:
            return []
        paths: list[list[BaseAgent]] = [[self]]
        seen = {id(self)}
        while paths:
            path = paths.pop()
            for waited in path[-1]._blocked_on:
                if any(waited is a for a in chain):
                    return [*path, waited]
                if id(waited) not in seen:
                    seen.add(id(waited))
                    paths.append([*path, waited])
        return []

    @overload
    def run_sync(
        self,
        prompt: str | Message,
        on_chunk: ChunkCallback | None = None,
        *,
        output_type: None = None,
    ) -> RunResult[None]: ...

    @overload
    def run_sync(
        self,
        prompt: str | Message,
        on_chunk: ChunkCallback | None = None,
        *,
        output_type: type[T],
    ) -> RunResult[T]: ...

    @overload
    def run_sync(
        self,
        prompt: str | Message,
        on_chunk: ChunkCallback | None = None,
        *,
        output_type: Mapping[str, Any],
    ) -> RunResult[Any]: ...

    def run_sync(
        self,
        prompt: str | Message,
        on_chunk: ChunkCallback | None = None,
        *,
        output_type: Any = None,
    ) -> RunResult[Any]:
        """Blocking :meth:`run`, for scripts; refused inside a running event loop."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.run(prompt, on_chunk=on_chunk, output_type=output_type))
        raise UserError("run_sync() cannot be called from a running event loop; use `await run()`")

    @overload
    def run_stream(
        self, prompt: str | Message, *, output_type: None = None
    ) -> AgentStream[None]: ...

    @overload
    def run_stream(self, prompt: str | Message, *, output_type: type[T]) -> AgentStream[T]: ...

    @overload
    def run_stream(
        self, prompt: str | Message, *, output_type: Mapping[str, Any]
    ) -> AgentStream[Any]: ...

    def run_stream(self, prompt: str | Message, *, output_type: Any = None) -> AgentStream[Any]:
        """:meth:`run`, read as an async iterator of chunks instead of a callback.

        ::

            async with agent.run_stream("What time is it?") as stream:
                async for chunk in stream:
                    print(chunk.content, end="")
            print((await stream.result()).reply)
        """

        message, spec = self._prepare(prompt, output_type)
        result: RunResult[Any] = RunResult(agent_name=self.name)

        def start(on_chunk: ChunkCallback) -> Awaitable[RunResult[Any]]:
            return self._execute(message, on_chunk, spec, result)

        return AgentStream(start, partial=result)

    # -- working with other agents ---------------------------------------

    def as_tool(self, name: str | None = None, description: str | None = None) -> AgentTool:
        """This agent as a tool another agent's model can call with one argument, ``task``.

        ``name`` defaults to the agent's name, ``description`` to one built from
        its instruction. See :class:`AgentTool`::

            lead = SimpleAgent(provider=p, tools=[researcher.as_tool(), writer.as_tool()])
        """
        return AgentTool(self, name=name, description=description)

    async def delegate(
        self,
        *,
        to: BaseAgent,
        task: str,
        on_chunk: ChunkCallback | None = None,
        output_type: Any = None,
    ) -> RunResult[Any]:
        """Have agent ``to`` run ``task``; return its result, naming this agent as delegator.

        The result has ``delegated_by`` and ``duration`` (queueing included)
        set. Called inside a tool call, the worker's chunks reach the calling
        run's ``on_chunk`` unless ``on_chunk`` is given, and its result and
        tokens are recorded on that tool call: the one in progress, whichever
        agent's run made it (``delegated_by`` still names this agent). A failed
        run raises its error, as :meth:`run` does. Unlike ``delegate()``, a
        plain ``to.run()`` inside a tool is an independent run: neither recorded
        on the call nor counted into the calling run.
        """
        return await run_worker(
            self._worker(to),
            task,
            delegated_by=self.name,
            on_chunk=on_chunk,
            output_type=output_type,
        )

    def delegate_later(
        self,
        *,
        to: BaseAgent,
        task: str,
        on_chunk: ChunkCallback | None = None,
        output_type: Any = None,
    ) -> DelegationFuture[Any]:
        """Start :meth:`delegate` in the background and return its future at once.

        Await the future (or pass several to :func:`gather_delegations`) for the
        result, typed by ``output_type`` as in :meth:`run`; many delegations run
        concurrently::

            futures = [lead.delegate_later(to=a, task="..."), lead.delegate_later(to=b, task="...")]
            results = await gather_delegations(*futures)
        """
        return DelegationFuture(
            self._worker(to),
            task,
            delegated_by=self.name,
            on_chunk=on_chunk,
            output_type=output_type,
        )

    def _worker(self, to: object) -> BaseAgent:
        if not isinstance(to, BaseAgent):
            raise UserError(f"can only delegate to a heron agent, not {type(to).__name__}")
        if to is self:
            raise UserError(f"agent {self.name!r} cannot delegate to itself")
        return to

    # -- used by the loop -----------------------------------------------

    def _enter(self) -> asyncio.Lock:
        """Count a run in and return the lock that orders runs on this loop."""
        loop = asyncio.get_running_loop()
        with self._guard:
            if self._lock_loop is not None and self._lock_loop.is_closed():
                self._runs_in_flight = 0  # runs left pending on a closed loop will never end
            if self._runs_in_flight and self._lock_loop is not loop:
                raise UserError(
                    f"agent {self.name!r} is already running in another event loop or "
                    "thread; give each thread its own agent"
                )
            if self._lock is None or self._lock_loop is not loop:
                self._lock, self._lock_loop = asyncio.Lock(), loop
            self._runs_in_flight += 1
            return self._lock


def agent_name(name: str | None, saved: AgentState | None) -> str:
    """The name given, else the one a resumed agent was saved under, else ``"agent"``."""
    return name or (saved.name if saved is not None else None) or "agent"


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class AgentOptions(TypedDict, total=False):
    """The :class:`BaseAgent` options :class:`SimpleAgent` passes through unchanged."""

    name: str | None
    state: AgentState | Mapping[str, Any] | None
    max_turns: int
    output_retries: int
    on_tool_call: ToolCallHook | None
    on_tool_result: ToolResultHook | None


class SimpleAgent(BaseAgent):
    """An agent whose tools and skills run in this process.

    Takes the options of :class:`BaseAgent` (``name``, ``state``,
    ``max_turns``, ``output_retries``, ``on_tool_call``, ``on_tool_result``).
    Tools passed both directly and inside a skill are registered once;
    ``storage`` is the tools' key/value store (in memory by default: pass a
    persistent one for tool state that outlives the process)::

        agent = SimpleAgent(
            provider=provider,
            instruction="You are a helpful assistant.",
            tools=[get_current_time],
        )
        result = await agent.run("What time is it?")
    """

    def __init__(
        self,
        *,
        provider: ProvidersInput,
        instruction: str = "",
        tools: Sequence[Tool] = (),
        skills: Sequence[Skill] = (),
        storage: Storage | None = None,
        **options: Unpack[AgentOptions],
    ) -> None:
        tools, skills = tools or (), skills or ()
        state = options.get("state")
        saved = AgentState.load(state) if state is not None else None
        # The tools' environment follows the agent's identity, resumed ones included.
        env_id = agent_name(options.get("name"), saved)
        client = LocalToolClient(merge_tools(tools, skills), env_id=env_id, storage=storage)
        super().__init__(
            provider=provider,
            tool_client=client,
            instruction=instruction,
            skills=skills,
            **options,
        )
