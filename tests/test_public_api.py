"""The curated public surface: pinned names, exported errors, docstrings everywhere."""

from __future__ import annotations

import inspect
import types

import heron
import heron._core.errors
import heron.agents
import heron.api
import heron.client
import heron.mcp
import heron.providers
import heron.runtime
import heron.skills
import heron.testing
import heron.tools

PUBLIC_MODULES = [
    heron,
    heron.agents,
    heron.api,
    heron.client,
    heron.mcp,
    heron.providers,
    heron.runtime,
    heron.skills,
    heron.testing,
    heron.tools,
]

EXPECTED = {
    "AgentOptions", "AgentRun", "AgentState", "AgentStream", "AgentTool", "BaseAgent",
    "Capabilities", "ChatResponse", "ChunkCallback", "Compaction",
    "DelegationFuture", "FinishReason", "FunctionTool",
    "HeronError", "IdGenerator", "ImagePart", "LocalToolClient", "MemoryStorage", "Message",
    "Network", "OutputValidationError", "Part", "Pipeline", "Provider", "ProviderError",
    "ProviderMetadata", "Role",
    "Route", "Router", "RunError", "RunResult", "ScriptExhaustedError", "SimpleAgent", "Skill",
    "StopReason", "Storage", "StreamChunk", "TeamResult", "TeamStopReason", "TextPart", "Tool",
    "ToolCall", "ToolCallHook", "ToolCallRecord", "ToolClient", "ToolContext", "ToolError",
    "ToolResult", "ToolResultHook", "ToolSchema", "Turn", "Usage", "UserError",
    "gather_delegations",
    "resolve_think_effort", "think_budget", "tool", "__version__",
}  # fmt: skip


def test_root_exports_exactly_the_pinned_names() -> None:
    assert set(heron.__all__) == EXPECTED


def isort_style(name: str) -> tuple[int, str]:
    """Constants, then classes, then everything else (ruff's RUF022 order)."""
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


def test_every_all_is_sorted_and_resolves() -> None:
    for module in PUBLIC_MODULES:
        assert module.__all__ == sorted(module.__all__, key=isort_style), module.__name__
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.{name}"


def test_no_public_name_is_left_out_of_all() -> None:
    for module in PUBLIC_MODULES:
        public = {
            n
            for n, v in vars(module).items()
            if not n.startswith("_")
            and not isinstance(v, types.ModuleType)
            and getattr(v, "__module__", module.__name__).startswith("heron")
            and n not in {"annotations", "version", "PackageNotFoundError"}
        }
        assert public <= set(module.__all__), module.__name__


def test_every_exception_is_exported_from_the_root() -> None:
    errors = {
        name
        for name, value in vars(heron._core.errors).items()
        if inspect.isclass(value) and issubclass(value, Exception)
    }
    assert errors <= set(heron.__all__)
    assert all(issubclass(getattr(heron, e), heron.HeronError) for e in errors)


def test_public_classes_and_functions_have_docstrings() -> None:
    for module in PUBLIC_MODULES:
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isclass(value) or inspect.isfunction(value):
                assert inspect.getdoc(value), f"{module.__name__}.{name} has no docstring"
                if inspect.isclass(value):
                    for attr, member in vars(value).items():
                        if attr.startswith("_") or not callable(member):
                            continue
                        assert inspect.getdoc(member), f"{name}.{attr} has no docstring"


def test_version_is_a_string() -> None:
    assert isinstance(heron.__version__, str) and heron.__version__.count(".") >= 2
