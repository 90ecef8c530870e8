"""Tools and skills: what an agent's model can call, and how to bundle it."""

# Names resolve on first use (PEP 562): importing one tool (or the daemon importing
# ``heron.tools._bash_process``) loads that module, not every tool of the catalog.
import sys
import types
import typing

from .._core.lazy import attach as _attach

if typing.TYPE_CHECKING:
    from ._client import LocalToolClient, ToolClient
    from ._context import IdGenerator, MemoryStorage, Storage, ToolContext
    from ._events import Interaction
    from ._result import ToolResult, to_tool_result
    from ._sandbox import Sandbox, contained, find_bwrap, sandbox_environment, sandbox_problem
    from ._skill import Skill, merge_tools, render_skills, require_skills
    from ._tool import FunctionTool, Tool, tool
    from .bash import (
        BashEvent,
        BashExited,
        BashInteraction,
        BashOutput,
        BashOutputSize,
        BashStarted,
        BashTools,
        bash_tools,
    )
    from .browser import (
        BrowserClicked,
        BrowserEvent,
        BrowserInteraction,
        BrowserNavigationFailed,
        BrowserNavigationFinished,
        BrowserNavigationStarted,
        BrowserTools,
        BrowserTyped,
        browser_tools,
    )
    from .catalog import Catalog, catalog
    from .fs import (
        filesystem_tools,
        fs_edit_file_tool,
        fs_glob_tool,
        fs_grep_tool,
        fs_list_directory_tool,
        fs_read_file_tool,
        fs_write_file_tool,
    )
    from .present import present_tools
    from .question_answer import Question, asked_questions, question_answer_tool
    from .time import get_current_time
    from .todo import TodoItem, TodoStatus, load_todos, todo_tools

if not typing.TYPE_CHECKING:  # type checkers see the imports above, and no catch-all
    __getattr__, __dir__ = _attach(
        __name__,
        {
            "._client": (
                "LocalToolClient",
                "ToolClient",
            ),
            "._context": (
                "IdGenerator",
                "MemoryStorage",
                "Storage",
                "ToolContext",
            ),
            "._events": ("Interaction",),
            "._result": (
                "ToolResult",
                "to_tool_result",
            ),
            "._sandbox": (
                "Sandbox",
                "contained",
                "find_bwrap",
                "sandbox_environment",
                "sandbox_problem",
            ),
            "._skill": (
                "Skill",
                "merge_tools",
                "render_skills",
                "require_skills",
            ),
            "._tool": (
                "FunctionTool",
                "Tool",
                "tool",
            ),
            ".bash": (
                "BashEvent",
                "BashExited",
                "BashInteraction",
                "BashOutput",
                "BashOutputSize",
                "BashStarted",
                "BashTools",
                "bash_tools",
            ),
            ".browser": (
                "BrowserClicked",
                "BrowserEvent",
                "BrowserInteraction",
                "BrowserNavigationFailed",
                "BrowserNavigationFinished",
                "BrowserNavigationStarted",
                "BrowserTools",
                "BrowserTyped",
                "browser_tools",
            ),
            ".catalog": (
                "Catalog",
                "catalog",
            ),
            ".fs": (
                "filesystem_tools",
                "fs_edit_file_tool",
                "fs_glob_tool",
                "fs_grep_tool",
                "fs_list_directory_tool",
                "fs_read_file_tool",
                "fs_write_file_tool",
            ),
            ".present": ("present_tools",),
            ".question_answer": (
                "Question",
                "asked_questions",
                "question_answer_tool",
            ),
            ".time": ("get_current_time",),
            ".todo": (
                "TodoItem",
                "TodoStatus",
                "load_todos",
                "todo_tools",
            ),
        },
    )


class _Package(types.ModuleType):
    """``heron.tools``, whose name ``catalog`` stays the function when the submodule of the
    same name is imported directly (the import system binds a submodule on its package)."""

    def __setattr__(self, name: str, value: object) -> None:
        if name == "catalog" and isinstance(value, types.ModuleType):
            value = value.catalog
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

__all__ = [
    "BashEvent",
    "BashExited",
    "BashInteraction",
    "BashOutput",
    "BashOutputSize",
    "BashStarted",
    "BashTools",
    "BrowserClicked",
    "BrowserEvent",
    "BrowserInteraction",
    "BrowserNavigationFailed",
    "BrowserNavigationFinished",
    "BrowserNavigationStarted",
    "BrowserTools",
    "BrowserTyped",
    "Catalog",
    "FunctionTool",
    "IdGenerator",
    "Interaction",
    "LocalToolClient",
    "MemoryStorage",
    "Question",
    "Sandbox",
    "Skill",
    "Storage",
    "TodoItem",
    "TodoStatus",
    "Tool",
    "ToolClient",
    "ToolContext",
    "ToolResult",
    "asked_questions",
    "bash_tools",
    "browser_tools",
    "catalog",
    "contained",
    "filesystem_tools",
    "find_bwrap",
    "fs_edit_file_tool",
    "fs_glob_tool",
    "fs_grep_tool",
    "fs_list_directory_tool",
    "fs_read_file_tool",
    "fs_write_file_tool",
    "get_current_time",
    "load_todos",
    "merge_tools",
    "present_tools",
    "question_answer_tool",
    "render_skills",
    "require_skills",
    "sandbox_environment",
    "sandbox_problem",
    "to_tool_result",
    "todo_tools",
    "tool",
]
