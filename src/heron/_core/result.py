"""The record of one agent run: reply, tool calls, tokens, timing, identity."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Generic, Literal, TypeAlias

from pydantic_core import to_jsonable_python
from typing_extensions import TypeVar

from .errors import UserError
from .messages import Message
from .responses import ChatResponse

__all__ = ["OutputT", "ProviderMetadata", "RunResult", "StopReason", "ToolCallRecord"]

OutputT = TypeVar("OutputT", default=Any)
"""The type of a run's structured output (``None`` when none was asked for)."""

StopReason: TypeAlias = Literal[
    "end_turn", "max_tokens", "tool_stop", "max_turns", "cancelled", "error"
]
"""Why a run ended: the model answered, its answer was cut off by its token limit,
a stop tool ran, the turn limit was reached, the run was cancelled, or it failed."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallRecord:
    """One tool call made during a run, with its result."""

    id: str
    """The call's id, as the model made it."""
    name: str
    """The tool called."""
    arguments: dict[str, Any]
    """The arguments the model passed."""
    result: str = ""
    """The result's text, as the model saw it."""
    is_error: bool = False
    """Whether the call failed."""
    duration: float | None = None
    """Seconds the call took."""
    runs: tuple[RunResult[Any], ...] = ()
    """Other agents' runs made by this call (``as_tool()`` workers, delegations), in the
    order they started."""

    def __post_init__(self) -> None:
        for name in ("id", "name"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise UserError(f"ToolCallRecord {name} must be a str, not {type(value).__name__}")
        if not isinstance(self.arguments, dict):
            raise UserError(
                f"ToolCallRecord arguments must be a dict, not {type(self.arguments).__name__}"
            )
        if not isinstance(self.result, str):
            raise UserError(
                f"ToolCallRecord result must be a str, not {type(self.result).__name__}"
            )
        if self.duration is not None and not _is_number(self.duration):
            raise UserError(
                f"ToolCallRecord duration must be seconds or None, not {self.duration!r}"
            )
        runs = self.runs
        if not isinstance(runs, tuple) or not all(isinstance(r, RunResult) for r in runs):
            raise UserError("ToolCallRecord runs must be a tuple of RunResult")

    def to_dict(self, *, messages: bool = False) -> dict[str, Any]:
        """JSON-ready data; ``is_error``, ``duration`` and ``runs`` only when set.

        ``runs`` are exported with :meth:`RunResult.export`, or with
        :meth:`RunResult.to_dict` (their messages too) when ``messages`` is true.
        """
        return self._data(lambda r: r.to_dict() if messages else r.export())

    def _data(self, run: Callable[[RunResult[Any]], dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "arguments": self.arguments,
            "result": self.result,
        }
        if self.is_error:
            out["is_error"] = True
        if self.duration is not None:
            out["duration"] = round(self.duration, 6)
        if self.runs:
            out["runs"] = [run(r) for r in self.runs]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolCallRecord:
        """Rebuild a record from :meth:`to_dict` output."""
        return cls(
            id=str(data["id"]),
            name=str(data["name"]),
            arguments=dict(data.get("arguments", {})),
            result=str(data.get("result", "")),
            is_error=bool(data.get("is_error", False)),
            duration=data.get("duration"),
            runs=tuple(RunResult.from_dict(r) for r in data.get("runs", ())),
        )


_E = TypeVar("_E")


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _entries(
    name: str, value: object, kind: type[_E], build: Callable[[Mapping[str, Any]], _E]
) -> list[_E]:
    """``value`` as a list of ``kind``, dicts rebuilt with ``build``; else a :class:`UserError`.

    A list whose entries are all of ``kind`` is kept as it is (not copied).
    """
    wanted = f"a list of {kind.__name__} (or their to_dict() data)"
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        hint = " such as [Message.assistant(text)]" if kind is Message else ""
        raise UserError(f"RunResult {name} must be {wanted}{hint}, not {type(value).__name__}")
    entries = list(value)
    if isinstance(value, list) and all(isinstance(e, kind) for e in entries):
        return value
    for i, entry in enumerate(entries):
        if isinstance(entry, kind):
            continue
        if not isinstance(entry, Mapping):
            raise UserError(
                f"RunResult {name}[{i}] must be a {kind.__name__} or its to_dict() data, "
                f"not {type(entry).__name__}"
            )
        try:
            entries[i] = build(entry)
        except UserError as exc:
            raise UserError(
                f"RunResult {name}[{i}] is not a valid {kind.__name__}: {exc}"
            ) from None
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            reason = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
            raise UserError(
                f"RunResult {name}[{i}] is not a valid {kind.__name__}: {reason}"
            ) from None
    return entries


@dataclass(frozen=True, kw_only=True, slots=True)
class ProviderMetadata:
    """What the provider said about one model turn besides its answer (the seed's ``raw``).

    Kept on :attr:`RunResult.provider_metadata` for turns whose provider gave
    any of it; ``None`` fields were not given.
    """

    turn: int
    """The model turn it belongs to, counting from 1."""
    request_id: str | None = None
    """The vendor's id of the HTTP request, to quote to its support."""
    response_id: str | None = None
    """The vendor's id of the response."""
    finish_reason: str | None = None
    """The vendor's own stop reason, as sent (``RunResult.stop_reason`` is Heron's)."""
    cached_input_tokens: int | None = None
    """Input tokens read from the vendor's prompt cache."""
    cache_write_tokens: int | None = None
    """Input tokens written to the vendor's prompt cache."""

    def __post_init__(self) -> None:
        if isinstance(self.turn, bool) or not isinstance(self.turn, int) or self.turn < 1:
            raise UserError(f"ProviderMetadata turn must be a whole number >= 1, not {self.turn!r}")

    @classmethod
    def of(cls, turn: int, response: ChatResponse) -> ProviderMetadata | None:
        """The metadata of ``response`` as turn ``turn``, or ``None`` when it carries none."""
        # getattr: a response pickled by an older Heron (a daemon's recorded turn,
        # replayed after an upgrade) lacks these slots altogether.
        fields = ("request_id", "response_id", "finish_reason")
        counts = ("cached_input_tokens", "cache_write_tokens")
        found = cls(
            turn=turn,
            **{name: getattr(response, name, None) for name in (*fields, *counts)},
        )
        return found if len(found.to_dict()) > 1 else None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data, fields not given left out."""
        data = {
            "turn": self.turn,
            "request_id": self.request_id,
            "response_id": self.response_id,
            "finish_reason": self.finish_reason,
            "cached_input_tokens": self.cached_input_tokens,
            "cache_write_tokens": self.cache_write_tokens,
        }
        return {k: v for k, v in data.items() if v is not None}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProviderMetadata:
        """Rebuild from :meth:`to_dict` output."""
        return cls(
            turn=int(data["turn"]),
            request_id=data.get("request_id"),
            response_id=data.get("response_id"),
            finish_reason=data.get("finish_reason"),
            cached_input_tokens=data.get("cached_input_tokens"),
            cache_write_tokens=data.get("cache_write_tokens"),
        )


# A typed stand-in for "no structured output", valid for any OutputT.
_NO_OUTPUT: Any = None


def _now() -> datetime:
    return datetime.now(UTC)


def _new_id() -> str:
    return str(uuid.uuid4())


@dataclass(kw_only=True, slots=True)
class RunResult(Generic[OutputT]):
    """What one ``agent.run()`` produced.

    ``reply`` is the final answer's text; ``tool_calls`` every call made during
    the run with its result; ``input_tokens`` / ``output_tokens`` every token
    spent (memory compaction included); ``stop_reason`` why it ended::

        result = await agent.run("What time is it?")
        print(result.reply, result.stop_reason, result.input_tokens)

    Runs of other agents made by a tool call (a worker from ``as_tool()``, a
    ``delegate()`` inside a tool) are kept on that call's record, and their
    tokens are counted into this run's: ``own_input_tokens`` is what this
    agent's own model turns read, :meth:`walk` visits the whole tree and
    :meth:`tokens_by_agent` splits the total by agent. A plain ``other.run()``
    inside a tool is an independent run: it is not recorded or counted here.
    """

    agent_name: str
    """Name of the agent that produced the result."""
    output: list[Message] = field(default_factory=list)
    """The final assistant answer as a one-element list, or empty when there was none."""
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    """Every tool call of the run, in the order the model made them."""
    input_tokens: int = 0
    """Tokens read by providers during the run, sub-runs (``runs`` of tool calls) included."""
    output_tokens: int = 0
    """Tokens generated during the run, sub-runs included."""
    duration: float = 0.0
    """Wall-clock seconds the run took (for a delegation, from the request to the answer)."""
    delegated_by: str | None = None
    """Name of the agent that delegated this run, if any."""
    provider: str | None = None
    """Name of the provider behind the agent's model turns (``Provider.name``)."""
    model: str | None = None
    """The model behind them (``Provider.model``), when the provider says."""
    id: str = field(default_factory=_new_id)
    """Unique id of this run (UUID4)."""
    created_at: datetime = field(default_factory=_now)
    """When the run started (UTC)."""
    stop_reason: StopReason | None = None
    """Why the run ended."""
    turns: int = 0
    """Model turns taken."""
    output_value: OutputT = _NO_OUTPUT
    """The validated structured output, typed by ``output_type`` (``None`` without one)."""
    error: str | None = None
    """What went wrong, when ``stop_reason`` is ``"error"``."""
    messages: list[Message] = field(default_factory=list)
    """Every message this run added to the conversation."""
    provider_metadata: list[ProviderMetadata] = field(default_factory=list)
    """Per model turn, what the provider said besides its answer (request ids, the
    vendor's finish reason, cached tokens), for the turns whose provider gave any."""

    def __post_init__(self) -> None:
        # Checked now: a bad entry would otherwise surface much later, in export()
        # or checksum, far from the code that made it.
        if not isinstance(self.agent_name, str):
            raise UserError(
                f"RunResult agent_name must be a str, not {type(self.agent_name).__name__}"
            )
        for name in ("input_tokens", "output_tokens", "turns"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise UserError(f"RunResult {name} must be an int, not {value!r}")
        if not _is_number(self.duration):
            raise UserError(f"RunResult duration must be seconds, not {self.duration!r}")
        if not isinstance(self.created_at, datetime):
            raise UserError(
                f"RunResult created_at must be a datetime, not {type(self.created_at).__name__}"
            )
        self.output = _entries("output", self.output, Message, Message.from_dict)
        self.tool_calls = _entries(
            "tool_calls", self.tool_calls, ToolCallRecord, ToolCallRecord.from_dict
        )
        self.messages = _entries("messages", self.messages, Message, Message.from_dict)
        self.provider_metadata = _entries(
            "provider_metadata",
            self.provider_metadata,
            ProviderMetadata,
            ProviderMetadata.from_dict,
        )

    @property
    def reply(self) -> str:
        """Text of the final answer ("" when there was none)."""
        return self.output[-1].text if self.output else ""

    @property
    def last_text_content(self) -> str:
        """Alias of :attr:`reply`."""
        return self.reply

    @property
    def has_tool_calls(self) -> bool:
        """Whether any tool was called during the run."""
        return bool(self.tool_calls)

    @property
    def stopped(self) -> bool:
        """Whether the run ended naturally: the model answered or a stop tool ran."""
        return self.stop_reason in ("end_turn", "tool_stop")

    @property
    def sub_runs(self) -> list[RunResult[Any]]:
        """The runs of other agents made by this run's tool calls, in call order."""
        return [r for c in self.tool_calls for r in c.runs]

    @property
    def own_input_tokens(self) -> int:
        """Tokens this agent's own model turns read: ``input_tokens`` less the sub-runs'."""
        return self.input_tokens - sum(r.input_tokens for r in self.sub_runs)

    @property
    def own_output_tokens(self) -> int:
        """Tokens this agent's own model turns generated."""
        return self.output_tokens - sum(r.output_tokens for r in self.sub_runs)

    def walk(self) -> Iterator[RunResult[Any]]:
        """This run, then every sub-run at any depth, depth first in call order."""
        yield self
        for sub in self.sub_runs:
            yield from sub.walk()

    def tokens_by_agent(self) -> dict[str, tuple[int, int]]:
        """``{agent_name: (input_tokens, output_tokens)}`` spent by each agent's own turns.

        The values add up to this run's ``input_tokens`` and ``output_tokens``
        exactly. Agents sharing a name share an entry (a run warns when two
        different agents in its tree share one); each run's ``provider`` and
        ``model`` say who did the work.
        """
        totals: dict[str, tuple[int, int]] = {}
        for run in self.walk():
            seen_in, seen_out = totals.get(run.agent_name, (0, 0))
            totals[run.agent_name] = (
                seen_in + run.own_input_tokens,
                seen_out + run.own_output_tokens,
            )
        return totals

    @property
    def checksum(self) -> str:
        """SHA-256 of the output, the tool calls and ``created_at`` (integer epoch).

        A content fingerprint for deduplicating saved results (two runs that
        answered the same with the same calls in the same second match, whoever
        ran them). A sub-run enters its tool call as its own checksum, so a
        change to any output or call at any depth changes the top-level one.
        """
        payload = {
            "output": [m.to_dict() for m in self.output],
            "tool_calls": [c._data(lambda r: {"checksum": r.checksum}) for c in self.tool_calls],
            "created_at": int(self.created_at.timestamp()),
        }
        blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def export(self) -> dict[str, Any]:
        """A compact dict for persistence: no ``None`` values and no zero token counts."""
        data = self._data(lambda r: r.export())
        data["checksum"] = self.checksum
        return data

    def _data(self, run: Callable[[RunResult[Any]], dict[str, Any]]) -> dict[str, Any]:
        """The exported fields, each sub-run of a tool call written by ``run``."""
        data: dict[str, Any] = {
            "agent_name": self.agent_name,
            "delegated_by": self.delegated_by,
            "provider": self.provider,
            "model": self.model,
            "output": [m.to_dict() for m in self.output],
            "tool_calls": [c._data(run) for c in self.tool_calls],
            "created_at": self.created_at.isoformat(),
            "id": self.id,
            "stop_reason": self.stop_reason,
            "duration": round(self.duration, 6),
            "turns": self.turns or None,
            "input_tokens": self.input_tokens or None,
            "output_tokens": self.output_tokens or None,
            "output_value": to_jsonable_python(self.output_value),
            "error": self.error,
            "provider_metadata": [m.to_dict() for m in self.provider_metadata] or None,
        }
        return {k: v for k, v in data.items() if v is not None}

    def to_dict(self) -> dict[str, Any]:
        """:meth:`export` plus the ``messages`` of this run and of its sub-runs."""
        return {
            **self.export(),
            "tool_calls": [c.to_dict(messages=True) for c in self.tool_calls],
            "messages": [m.to_dict() for m in self.messages],
        }

    def to_json(self, *, messages: bool = False, **kwargs: Any) -> str:
        """:meth:`export` (or, with ``messages=True``, :meth:`to_dict`) as a JSON string.

        ``kwargs`` go to :func:`json.dumps`.
        """
        return json.dumps(self.to_dict() if messages else self.export(), **kwargs)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunResult[Any]:
        """Rebuild a result from :meth:`export` or :meth:`to_dict` output.

        Missing keys take their defaults. A ``checksum`` that does not match the
        rebuilt result raises :class:`ValueError`: the data was altered.
        """
        created = data.get("created_at")
        result: RunResult[Any] = RunResult(
            agent_name=str(data["agent_name"]),
            output=[Message.from_dict(m) for m in data.get("output", ())],
            tool_calls=[ToolCallRecord.from_dict(c) for c in data.get("tool_calls", ())],
            input_tokens=int(data.get("input_tokens", 0)),
            output_tokens=int(data.get("output_tokens", 0)),
            duration=float(data.get("duration", 0.0)),
            delegated_by=data.get("delegated_by"),
            provider=data.get("provider"),
            model=data.get("model"),
            id=str(data.get("id") or _new_id()),
            created_at=datetime.fromisoformat(created) if created else _now(),
            stop_reason=data.get("stop_reason"),
            turns=int(data.get("turns", 0)),
            output_value=data.get("output_value"),
            error=data.get("error"),
            messages=[Message.from_dict(m) for m in data.get("messages", ())],
            provider_metadata=[
                ProviderMetadata.from_dict(m) for m in data.get("provider_metadata", ())
            ],
        )
        expected = data.get("checksum")
        if expected is not None and expected != result.checksum:
            raise ValueError("RunResult checksum does not match its data: it was altered")
        return result
