"""An agent's saved state: a versioned, JSON-serialisable snapshot."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .._core import Message, Usage, UserError
from .._core.problems import pydantic_problems
from .._core.tokens import estimate_tokens

__all__ = ["STATE_VERSION", "AgentState"]

STATE_VERSION = 1
"""Schema version written by this release of Heron."""


class AgentState(BaseModel):
    """Everything needed to resume an agent: what ``agent.state()`` returns as a dict.

    ``messages_full`` is every message ever added (never rewritten);
    ``messages`` is the working context sent to the model, which restarts from
    ``memory`` after each compaction::

        Path("state.json").write_text(json.dumps(agent.state()))
        # later, in another process:
        agent = SimpleAgent(provider=provider, tools=tools,
                            state=json.loads(Path("state.json").read_text()))
    """

    model_config = ConfigDict(extra="forbid")

    version: int = Field(default=STATE_VERSION, description="State schema version.")
    name: str | None = Field(default=None, description="The agent's name when saved.")
    messages_full: list[dict[str, Any]] = Field(
        default_factory=list, description="Every message ever added, as Message.to_dict() data."
    )
    messages: list[dict[str, Any]] = Field(
        default_factory=list, description="The working context sent to the model."
    )
    memory: str | None = Field(default=None, description="Running summary of compacted context.")
    input_tokens: int = Field(default=0, ge=0, description="Tokens read over the agent's life.")
    output_tokens: int = Field(default=0, ge=0, description="Tokens generated over its life.")
    requests: int = Field(default=0, ge=0, description="Provider requests over its life.")
    context_tokens: int = Field(default=0, ge=0, description="Size of the working context.")
    compactions: int = Field(default=0, ge=0, description="Compactions performed.")

    @classmethod
    def load(cls, data: AgentState | Mapping[str, Any]) -> AgentState:
        """Validate saved state, refusing versions this release cannot read."""
        if isinstance(data, AgentState):
            data = data.model_dump()
        if not isinstance(data, Mapping):
            raise UserError(
                f"state must be the dict agent.state() returned, not {type(data).__name__}"
                + (" (json.loads it first)" if isinstance(data, str | bytes) else "")
            )
        version = data.get("version")
        if version is None:
            raise UserError("state has no 'version': pass the dict agent.state() returned")
        if version != STATE_VERSION:
            raise UserError(
                f"cannot resume agent state of version {version!r}; "
                f"this Heron reads version {STATE_VERSION}"
            )
        try:
            state = cls.model_validate(data)
        except ValidationError as exc:
            raise UserError(f"invalid agent state: {'; '.join(pydantic_problems(exc))}") from None
        for field in ("messages_full", "messages"):
            for i, raw in enumerate(getattr(state, field)):
                try:
                    Message.from_dict(raw)
                except (KeyError, ValueError, TypeError, AttributeError) as exc:
                    reason = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
                    raise UserError(f"invalid agent state: {field}[{i}]: {reason}") from None
        return state

    def full_messages(self) -> list[Message]:
        """``messages_full`` as :class:`Message` values."""
        return [Message.from_dict(m) for m in self.messages_full]

    def working_messages(self) -> list[Message]:
        """``messages`` as :class:`Message` values."""
        return [Message.from_dict(m) for m in self.messages]

    @property
    def usage(self) -> Usage:
        """The lifetime token counters."""
        return Usage(
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            requests=self.requests,
        )

    def with_memory(self, memory: str, usage: Usage | None = None) -> AgentState:
        """This state compacted into ``memory`` (a summary written outside the agent).

        The working context restarts from the memory alone, as after a compaction;
        ``messages_full`` is kept, and ``usage`` (the summarising request) is counted.
        """
        spent = self.usage + (usage or Usage())
        return self.model_copy(
            update={
                "memory": memory,
                "messages": [],
                "context_tokens": estimate_tokens(memory),
                "compactions": self.compactions + 1,
                "input_tokens": spent.input_tokens,
                "output_tokens": spent.output_tokens,
                "requests": spent.requests,
            }
        )
