"""Heron: build AI agents and run them as durable, observable background jobs.

::

    from heron import SimpleAgent, tool
    from heron.testing import ScriptedProvider, call

    @tool
    def add(a: int, b: int) -> int:
        \"\"\"Add two integers.\"\"\"
        return a + b

    agent = SimpleAgent(provider=ScriptedProvider([call("add", a=2, b=3), "5"]), tools=[add])
    print(agent.run_sync("What is 2 + 3?").reply)
"""

# Names resolve on first use (PEP 562): ``import heron`` stays cheap for what needs one corner
# of the package (the client, the command line), and ``from heron import SimpleAgent`` loads
# the agent loop and what it uses, not the rest.
import importlib as _importlib
import typing as _typing

from ._core.version import __version__

if _typing.TYPE_CHECKING:
    from ._core import (
        Capabilities,
        ChatResponse,
        ChunkCallback,
        FinishReason,
        HeronError,
        ImagePart,
        Message,
        OutputValidationError,
        Part,
        ProviderError,
        Role,
        RunError,
        ScriptExhaustedError,
        StreamChunk,
        TextPart,
        ToolCall,
        ToolError,
        ToolSchema,
        Usage,
        UserError,
    )
    from .agents import (
        AgentOptions,
        AgentRun,
        AgentState,
        AgentStream,
        AgentTool,
        BaseAgent,
        Compaction,
        DelegationFuture,
        Network,
        Pipeline,
        ProviderMetadata,
        Route,
        Router,
        RunResult,
        SimpleAgent,
        StopReason,
        TeamResult,
        TeamStopReason,
        ToolCallHook,
        ToolCallRecord,
        ToolResultHook,
        Turn,
        gather_delegations,
    )
    from .providers import Provider, resolve_think_effort, think_budget
    from .tools import (
        FunctionTool,
        IdGenerator,
        LocalToolClient,
        MemoryStorage,
        Skill,
        Storage,
        Tool,
        ToolClient,
        ToolContext,
        ToolResult,
        tool,
    )

_SUBMODULES: dict[str, tuple[str, ...]] = {
    "._core": (
        "Capabilities", "ChatResponse", "ChunkCallback", "FinishReason", "HeronError",
        "ImagePart", "Message", "OutputValidationError", "Part", "ProviderError", "Role",
        "RunError", "ScriptExhaustedError", "StreamChunk", "TextPart", "ToolCall", "ToolError",
        "ToolSchema", "Usage", "UserError",
    ),
    ".agents": (
        "AgentOptions", "AgentRun", "AgentState", "AgentStream", "AgentTool", "BaseAgent",
        "Compaction", "DelegationFuture", "Network", "Pipeline", "ProviderMetadata", "Route",
        "Router", "RunResult", "SimpleAgent",
        "StopReason", "TeamResult", "TeamStopReason", "ToolCallHook", "ToolCallRecord",
        "ToolResultHook", "Turn", "gather_delegations",
    ),
    ".providers": ("Provider", "resolve_think_effort", "think_budget"),
    ".tools": (
        "FunctionTool", "IdGenerator", "LocalToolClient", "MemoryStorage", "Skill", "Storage",
        "Tool", "ToolClient", "ToolContext", "ToolResult", "tool",
    ),
}  # fmt: skip
_LAZY = {name: module for module, names in _SUBMODULES.items() for name in names}
# ``import heron`` used to load these as a side effect; ``heron.agents`` still works without
# importing it first.
_PACKAGES = frozenset(
    {"agents", "api", "cli", "client", "mcp", "providers", "runtime", "skills", "testing", "tools"}
)


# Hidden from type checkers, which see the imports above: `heron.Typo` stays an error there.
if not _typing.TYPE_CHECKING:

    def __getattr__(name: str) -> _typing.Any:
        if name in _PACKAGES:
            return _importlib.import_module(f".{name}", __name__)
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(_importlib.import_module(module, __name__), name)
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *_LAZY})


__all__ = [
    "AgentOptions",
    "AgentRun",
    "AgentState",
    "AgentStream",
    "AgentTool",
    "BaseAgent",
    "Capabilities",
    "ChatResponse",
    "ChunkCallback",
    "Compaction",
    "DelegationFuture",
    "FinishReason",
    "FunctionTool",
    "HeronError",
    "IdGenerator",
    "ImagePart",
    "LocalToolClient",
    "MemoryStorage",
    "Message",
    "Network",
    "OutputValidationError",
    "Part",
    "Pipeline",
    "Provider",
    "ProviderError",
    "ProviderMetadata",
    "Role",
    "Route",
    "Router",
    "RunError",
    "RunResult",
    "ScriptExhaustedError",
    "SimpleAgent",
    "Skill",
    "StopReason",
    "Storage",
    "StreamChunk",
    "TeamResult",
    "TeamStopReason",
    "TextPart",
    "Tool",
    "ToolCall",
    "ToolCallHook",
    "ToolCallRecord",
    "ToolClient",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "ToolResultHook",
    "ToolSchema",
    "Turn",
    "Usage",
    "UserError",
    "__version__",
    "gather_delegations",
    "resolve_think_effort",
    "think_budget",
    "tool",
]
