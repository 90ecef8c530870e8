"""Agents: the run loop, memory compaction, saved state and run results."""

from .._core.result import RunResult, StopReason, ToolCallRecord
from ._agent import DEFAULT_MAX_TURNS, AgentOptions, BaseAgent, SimpleAgent
from ._roles import AgentProviders, ImageDescriber, ProviderRole, ProvidersInput, resolve_providers
from ._run import ToolCallHook, ToolResultHook
from ._state import STATE_VERSION, AgentState
from ._stream import AgentStream

__all__ = [
    "DEFAULT_MAX_TURNS",
    "STATE_VERSION",
    "AgentOptions",
    "AgentProviders",
    "AgentState",
    "AgentStream",
    "BaseAgent",
    "ImageDescriber",
    "ProviderRole",
    "ProvidersInput",
    "RunResult",
    "SimpleAgent",
    "StopReason",
    "ToolCallHook",
    "ToolCallRecord",
    "ToolResultHook",
    "resolve_providers",
]
