"""Agents: the run loop, memory compaction, saved state and run results."""

from ._agent import DEFAULT_MAX_TURNS, BaseAgent, SimpleAgent
from ._result import RunResult, StopReason, ToolCallRecord
from ._state import STATE_VERSION, AgentState
from ._stream import AgentStream

__all__ = [
    "DEFAULT_MAX_TURNS",
    "STATE_VERSION",
    "AgentState",
    "AgentStream",
    "BaseAgent",
    "RunResult",
    "SimpleAgent",
    "StopReason",
    "ToolCallRecord",
]
