"""Agents: the run loop, memory compaction, saved state, run results and teams."""

import typing

from .._core.lazy import attach as _attach

if typing.TYPE_CHECKING:
    from .._core.result import ProviderMetadata, RunResult, StopReason, ToolCallRecord
    from ._agent import AgentOptions, BaseAgent, SimpleAgent
    from ._compaction import Compaction
    from ._delegation import AgentTool, DelegationFuture, gather_delegations
    from ._iter import AgentRun, Turn
    from ._limits import DEFAULT_MAX_TURNS
    from ._network import DEFAULT_MAX_STEPS, DONE, Network, Route, Router
    from ._pipeline import Pipeline, TeamResult, TeamStopReason
    from ._roles import (
        AgentProviders,
        ImageDescriber,
        ProviderRole,
        ProvidersInput,
        resolve_providers,
    )
    from ._run import ToolCallHook, ToolResultHook
    from ._state import STATE_VERSION, AgentState
    from ._stream import AgentStream
    from ._team import current_tool_call

if not typing.TYPE_CHECKING:  # type checkers see the imports above, and no catch-all
    __getattr__, __dir__ = _attach(
        __name__,
        {
            ".._core.result": ("ProviderMetadata", "RunResult", "StopReason", "ToolCallRecord"),
            "._agent": ("AgentOptions", "BaseAgent", "SimpleAgent"),
            "._compaction": ("Compaction",),
            "._delegation": ("AgentTool", "DelegationFuture", "gather_delegations"),
            "._iter": ("AgentRun", "Turn"),
            "._limits": ("DEFAULT_MAX_TURNS",),
            "._network": ("DEFAULT_MAX_STEPS", "DONE", "Network", "Route", "Router"),
            "._pipeline": ("Pipeline", "TeamResult", "TeamStopReason"),
            "._roles": (
                "AgentProviders",
                "ImageDescriber",
                "ProviderRole",
                "ProvidersInput",
                "resolve_providers",
            ),
            "._run": ("ToolCallHook", "ToolResultHook"),
            "._state": ("STATE_VERSION", "AgentState"),
            "._stream": ("AgentStream",),
            "._team": ("current_tool_call",),
        },
    )

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
    "current_tool_call",
    "gather_delegations",
    "resolve_providers",
]
