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

from importlib import metadata as _metadata

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

try:
    __version__ = _metadata.version("heron")
except _metadata.PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"

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
