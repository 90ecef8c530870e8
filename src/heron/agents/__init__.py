"""Agents: the run loop, memory compaction, saved state, run results and teams."""

from .._core.result import ProviderMetadata, RunResult, StopReason, ToolCallRecord
from ._agent import DEFAULT_MAX_TURNS, AgentOptions, BaseAgent, SimpleAgent
from ._compaction import Compaction
from ._delegation import AgentTool, DelegationFuture, gather_delegations
from ._iter import AgentRun, Turn
from ._network import DEFAULT_MAX_STEPS, DONE, Network, Route, Router
from ._pipeline import Pipeline, TeamResult, TeamStopReason
from ._roles import AgentProviders, ImageDescriber, ProviderRole, ProvidersInput, resolve_providers
from ._run import ToolCallHook, ToolResultHook
from ._state import STATE_VERSION, AgentState
from ._stream import AgentStream

__all__ = [
    "DEFAULT_MAX_STEPS",
    "DEFAULT_MAX_TURNS",
    "DONE",
    "STATE_VERSION",
    "AgentOptions",
    "AgentProviders",
    "AgentRun",
    "AgentState",
    "AgentStream",
    "AgentTool",
    "BaseAgent",
    "Compaction",
    "DelegationFuture",
    "ImageDescriber",
    "Network",
    "Pipeline",
    "ProviderMetadata",
    "ProviderRole",
    "ProvidersInput",
    "Route",
    "Router",
    "RunResult",
    "SimpleAgent",
    "StopReason",
    "TeamResult",
    "TeamStopReason",
    "ToolCallHook",
    "ToolCallRecord",
    "ToolResultHook",
    "Turn",
    "gather_delegations",
    "resolve_providers",
]
